"""EPANET's link status checks in the t = 0 snapshot (``hydstatus.c``: ``linkstatus``).

EPANET checks link statuses during every hydraulic solve, a single-period one included: a
check valve against reverse flow, a pump that would lift more than its shutoff head, and a link
that would fill a full tank or drain an empty one are closed for the moment and the network is
solved again, until the closures hold still. :func:`solve_snapshot` does the same with the
extended-period run's check (:func:`held_closed` on an :class:`EPSState` at t = 0), so the
snapshot equals ``simulate_eps``'s first solve. A closed link follows EPANET's closed-link law
``dh = CBIG q`` (as in the extended-period graph), so closing one never makes the equations
singular; junctions with demand that closed links (in the file or the graph, by a control or a
check) cut off from every supply get a RuntimeWarning, as EPANET's "System disconnected".
After each solve the controls on junction pressure act too, as EPANET's ``pswitch``
(:func:`pressure_switch`), and the network is solved again. The checks start from the
graph's own statuses and pump speeds, and a re-solve rebuilds only the links a check or a
control changed, so a user's edits to the graph (speeds, roughness, demands) hold.
"""
from __future__ import annotations

import warnings

import numpy as np

from .._network_solve import solve_graph
from ._build import is_open
from ._disconnected import disconnected_junctions, warn_disconnected
from ._elements import WaterGraph
from ._closed import closed_resistance, switched
from ._eps_status import MAX_CHECKS, held_closed, pressure_switch, tank_closures
from ._eps_time import Clock, EPSState
from ._inp_types import WaterNetwork

__all__ = ["solve_snapshot", "snapshot_state", "state_graph", "tank_limited", "cut_off"]


def _scalar(leaf) -> float:
    return float(np.asarray(leaf))


def _member(value_of):
    """``value_of`` (one member's value of a batched leaf) that also reads unbatched ones."""
    return lambda leaf: value_of(leaf) if np.ndim(leaf) else _scalar(leaf)


def snapshot_state(network: WaterNetwork, graph: WaterGraph | None = None,
                   value_of=_scalar) -> EPSState:
    """The extended-period state at t = 0 with the snapshot's link statuses and pump speeds:
    those of ``graph``'s elements (``value_of(leaf)``: one member's value) when given, else
    the file's (after the speed patterns and the controls that fire at t = 0)."""
    state = EPSState(network, Clock(network, max(network.duration_s, 0),
                                    max(network.hydraulic_step_s, 1)))
    state.open = np.asarray([is_open(link) for link in state.links])
    state.setting[len(network.pipes):] = [p.speed_t0 for p in network.pumps]
    if graph is not None:
        links, n_pipes = {**graph.pipes, **graph.pumps}, len(network.pipes)
        value = _member(value_of)
        for k, data in enumerate(state.links):
            link = links[data.name]
            state.open[k] = value(getattr(link, "status", 1.0)) > 0.5
            if k >= n_pipes and state.open[k]:
                state.setting[k] = value(link.speed)
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


def cut_off(network: WaterNetwork, graph: WaterGraph, flowing: np.ndarray,
            value_of=_scalar) -> list[str]:
    """The junctions with demand in ``graph`` that no link open in the solve (``flowing``)
    joins to a supply (EPANET's "System disconnected")."""
    if np.all(flowing):
        return []
    value_of = _member(value_of)
    factor = value_of(graph.hydraulics.demand_multiplier)
    demands = [value_of(graph.junctions[j.name].demand) * factor for j in network.junctions]
    return disconnected_junctions(network, flowing, demands)


def _held(state: EPSState, graph: WaterGraph) -> np.ndarray:
    """Which links of a solved single ``graph`` EPANET's ``linkstatus`` holds closed
    (``state.held``: those held closed while it was solved; a closed check valve stays closed
    while its head difference is within tolerance)."""
    flows = _solved_flows(state, graph, _scalar)
    return held_closed(state, _heads(graph), flows, state.held)


def _heads(graph: WaterGraph) -> dict:
    nodes = {**graph.junctions, **graph.reservoirs, **graph.tanks}
    return {name: _scalar(node.head) for name, node in nodes.items()}


def state_graph(graph: WaterGraph, state: EPSState, ratio: float, start: tuple) -> WaterGraph:
    """``graph`` with the links whose status or pump speed in ``state`` differs from
    ``start`` (``(flowing, setting)`` of ``graph`` itself, :func:`snapshot_state`) switched:
    open at ``state``'s speed if a control set it, or closed by EPANET's law ``dh = CBIG q``.
    Every other link keeps the graph's own element (and its edits)."""
    closed_r, flowing = closed_resistance(ratio), state.flowing()
    n_pipes, links = len(state.net.pipes), {**graph.pipes, **graph.pumps}
    out = {}
    for k, data in enumerate(state.links):
        link = links[data.name]
        speed = k >= n_pipes and flowing[k] and state.setting[k] != start[1][k]
        if flowing[k] == start[0][k] and not speed:
            out[data.name] = link
        else:
            changes = {"speed": float(state.setting[k])} if speed else {}
            out[data.name] = switched(link, float(flowing[k]), closed_r, **changes)
    return WaterGraph(graph.hydraulics, graph.junctions, graph.reservoirs, graph.tanks,
                      {p.name: out[p.name] for p in state.net.pipes},
                      {p.name: out[p.name] for p in state.net.pumps})


def _has_checks(network: WaterNetwork) -> bool:
    """Whether EPANET's status checks or pressure controls can act on ``network``."""
    pressure = {j.name for j in network.junctions}
    return bool(network.tanks or network.pumps or any(p.check_valve for p in network.pipes)
                or any(c.enabled and c.node in pressure for c in network.controls))


def solve_snapshot(network: WaterNetwork, graph: WaterGraph, method) -> tuple:
    """``(solved, closed link names)``: the snapshot solved as EPANET's ``hydsolve``: after
    each solve, its link status checks and the controls on junction pressure (``pswitch``),
    repeated until neither changes a link (at most ``MAX_CHECKS`` solves, as EPANET); then
    a RuntimeWarning names the junctions with demand that closed links cut off."""
    state = snapshot_state(network, graph)
    solved = solve_graph(graph, method)
    if _has_checks(network):
        solved = _checked(graph, state, solved, method)
    names = cut_off(network, solved.graph, state.flowing())
    if names:
        warn_disconnected(names, "at t = 0 (0:00:00)", stacklevel=3)
    return solved, _names(state, state.held)


def _checked(graph: WaterGraph, state: EPSState, solved, method):
    """``solved`` after EPANET's status checks and pressure controls (``state`` updated)."""
    start, ratio = (state.flowing(), state.setting.copy()), state.net.units.epanet_flow_ratio
    for _ in range(MAX_CHECKS):
        if not bool(np.asarray(solved.solution.converged)):
            break
        held = _held(state, solved.graph)
        changed = not np.array_equal(held, state.held)
        state.held = held
        if not (pressure_switch(state, _heads(solved.graph)) or changed):
            break
        solved = solve_graph(state_graph(graph, state, ratio, start), method)
    else:
        warnings.warn(f"the link statuses (check valves, pumps at shutoff, full or empty tanks, "
                      f"controls on junction pressure) did not settle in {MAX_CHECKS} checks; "
                      "the last ones are kept, as EPANET does.", RuntimeWarning, stacklevel=4)
    return solved
