"""Build a plane truss from named entries, or read one from a JSON file.

JSON format (``scenarios/data/truss/von_mises.json``; SI units: m, N)::

    {"nodes": {"left": [-1.0, 0.0], "right": [1.0, 0.0], "apex": [0.0, 0.1]},
     "bars": {"bl": {"a": "left", "b": "apex", "EA": 1000.0}, ...},   # "L0" optional
     "supports": {"pin_l": {"node": "left", "fixed": [true, true]}, ...},  # "prescribed" optional
     "loads": {"P": {"node": "apex", "force": [0.0, -1.0]}}}

A bar's ``L0`` defaults to the distance between its nodes (stress-free in the reference
geometry); a support's ``prescribed`` displacement defaults to zero.
"""
from __future__ import annotations

import os
from typing import Mapping

import jax
import jax.numpy as jnp

from .._named import lookup
from .._spec_input import Spec
from ._model import Bar, Load, Support, Truss, TrussNode

__all__ = ["build_truss", "read_truss"]


def build_truss(nodes: Mapping[str, tuple], bars: Mapping[str, tuple], *,
                supports: Mapping[str, tuple] = (), loads: Mapping[str, tuple] = ()) -> Truss:
    """A truss graph from named entries.

    ``nodes``: name -> (x, y). ``bars``: name -> (a, b, EA[, L0]). ``supports``: name ->
    (node, (fix_x, fix_y)[, (ux, uy) prescribed]). ``loads``: name -> (node, (Fx, Fy)).
    """
    made = {n: TrussNode(jnp.asarray(xy, dtype=float)) for n, xy in nodes.items()}

    def node(name, where):
        return lookup(made, name, where)

    made_bars = []
    for name, (a, b, ea, *rest) in dict(bars).items():
        na, nb = node(a, f"bar {name!r}"), node(b, f"bar {name!r}")
        length = jnp.asarray(rest[0] if rest else jnp.linalg.norm(nb.X - na.X), dtype=float)
        if not isinstance(length, jax.core.Tracer) and not float(length) > 0:
            raise ValueError(f"bar {name!r} has zero length: give its nodes distinct positions "
                             "or an explicit positive L0")
        made_bars.append(Bar(na, nb, jnp.asarray(ea, dtype=float), length))
    # a weight, not physics: stop_gradient keeps derivatives of the solution exact and cheap
    scale = jax.lax.stop_gradient(jnp.max(jnp.stack([b.EA / b.L0 for b in made_bars]))
                                  if made_bars else jnp.asarray(1.0))
    made_supports = [Support(node(s[0], f"support {n!r}"), jnp.asarray(s[1], dtype=bool),
                             jnp.asarray(s[2] if len(s) > 2 else (0.0, 0.0), dtype=float), scale)
                     for n, s in dict(supports).items()]
    made_loads = [Load(node(a, f"load {n!r}"), jnp.asarray(f, dtype=float))
                  for n, (a, f) in dict(loads).items()]
    return Truss(list(made.values()), made_bars, made_supports, made_loads, tuple(made),
                 tuple(dict(bars)), tuple(dict(supports)), tuple(dict(loads)))


def read_truss(path_or_text: str | os.PathLike) -> Truss:
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
        if a == b or ("L0" not in e and nodes[a] == nodes[b]):
            raise spec.fail(w, f"bar joins {a!r} to itself or to a node at the same place",
                            "connect two distinct nodes, or give a positive L0")
        extra = (spec.number(e, "L0", w, positive=True, unit="m"),) if "L0" in e else ()
        bars[name] = (a, b, spec.number(e, "EA", w, positive=True, unit="N"), *extra)
    for name, value in spec.section("supports", required=True).items():
        w = f".supports.{name}"
        e = spec.entry(value, w, ("node", "fixed", "prescribed"))
        supports[name] = (spec.ref(e, "node", w, nodes, "node"),
                          tuple(spec.vector(e, "fixed", w, 2, kind=bool)),
                          tuple(spec.vector(e, "prescribed", w, 2, default=(0.0, 0.0), unit="m")))
    for name, value in spec.section("loads").items():
        w = f".loads.{name}"
        e = spec.entry(value, w, ("node", "force"))
        loads[name] = (spec.ref(e, "node", w, nodes, "node"),
                       tuple(spec.vector(e, "force", w, 2, unit="N")))
    return build_truss(nodes, bars, supports=supports, loads=loads)
