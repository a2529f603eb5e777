"""Read a plane truss from a JSON file into frozen, JAX-free data (``TrussData``).

JSON format (``scenarios/data/truss/von_mises.json``; SI units: m, N)::

    {"nodes": {"left": [-1.0, 0.0], "right": [1.0, 0.0], "apex": [0.0, 0.1]},
     "bars": {"bl": {"a": "left", "b": "apex", "EA": 1000.0}, ...},   # "L0" optional
     "supports": {"pin_l": {"node": "left", "fixed": [true, true]}, ...},  # "prescribed" optional
     "loads": {"P": {"node": "apex", "force": [0.0, -1.0]}}}

A bar's ``L0`` defaults to the distance between its nodes (stress-free in the reference
geometry); its nodes must be at distinct places (a bar's direction is undefined otherwise).
A support's ``prescribed`` displacement defaults to zero and is nonzero only on components it
fixes; no two supports fix the same component of a node.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from .._spec_input import Spec

__all__ = ["TrussData", "read_truss_data"]


@dataclass(frozen=True)
class TrussData:
    """A truss as read from a file: named entries of plain numbers, in file order.

    Each field is a tuple of ``(name, entry)`` pairs with the entries ``build_truss`` takes:
    node (x, y); bar (a, b, EA[, L0]); support (node, (fix_x, fix_y), (ux, uy)); load
    (node, (Fx, Fy)).
    """

    nodes: tuple
    bars: tuple
    supports: tuple
    loads: tuple

    def entries(self) -> dict:
        """The keyword arguments of ``build_truss`` (name -> entry mappings)."""
        return {"nodes": dict(self.nodes), "bars": dict(self.bars),
                "supports": dict(self.supports), "loads": dict(self.loads)}


def read_truss_data(path_or_text: str | os.PathLike) -> TrussData:
    """Read the JSON format above; errors name the file and the key path of the bad entry."""
    spec = Spec.load(path_or_text, "truss")
    spec.check_keys(spec.doc, ("description", "nodes", "bars", "supports", "loads"))
    raw = spec.section("nodes", required=True)
    nodes = {n: tuple(spec.vector(raw, n, ".nodes", 2, unit="m")) for n in raw}
    bars, supports, loads = {}, {}, {}
    for name, value in spec.section("bars", required=True).items():
        w = f".bars.{name}"
        e = spec.entry(value, w, ("a", "b", "EA", "L0"))
        a, b = spec.ref(e, "a", w, nodes, "node"), spec.ref(e, "b", w, nodes, "node")
        if a == b or nodes[a] == nodes[b]:
            raise spec.fail(w, f"bar joins {a!r} to itself or to a node at the same place, "
                            "so its direction is undefined",
                            "connect two nodes at distinct positions (an L0 does not help)")
        _check_length(spec, w, nodes[a], nodes[b])
        extra = (spec.number(e, "L0", w, positive=True, unit="m"),) if "L0" in e else ()
        bars[name] = (a, b, spec.number(e, "EA", w, positive=True, unit="N"), *extra)
    held: dict = {}  # (node, component) -> the support that fixes it
    for name, value in spec.section("supports", required=True).items():
        supports[name] = _support(spec, name, value, nodes, held)
    for name, value in spec.section("loads").items():
        w = f".loads.{name}"
        e = spec.entry(value, w, ("node", "force"))
        loads[name] = (spec.ref(e, "node", w, nodes, "node"),
                       tuple(spec.vector(e, "force", w, 2, unit="N")))
    return TrussData(tuple(nodes.items()), tuple(bars.items()), tuple(supports.items()),
                     tuple(loads.items()))


def _check_length(spec: Spec, where: str, a: tuple, b: tuple) -> None:
    """The model computes a bar's length as sqrt(dx^2 + dy^2): refuse nodes so far apart
    (or so close) that the squares overflow (or underflow to 0)."""
    dx, dy = b[0] - a[0], b[1] - a[1]
    square = dx * dx + dy * dy
    if not 0.0 < square < float("inf"):
        what = "far apart" if square else "close together"
        raise spec.fail(where, f"its nodes are so {what} (dx, dy = {dx:g}, {dy:g} m) that "
                        "the bar's length cannot be computed", "give coordinates in metres, with "
                        "distances between about 1e-150 m and 1e150 m")


def _support(spec: Spec, name: str, value, nodes: dict, held: dict) -> tuple:
    """One support entry; ``held`` collects the fixed (node, component) pairs so far."""
    w = f".supports.{name}"
    e = spec.entry(value, w, ("node", "fixed", "prescribed"))
    node = spec.ref(e, "node", w, nodes, "node")
    fixed = tuple(spec.vector(e, "fixed", w, 2, kind=bool))
    prescribed = tuple(spec.vector(e, "prescribed", w, 2, default=(0.0, 0.0), unit="m"))
    if not any(fixed):
        raise spec.fail(f"{w}.fixed", "the support fixes neither ux nor uy, so it holds nothing",
                        "set fixed to true for the component(s) it holds, or remove it")
    for k, comp in enumerate(("ux", "uy")):
        if prescribed[k] != 0.0 and not fixed[k]:
            raise spec.fail(f"{w}.prescribed", f"{comp} = {prescribed[k]} is prescribed on a "
                            "component the support leaves free, so it would be ignored",
                            f"set fixed[{k}] to true to prescribe {comp}, or give 0")
        if fixed[k] and (node, k) in held:
            raise spec.fail(f"{w}.fixed", f"{comp} of node {node!r} is already fixed by "
                            f"support {held[node, k]!r} (two equations for one displacement)",
                            "fix each component of a node in one support only")
        if fixed[k]:
            held[node, k] = name
    return node, fixed, prescribed
