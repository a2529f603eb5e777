"""EPANET's link status checks in the t = 0 snapshot (``hydstatus.c``: ``linkstatus``).

EPANET checks link statuses during every hydraulic solve, a single-period one included: a
check valve against reverse flow, a pump that would lift more than its shutoff head, and a link
that would fill a full tank or drain an empty one are closed for the moment and the network is
solved again, until the closures hold still. :func:`solve_snapshot` does the same with the
extended-period run's check (:func:`held_closed` on an :class:`EPSState` at t = 0), so the
snapshot equals ``simulate_eps``'s first solve. A closed link follows EPANET's closed-link law
``dh = CBIG q`` (as in the extended-period graph), so closing one never makes the equations
singular; junctions with demand that it cuts off from every supply get a RuntimeWarning, as
EPANET's "System disconnected".
Controls on junction pressure are not applied here (``simulate_eps`` applies them).
"""
from __future__ import annotations

import warnings

import numpy as np

from .._network_solve import solve_graph
from ._build import is_open
from ._disconnected import disconnected_junctions, warn_disconnected
from ._elements import WaterGraph
from ._eps_graph import closed_resistance, switched
from ._eps_status import MAX_CHECKS, held_closed, tank_closures
from ._eps_time import Clock, EPSState
from ._inp_types import WaterNetwork

__all__ = ["solve_snapshot", "snapshot_state", "tank_limited", "status_closed"]


def snapshot_state(network: WaterNetwork) -> EPSState:
    """The extended-period state at t = 0 with the snapshot's link statuses and pump speeds
    (after the speed patterns and the controls that fire at t = 0)."""
    state = EPSState(network, Clock(network, max(network.duration_s, 0),
                                    max(network.hydraulic_step_s, 1)))
    state.open = np.asarray([is_open(link) for link in state.links])
    state.setting[len(network.pipes):] = [p.speed_t0 for p in network.pumps]
    return state


def _solved_flows(state: EPSState, graph: WaterGraph, value_of) -> np.ndarray:
    """The flows (m3/s) of ``state``'s links in a solved ``graph``, after setting ``state``'s
    tank volumes from the graph's levels (as a sweep or an edit may set them)."""
    for name, i in state.tank_index.items():
        if name in graph.tanks:
            state.volume[i] = state.volume_at(i, value_of(graph.tanks[name].level))
    links = {**graph.pipes, **graph.pumps}
    return np.asarray([value_of(links[link.name].flow) if link.name in links else 0.0
                       for link in state.links])


def _names(state: EPSState, closed: np.ndarray) -> tuple[str, ...]:
    return tuple(link.name for link, c in zip(state.links, closed) if c)


def tank_limited(state: EPSState, graph: WaterGraph, value_of) -> tuple[str, ...]:
    """Names of the links in ``graph`` that would fill a full tank or drain an empty one;
    ``value_of(leaf)``: one member's value of a graph leaf (its solved flows in m3/s; its
    tank levels in m decide which tanks are full)."""
    return _names(state, tank_closures(state, _solved_flows(state, graph, value_of)))


def status_closed(state: EPSState, graph: WaterGraph, held: tuple) -> tuple[str, ...]:
    """Names of the links of a solved single ``graph`` that EPANET's ``linkstatus`` holds
    closed (``held``: the names closed while it was solved; a closed check valve stays closed
    while its head difference is within tolerance)."""
    value_of = lambda leaf: float(np.asarray(leaf))  # noqa: E731
    flows = _solved_flows(state, graph, value_of)
    nodes = {**graph.junctions, **graph.reservoirs, **graph.tanks}
    heads = {name: value_of(node.head) for name, node in nodes.items()}
    was = np.asarray([link.name in held for link in state.links])
    return _names(state, held_closed(state, heads, flows, was))


def closed_graph(graph: WaterGraph, names: tuple, ratio: float) -> WaterGraph:
    """``graph`` with the links ``names`` closed by EPANET's law ``dh = CBIG q``."""
    closed_r = closed_resistance(ratio)

    def close(links: dict) -> dict:
        return {name: switched(link, 0.0, closed_r) if name in names else link
                for name, link in links.items()}

    return WaterGraph(graph.hydraulics, graph.junctions, graph.reservoirs, graph.tanks,
                      close(graph.pipes), close(graph.pumps))


def solve_snapshot(network: WaterNetwork, graph: WaterGraph, method) -> tuple:
    """``(solved, closed link names)``: the snapshot solved with EPANET's link status checks
    repeated until the closures hold still (at most ``MAX_CHECKS`` solves, as EPANET)."""
    solved = solve_graph(graph, method)
    if not (network.tanks or network.pumps or any(p.check_valve for p in network.pipes)):
        return solved, ()
    state, closed = snapshot_state(network), ()
    for _ in range(MAX_CHECKS):
        if not bool(np.asarray(solved.solution.converged)):
            break
        new = status_closed(state, solved.graph, closed)
        if new == closed:
            break
        closed = new
        solved = solve_graph(closed_graph(graph, closed, network.units.epanet_flow_ratio),
                             method)
    else:
        warnings.warn(f"the links closed by status checks (check valves, pumps at shutoff, full "
                      f"or empty tanks) did not settle in {MAX_CHECKS} checks; the last ones "
                      "are kept, as EPANET does.", RuntimeWarning,
                      stacklevel=3)
    _check_connected(network, solved.graph, closed)
    return solved, closed


def _check_connected(network: WaterNetwork, graph: WaterGraph, closed: tuple) -> None:
    """Warn (as EPANET) about junctions with demand that the closed links cut off."""
    if not closed:
        return
    factor = float(np.asarray(graph.hydraulics.demand_multiplier))
    demands = [float(np.asarray(graph.junctions[j.name].demand)) * factor
               for j in network.junctions]
    is_open_now = [is_open(link) and link.name not in closed
                   for link in (*network.pipes, *network.pumps)]
    names = disconnected_junctions(network, is_open_now, demands)
    if names:
        warn_disconnected(names, "at t = 0 (0:00:00)", stacklevel=4)
