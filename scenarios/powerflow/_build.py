"""``build_graph``: a :class:`PowerCase` as a graph of bus, branch, load, generator and shunt
elements, its unknowns at one of the starts of :mod:`._start` (default: the case file's)."""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .._islands import IslandError, shown
from ._case import PowerCase, impedance_problem
from ._elements import (Branch, Generator, Load, Loading, PowerGraph, PQBus, PVBus, Shunt,
                        SlackBus)
from ._start import start_voltages

__all__ = ["build_graph", "check_islands"]


def build_graph(case: PowerCase, start: str = "case") -> PowerGraph:
    """The element graph of ``case`` (in-service branches; generator Q limits are ignored),
    its unknowns at ``start`` (``"case"``, ``"flat"`` or ``"dc"``; a DC start that has no
    solution gives the flat one)."""
    check_islands(case)
    vm0, va0 = start_voltages(case, start) or start_voltages(case, "flat")
    loading = Loading(1.0)
    buses, loads, generators, shunts = {}, {}, {}, {}
    for k, b in enumerate(case.buses):
        if b.type == "slack":
            bus = SlackBus(_given(b, "Vset"), math.radians(_given(b, "Va_set_deg")))
        elif b.type == "PV":
            bus = PVBus(_given(b, "Vset"), float(va0[k]))
            generators[b.id] = Generator(bus, loading, _given(b, "Pg"), 0.0)
        else:
            bus = PQBus(va=float(va0[k]), vm=float(vm0[k]))
            if (b.Pg or 0.0) != 0.0 or (b.Qg or 0.0) != 0.0:
                generators[b.id] = Generator(bus, loading, b.Pg or 0.0, b.Qg or 0.0)
        buses[b.id] = bus
        if b.Pd != 0.0 or b.Qd != 0.0:
            loads[b.id] = Load(bus, loading, b.Pd, b.Qd)
        if b.Gs != 0.0 or b.Bs != 0.0:
            shunts[b.id] = Shunt(bus, b.Gs, b.Bs)
    branches = tuple(_branch(case, br, buses) for br in case.branches)
    return PowerGraph(loading, buses, branches, loads, generators, shunts)


def _given(bus, field: str) -> float:
    value = getattr(bus, field)
    if value is None:
        raise ValueError(f"bus {bus.id} ({bus.type}) has no {field}; a {bus.type} bus needs it. "
                         "Give the set point in the case file.")
    return float(value)


def _branch(case: PowerCase, br, buses: dict) -> Branch:
    bad = impedance_problem(br.r, br.x)
    if bad is not None:
        raise ValueError(f"case {case.name!r}: branch {br.index} ({br.from_bus}-{br.to_bus}): "
                         f"{bad[0]}. {bad[1][:1].upper()}{bad[1][1:]}.")
    return Branch(buses[br.from_bus], buses[br.to_bus], br.r, br.x, br.b, br.tap,
                  math.radians(br.shift_deg))


def check_islands(case: PowerCase) -> None:
    """Raise ``IslandError`` naming the buses of any island (through in-service branches) that
    holds no slack bus: their angles would be undefined."""
    ids = [b.id for b in case.buses]
    if not any(b.type == "slack" for b in case.buses):
        raise IslandError(f"case {case.name!r} has no slack (reference, type 3) bus, so no bus "
                          "angle is fixed. Make one generator bus the slack.", tuple(ids))
    islands = _islands_without_slack(case, ids)
    if islands:
        names = [n for island in islands for n in island]
        raise IslandError(
            f"case {case.name!r}: bus(es) {shown(names)} are not connected to any slack bus "
            f"through in-service branches ({len(islands)} island(s)), so their voltage angles "
            "are undefined. Put a branch that joins them in service, or make one generator bus "
            "of each island a slack bus.", tuple(names))


def _islands_without_slack(case: PowerCase, ids: list) -> list[list]:
    """Bus numbers of each connected component without a slack bus (as
    ``islands_without_reference``: buses in case order, islands by their first bus)."""
    position = {bus_id: k for k, bus_id in enumerate(ids)}
    ends = np.asarray([(position[br.from_bus], position[br.to_bus]) for br in case.branches],
                      dtype=np.int64).reshape(-1, 2)
    graph = sp.coo_matrix((np.ones(len(ends)), (ends[:, 0], ends[:, 1])),
                          shape=(len(ids), len(ids)))
    count, label = connected_components(graph, directed=False)
    anchored = np.zeros(count, dtype=bool)
    anchored[label[[k for k, b in enumerate(case.buses) if b.type == "slack"]]] = True
    islands: dict = {}
    for k in np.flatnonzero(~anchored[label]).tolist():
        islands.setdefault(label[k], []).append(ids[k])
    return list(islands.values())
