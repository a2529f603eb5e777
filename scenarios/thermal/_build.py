"""Build a thermal network graph from named entries (``build_thermal``) or from a file.

``read_thermal`` reads the file format of ``_reader`` (JAX-free ``ThermalData``) and builds
the graph from it.
"""
from __future__ import annotations

import os
from typing import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from .._leaves import leaf, numpy_or_jnp
from .._named import lookup
from ._checks import check_anchored, check_file_anchored, repeated_name
from ._reader import read_thermal_data
from ._model import (STEFAN_BOLTZMANN, Conduction, FixedTemperature, HeatCapacity, HeatLoad,
                     Radiation, ThermalNetwork, ThermalNode, grey_body_factor)

__all__ = ["build_thermal", "read_thermal"]


def build_thermal(nodes: Mapping[str, float] | Sequence[str], *,
                  conduction: Mapping[str, tuple] = (), radiation: Mapping[str, tuple] = (),
                  fixed: Mapping[str, tuple] = (), loads: Mapping[str, tuple] = (),
                  capacities: Mapping[str, tuple] = ()) -> ThermalNetwork:
    """A thermal graph from named entries (names unique across the link, fixed and load
    groups). Raises ``IslandError`` for a connected part with neither a fixed temperature nor
    a heat capacity, ``ValueError`` for a negative conductance or a repeated name.

    ``nodes``: names, or name -> start temperature (K). ``conduction``: name -> (a, b, G).
    ``radiation``: name -> (a, b, area, (e_a, e_b)[, view_factor[, area_ratio]]).
    ``fixed``: name -> (node, T). ``loads``: name -> (node, Q). ``capacities``: name ->
    (node, C) in J/K (only a transient sees them).
    """
    starts = dict(nodes) if isinstance(nodes, Mapping) else {n: 300.0 for n in nodes}
    _check_names(nodes, conduction, radiation, fixed, loads)
    _check_ends(conduction, radiation, fixed)
    made = {n: ThermalNode(leaf(t)) for n, t in starts.items()}

    def node(name, where):
        return lookup(made, name, where)

    conds = [Conduction(node(a, f"conduction {n!r}"), node(b, f"conduction {n!r}"), leaf(g))
             for n, (a, b, g) in dict(conduction).items()]
    rads = [Radiation(node(r[0], f"radiation {n!r}"), node(r[1], f"radiation {n!r}"), leaf(r[2]),
                      leaf(r[3]), *map(leaf, r[4:6])) for n, r in dict(radiation).items()]
    bcs = [FixedTemperature(node(a, f"fixed {n!r}"), leaf(t)) for n, (a, t) in dict(fixed).items()]
    scale = _conductance_scale(conds, rads, [b.T for b in bcs] + [n.T for n in made.values()])
    bcs = [FixedTemperature(b.node, b.T, b.q, scale) for b in bcs]
    qs = [HeatLoad(node(a, f"load {n!r}"), leaf(q)) for n, (a, q) in dict(loads).items()]
    caps = [HeatCapacity(node(a, f"capacity {n!r}"), leaf(c))
            for n, (a, c) in dict(capacities).items()]
    for name, c in zip(dict(conduction), conds):
        if _known_negative(c.G):
            raise ValueError(f"conduction {name!r} has a negative conductance G = {float(c.G)} "
                             "W/K (heat would flow from cold to hot); give G >= 0")
    net = ThermalNetwork(list(made.values()), conds, rads, bcs, qs, caps, tuple(made),
                         tuple(dict(conduction)), tuple(dict(radiation)), tuple(dict(fixed)),
                         tuple(dict(loads)), tuple(dict(capacities)))
    check_anchored(net, transient=True)
    return net


def _check_names(nodes, conduction, radiation, fixed, loads) -> None:
    """Node names listed twice, or one name in two of the groups that results and sweeps
    look up by name (a conduction and a radiation link, a load and a boundary)."""
    if not isinstance(nodes, Mapping):
        twice = repeated_name({"nodes": list(nodes)})
        if twice:
            raise ValueError(f"node {twice[0]!r} is listed twice; give every node its own name")
    twice = repeated_name({"conduction": list(dict(conduction)),
                           "radiation": list(dict(radiation)), "fixed": list(dict(fixed)),
                           "loads": list(dict(loads))})
    if twice:
        raise ValueError(f"the name {twice[0]!r} is used by both {twice[1]} and {twice[2]}; "
                         "results and sweeps look entries up by name: give each its own")


def _check_ends(conduction, radiation, fixed) -> None:
    """A link from a node to itself (no heat flows: a typo), a node held twice (two
    equations for one temperature: a singular system)."""
    for kind, links in (("conduction", conduction), ("radiation", radiation)):
        for name, link in dict(links).items():
            if link[0] == link[1]:
                raise ValueError(f"{kind} {name!r} joins {link[0]!r} to itself, so it carries "
                                 "no heat; give the two different nodes it joins")
    held: dict = {}
    for name, (node, _) in dict(fixed).items():
        if node in held:
            raise ValueError(f"fixed {name!r} holds node {node!r}, which fixed {held[node]!r} "
                             "already holds; hold each node at one temperature")
        held[node] = name


def _known_negative(value) -> bool:
    """True if ``value`` has a value and it is negative (a traced one is unknown)."""
    try:
        return bool(np.any(np.asarray(value) < 0))
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        return False


def _conductance_scale(conds, rads, temperatures) -> jax.Array:
    """Largest conductance (W/K) of the network, radiation linearised at the hottest given
    temperature: the weight of the fixed-temperature equations (not physics, so no gradient).
    Computed with NumPy when nothing is traced (no eager programs to compile)."""
    inputs = [c.G for c in conds] + list(temperatures) + [
        v for r in rads for v in (r.area, r.emissivity, r.view_factor, r.area_ratio)]
    xp = numpy_or_jnp(inputs)
    t_max = xp.max(xp.stack([xp.asarray(t, dtype=float) for t in temperatures]))
    gs = [xp.asarray(c.G) for c in conds] + [
        4.0 * STEFAN_BOLTZMANN * t_max ** 3 * xp.asarray(r.area)
        * grey_body_factor(xp.asarray(r.emissivity), xp.asarray(r.view_factor),
                           xp.asarray(r.area_ratio)) for r in rads]
    largest = xp.max(xp.abs(xp.stack(gs))) if gs else xp.asarray(1.0)
    scale = xp.where(largest > 0, largest, 1.0)
    return jax.lax.stop_gradient(scale) if xp is jnp else leaf(scale)


def read_thermal(path_or_text: str | os.PathLike) -> ThermalNetwork:
    """The thermal network graph of a JSON file (format in ``_reader``); errors name the file
    and the key path of the bad entry (``.fixed`` for parts without a fixed temperature)."""
    data = read_thermal_data(path_or_text)
    check_file_anchored(data)
    entries = data.entries()
    return build_thermal(entries.pop("nodes"), **entries)
