"""Read a thermal network from a JSON file into frozen, JAX-free data (``ThermalData``).

JSON format (``scenarios/data/thermal/shielded_plates.json``; SI units: K, W, W/K, m^2)::

    {"nodes": {"hot": 400.0, "shield": 300.0, "cold": 300.0},      # name: start T (K)
     "conduction": {"strut": {"a": "hot", "b": "cold", "G": 0.05}},
     "radiation": {"r1": {"a": "hot", "b": "shield", "area": 1.0,
                          "emissivity": [0.8, 0.1], "view_factor": 1.0, "area_ratio": 1.0}},
     "fixed": {"sink": {"node": "cold", "T": 300.0}},
     "loads": {"heater": {"node": "hot", "Q": 200.0}}}

``nodes`` may also be a list of names (start 300 K); ``view_factor`` and ``area_ratio``
default to 1 (parallel plates). Conductances are positive (no link: leave it out), and the
names of the conduction, radiation, fixed and loads entries are distinct (results and sweeps
take them). That every connected part of the network holds a fixed-temperature node is
checked by ``read_thermal`` (``_checks.check_file_anchored``: a graph search, which this
JAX-free module does not import).
"""
from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass

from .._spec_input import Spec

__all__ = ["ThermalData", "read_thermal_data"]


@dataclass(frozen=True)
class ThermalData:
    """A thermal network as read from a file: named entries of plain numbers, in file order.

    Each field is a tuple of ``(name, entry)`` pairs with the entries ``build_thermal``
    takes: node start T; conduction (a, b, G); radiation (a, b, area, (e_a, e_b),
    view_factor, area_ratio); fixed (node, T); load (node, Q).
    """

    nodes: tuple
    conduction: tuple
    radiation: tuple
    fixed: tuple
    loads: tuple
    #: The file name (``"<json>"`` for text) for messages.
    source: str = "<json>"

    def entries(self) -> dict:
        """The arguments of ``build_thermal`` (name -> entry mappings)."""
        return {name: dict(getattr(self, name))
                for name in ("nodes", "conduction", "radiation", "fixed", "loads")}


def read_thermal_data(path_or_text: str | os.PathLike) -> ThermalData:
    """Read the JSON format above; errors name the file and the key path of the bad entry."""
    spec = Spec.load(path_or_text, "thermal network")
    spec.check_keys(spec.doc, ("description", "nodes", "conduction", "radiation", "fixed",
                               "loads"))
    nodes = _nodes(spec)
    conduction, radiation, fixed, loads = {}, {}, {}, {}
    for name, value in spec.section("conduction").items():
        w = f".conduction.{name}"
        e = spec.entry(value, w, ("a", "b", "G"))
        conduction[name] = (spec.ref(e, "a", w, nodes, "node"), spec.ref(e, "b", w, nodes, "node"),
                            spec.number(e, "G", w, positive=True, unit="W/K"))
        _two_nodes(spec, w, *conduction[name][:2])
    for name, value in spec.section("radiation").items():
        radiation[name] = _radiation(spec, name, value, nodes)
        _two_nodes(spec, f".radiation.{name}", *radiation[name][:2])
    held: dict = {}   # node -> the fixed entry that holds it
    for name, value in spec.section("fixed").items():
        w = f".fixed.{name}"
        e = spec.entry(value, w, ("node", "T"))
        fixed[name] = (spec.ref(e, "node", w, nodes, "node"),
                       spec.number(e, "T", w, positive=True, unit="K"))
        if fixed[name][0] in held:
            raise spec.fail(f"{w}.node", f"node {fixed[name][0]!r} is already held by fixed "
                            f"{held[fixed[name][0]]!r} (two equations for one temperature)",
                            "hold each node at one temperature, in one fixed entry")
        held[fixed[name][0]] = name
    for name, value in spec.section("loads").items():
        w = f".loads.{name}"
        e = spec.entry(value, w, ("node", "Q"))
        loads[name] = (spec.ref(e, "node", w, nodes, "node"), spec.number(e, "Q", w, unit="W"))
    spec.distinct(("conduction", "radiation", "fixed", "loads"),
                  {"conduction": conduction, "radiation": radiation, "fixed": fixed,
                   "loads": loads})
    if not fixed:
        raise spec.fail(".fixed", "no fixed-temperature boundary",
                        "a steady state needs at least one node held at a temperature")
    return ThermalData(*(tuple(d.items()) for d in (nodes, conduction, radiation, fixed, loads)),
                       source=spec.name)


def _two_nodes(spec: Spec, where: str, a: str, b: str) -> None:
    """A link joins two different nodes (one from a node to itself carries no heat: a typo)."""
    if a == b:
        raise spec.fail(f"{where}.b", f"the link joins {a!r} to itself, so it carries no heat",
                        "give the two different nodes it joins")


def _nodes(spec: Spec) -> dict:
    raw = spec.doc.get("nodes")
    if isinstance(raw, list) and raw and all(isinstance(n, str) for n in raw):
        twice = next((n for n, count in Counter(raw).items() if count > 1), None)
        if twice is not None:
            raise spec.fail(".nodes", f"node {twice!r} is listed twice",
                            "give every node its own name")
        return {n: 300.0 for n in raw}
    if not isinstance(raw, dict) or not raw:
        raise spec.fail(".nodes", "expected a list of node names or an object name: start T",
                        'write "nodes": {"plate": 300.0, ...}')
    return {n: spec.scalar(t, f".nodes.{n}", positive=True, unit="K") for n, t in raw.items()}


def _radiation(spec: Spec, name: str, value, nodes: dict) -> tuple:
    w = f".radiation.{name}"
    e = spec.entry(value, w, ("a", "b", "area", "emissivity", "view_factor", "area_ratio"))
    emissivity = spec.vector(e, "emissivity", w, 2)
    if not all(0.0 < v <= 1.0 for v in emissivity):
        raise spec.fail(f"{w}.emissivity", f"emissivities must be in (0, 1], got {emissivity}",
                        "give [e_a, e_b] with 0 < e <= 1")
    view = spec.number(e, "view_factor", w, default=1.0, positive=True)
    if view > 1.0:
        raise spec.fail(f"{w}.view_factor", f"a view factor is at most 1, got {view}",
                        "give F_ab in (0, 1]")
    return (spec.ref(e, "a", w, nodes, "node"), spec.ref(e, "b", w, nodes, "node"),
            spec.number(e, "area", w, positive=True, unit="m^2"), tuple(emissivity), view,
            spec.number(e, "area_ratio", w, default=1.0, positive=True))
