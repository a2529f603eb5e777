"""The map of a solved water network: junctions coloured by pressure, links by flow."""
from __future__ import annotations

from typing import Any

import numpy as np

from .._maps import NetworkMap, draw_map, positions

__all__ = ["water_map", "draw_water_map"]


def water_map(result: Any, title: str = "") -> NetworkMap:
    """Junction pressures (m; reservoirs and tanks are drawn as squares and triangles) and
    |flow| (L/s, arrows in the flow direction) at the file's [COORDINATES] and [VERTICES], or
    at a computed layout when the file has none."""
    net = result.model.network
    names = list(net.node_names)
    index = {name: i for i, name in enumerate(names)}
    links = [*net.pipes, *net.pumps]
    pairs = [(index[link.start], index[link.end]) for link in links]
    xy, where = positions(names, net.coordinates, pairs)
    bends = [net.vertices.get(link.name, ()) for link in links] if net.coordinates else ()
    kinds = (["junction"] * len(net.junctions) + ["reservoir"] * len(net.reservoirs)
             + ["tank"] * len(net.tanks))
    pressure = [result.pressure(n) if kind == "junction" else np.nan
                for n, kind in zip(names, kinds)]
    flows = 1e3 * np.asarray([result.flow(link.name) for link in links])
    return NetworkMap(names, xy, np.asarray(pressure), "junction pressure (m)", pairs,
                      np.abs(flows), "|flow| (L/s)", title or "pressure and flow at t = 0",
                      where, bends, np.sign(flows), kinds,
                      ["pipe"] * len(net.pipes) + ["pump"] * len(net.pumps),
                      {"reservoir": "s", "tank": "^", "pump": "D"})


def draw_water_map(fig, result: Any, title: str = "") -> None:
    """Draw :func:`water_map` of ``result`` into a matplotlib figure."""
    draw_map(fig, water_map(result, title))
