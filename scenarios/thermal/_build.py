"""Build a thermal network from named entries, or read one from a JSON file.

JSON format (``scenarios/data/thermal/shielded_plates.json``; SI units: K, W, W/K, m^2)::

    {"nodes": {"hot": 400.0, "shield": 300.0, "cold": 300.0},      # name: start T (K)
     "conduction": {"strut": {"a": "hot", "b": "cold", "G": 0.05}},
     "radiation": {"r1": {"a": "hot", "b": "shield", "area": 1.0,
                          "emissivity": [0.8, 0.1], "view_factor": 1.0, "area_ratio": 1.0}},
     "fixed": {"sink": {"node": "cold", "T": 300.0}},
     "loads": {"heater": {"node": "hot", "Q": 200.0}}}

``nodes`` may also be a list of names (start 300 K); ``view_factor`` and ``area_ratio``
default to 1 (parallel plates).
"""
from __future__ import annotations

import os
from typing import Mapping, Sequence

import jax
import jax.numpy as jnp

from .._named import lookup
from .._spec_input import Spec
from ._model import (STEFAN_BOLTZMANN, Conduction, FixedTemperature, HeatCapacity, HeatLoad,
                     Radiation, ThermalNetwork, ThermalNode, grey_body_factor)

__all__ = ["build_thermal", "read_thermal"]


def build_thermal(nodes: Mapping[str, float] | Sequence[str], *,
                  conduction: Mapping[str, tuple] = (), radiation: Mapping[str, tuple] = (),
                  fixed: Mapping[str, tuple] = (), loads: Mapping[str, tuple] = (),
                  capacities: Mapping[str, tuple] = ()) -> ThermalNetwork:
    """A thermal graph from named entries (names must be unique within each group).

    ``nodes``: names, or name -> start temperature (K). ``conduction``: name -> (a, b, G).
    ``radiation``: name -> (a, b, area, (e_a, e_b)[, view_factor[, area_ratio]]).
    ``fixed``: name -> (node, T). ``loads``: name -> (node, Q). ``capacities``: name ->
    (node, C) in J/K (only a transient sees them).
    """
    starts = dict(nodes) if isinstance(nodes, Mapping) else {n: 300.0 for n in nodes}
    made = {n: ThermalNode(jnp.asarray(t, dtype=float)) for n, t in starts.items()}

    def node(name, where):
        return lookup(made, name, where)

    def f(v):
        return jnp.asarray(v, dtype=float)

    conds = [Conduction(node(a, f"conduction {n!r}"), node(b, f"conduction {n!r}"), f(g))
             for n, (a, b, g) in dict(conduction).items()]
    rads = [Radiation(node(r[0], f"radiation {n!r}"), node(r[1], f"radiation {n!r}"), f(r[2]),
                      f(r[3]), *map(f, r[4:6])) for n, r in dict(radiation).items()]
    bcs = [FixedTemperature(node(a, f"fixed {n!r}"), f(t)) for n, (a, t) in dict(fixed).items()]
    scale = _conductance_scale(conds, rads, [b.T for b in bcs] + [n.T for n in made.values()])
    bcs = [FixedTemperature(b.node, b.T, b.q, scale) for b in bcs]
    qs = [HeatLoad(node(a, f"load {n!r}"), f(q)) for n, (a, q) in dict(loads).items()]
    caps = [HeatCapacity(node(a, f"capacity {n!r}"), f(c)) for n, (a, c) in dict(capacities).items()]
    return ThermalNetwork(list(made.values()), conds, rads, bcs, qs, caps, tuple(made),
                          tuple(dict(conduction)), tuple(dict(radiation)), tuple(dict(fixed)),
                          tuple(dict(loads)), tuple(dict(capacities)))


def _conductance_scale(conds, rads, temperatures) -> jax.Array:
    """Largest conductance (W/K) of the network, radiation linearised at the hottest given
    temperature: the weight of the fixed-temperature equations (not physics, so no gradient)."""
    t_max = jnp.max(jnp.stack([jnp.asarray(t, dtype=float) for t in temperatures]))
    gs = [c.G for c in conds] + [4.0 * STEFAN_BOLTZMANN * t_max ** 3 * r.area
                                  * grey_body_factor(r.emissivity, r.view_factor, r.area_ratio)
                                  for r in rads]
    largest = jnp.max(jnp.abs(jnp.stack(gs))) if gs else jnp.asarray(1.0)
    return jax.lax.stop_gradient(jnp.where(largest > 0, largest, 1.0))


def read_thermal(path_or_text: str | os.PathLike) -> ThermalNetwork:
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
                            spec.number(e, "G", w, unit="W/K"))
    for name, value in spec.section("radiation").items():
        radiation[name] = _radiation(spec, name, value, nodes)
    for name, value in spec.section("fixed").items():
        w = f".fixed.{name}"
        e = spec.entry(value, w, ("node", "T"))
        fixed[name] = (spec.ref(e, "node", w, nodes, "node"),
                       spec.number(e, "T", w, positive=True, unit="K"))
    for name, value in spec.section("loads").items():
        w = f".loads.{name}"
        e = spec.entry(value, w, ("node", "Q"))
        loads[name] = (spec.ref(e, "node", w, nodes, "node"), spec.number(e, "Q", w, unit="W"))
    if not fixed:
        raise spec.fail(".fixed", "no fixed-temperature boundary",
                        "a steady state needs at least one node held at a temperature")
    return build_thermal(nodes, conduction=conduction, radiation=radiation, fixed=fixed,
                         loads=loads)


def _nodes(spec: Spec) -> dict:
    raw = spec.doc.get("nodes")
    if isinstance(raw, list) and raw and all(isinstance(n, str) for n in raw):
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
            spec.number(e, "area", w, positive=True, unit="m^2"), emissivity, view,
            spec.number(e, "area_ratio", w, default=1.0, positive=True))
