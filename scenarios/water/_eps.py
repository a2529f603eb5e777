"""``simulate_eps``: EPANET 2.2's extended-period hydraulics on the steady-state solve.

At each hydraulic time: demands, reservoir heads and pump speeds from the patterns, then the
simple controls, then a solve with the tank heads fixed (repeated while EPANET's status checks
and pressure controls change links); the next time is the smallest of
the hydraulic step, the next pattern period, the next report time and the times at which a
tank would fill or drain or a tank-level control would fire; tank volumes then advance by
``dV = q dt``. One lowered graph (:class:`EPSGraph`) serves every step.
"""
from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np

from solvers import RESULTS, SolveError

from .._tables import pandas
from ._disconnected import disconnected_junctions, warn_disconnected
from ._eps_graph import EPSGraph, StepValues
from ._eps_status import MAX_CHECKS, held_closed, pressure_switch
from ._eps_time import (Clock, EPSState, check_supported, controls, demands, tanklevels,
                        timestep)
from ._inp_types import WaterNetwork
from ._model import DEFAULT_METHOD

__all__ = ["EPSResult", "simulate_eps"]


@dataclasses.dataclass(frozen=True)
class EPSResult:
    """Every hydraulic time solved, in order: ``times`` (s), ``step_ends`` (what ended the step
    that starts at each time: ``"hydraulic step"``, ``"pattern step"``, ``"report time"``,
    ``"tank T fills"``/``"empties"``, ``"control on line N"``; ``"end"`` for the last),
    ``tank_levels`` (m above the tank's elevation), ``heads`` (m), ``flows`` (m3/s; 0 in closed
    links, as EPANET reports), ``status`` (1 open, 0 closed) by EPANET id, each an array over
    the times; ``iterations`` (Newton steps), ``converged`` and ``residual_norm`` (max|F|, m or
    m3/s) per time. ``report_times``: the report grid (``report()`` gives the rows there)."""

    times: np.ndarray
    step_ends: tuple[str, ...]
    tank_levels: dict
    heads: dict
    flows: dict
    status: dict
    iterations: np.ndarray
    converged: np.ndarray
    residual_norm: np.ndarray
    report_times: np.ndarray

    def __len__(self) -> int:
        return len(self.times)

    def report(self) -> "EPSResult":
        """One row per report time (REPORT START, then every REPORT TIMESTEP up to the
        duration): the solution in effect then, from the last hydraulic time at or before it
        (as EPANET reports; with REPORT START a multiple of the step, that time itself)."""
        keep = np.searchsorted(self.times, self.report_times, side="right") - 1
        pick = lambda table: {k: v[keep] for k, v in table.items()}  # noqa: E731
        return EPSResult(self.report_times, tuple(np.asarray(self.step_ends)[keep]),
                         pick(self.tank_levels), pick(self.heads), pick(self.flows),
                         pick(self.status), self.iterations[keep], self.converged[keep],
                         self.residual_norm[keep], self.report_times)

    def to_frames(self) -> dict:
        """``{"tank_levels", "heads", "flows", "status"}`` as pandas DataFrames on the report
        grid: one row per report time (index ``time_s``), one column per EPANET id."""
        r = self.report()
        pd = pandas()
        frame = lambda table: pd.DataFrame(table, index=pd.Index(r.times, name="time_s"))  # noqa
        return {"tank_levels": frame(r.tank_levels), "heads": frame(r.heads),
                "flows": frame(r.flows), "status": frame(r.status)}

    def to_json(self) -> dict:
        """``{"analysis": "eps", "time": [s], "tank_levels", "heads", "flows", "status"}`` on the
        report grid, with ``converged``, ``iterations`` (all Newton steps), ``residual_norm``
        (the largest) and ``hydraulic_times`` (how many were solved): JSON-ready values."""
        r = self.report()
        as_lists = lambda table: {k: v.tolist() for k, v in table.items()}  # noqa: E731
        return {"analysis": "eps", "time": r.times.tolist(),
                "tank_levels": as_lists(r.tank_levels), "heads": as_lists(r.heads),
                "flows": as_lists(r.flows), "status": as_lists(r.status),
                "converged": bool(np.all(self.converged)),
                "iterations": int(np.sum(self.iterations)),
                "residual_norm": float(np.max(self.residual_norm)),
                "hydraulic_times": len(self.times)}


def simulate_eps(network: WaterNetwork, duration: int | None = None,
                 hydraulic_step: int | None = None, method: Any = None,
                 constants: Any = "epanet") -> EPSResult:
    """Extended-period run of ``network`` as EPANET 2.2 steps it. ``duration`` and
    ``hydraulic_step`` (s; at most the pattern and report steps, as EPANET caps it) default
    to the file's [TIMES]; ``method``/``constants`` as in
    ``build_water``. Links that EPANET closes during a solve (check valves against reverse
    flow, pumps above their shutoff head, links that would overfill or overdrain a tank) are
    closed the same way, and controls on junction pressure act after each solve, as in
    EPANET. A RuntimeWarning names the junctions with demand that such closures cut off from
    every supply (EPANET's "System disconnected"), when that set changes. Raises ValueError
    for what is not modelled (rules)."""
    if not isinstance(network, WaterNetwork):
        hint = " (pass model.network)" if hasattr(network, "network") else ""
        raise TypeError(f"simulate_eps needs a WaterNetwork from read_inp(path), got "
                        f"{type(network).__name__}{hint}")
    if duration is None and network.duration_s <= 0:
        raise ValueError(f"network {_label(network)!r} has DURATION 0 (a single "
                         "snapshot): solve it with build_water(network).solve(), or pass "
                         "duration=seconds.")
    duration = network.duration_s if duration is None else _seconds("duration", duration)
    step = (network.hydraulic_step_s if hydraulic_step is None
            else _seconds("hydraulic_step", hydraulic_step))
    check_supported(network)
    clock = Clock(network, duration, step)
    state = EPSState(network, clock)
    graph = EPSGraph(network, method or DEFAULT_METHOD, constants)
    rows, cut = [], []
    while True:
        rows.append(_solve_at(graph, state, clock))
        if rows[-1]["disconnected"] and rows[-1]["disconnected"] != cut:
            warn_disconnected(rows[-1]["disconnected"],
                              f"at t = {state.t} s ({_clock_text(state.t)})", stacklevel=2)
        cut = rows[-1]["disconnected"]
        if state.t >= clock.duration:
            rows[-1]["end"] = "end"
            break
        tstep, rows[-1]["end"] = timestep(state, clock)
        tanklevels(state, tstep)
        state.t += tstep
        if state.t >= state.rtime:
            state.rtime += clock.rstep
    return _result(network, rows, clock)


def _label(network: WaterNetwork) -> str:
    """The first non-blank line of the network's [TITLE] (often empty), for messages."""
    return (network.title.strip().splitlines() or ["(untitled)"])[0].strip()


def _seconds(name: str, value) -> int:
    """``value`` as a whole number of seconds >= 1, or a ValueError naming ``name``."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if not (np.isfinite(number) and number >= 1 and number == int(number)):
        raise ValueError(f"simulate_eps: {name} must be a whole number of seconds >= 1, got "
                         f"{value!r}")
    return int(number)


def _clock_text(seconds: int) -> str:
    """``h:mm:ss`` of a time in seconds."""
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def _solve_at(graph: EPSGraph, state: EPSState, clock: Clock) -> dict:
    """EPANET ``runhyd``: patterns, controls, a solve repeated until the status checks hold
    still (``hydsolve``); updates the tank inflows."""
    dem, res_heads = demands(state, clock)
    controls(state, clock)
    levels = state.levels()
    speeds = state.setting[len(state.net.pipes):]
    for _ in range(MAX_CHECKS):
        values = StepValues(dem, levels, res_heads, state.flowing().astype(float), speeds)
        heads, flows, solution = graph.solve(values)
        if not bool(solution.converged):
            raise SolveError(
                f"the hydraulic solve at t = {state.t} s ({_clock_text(state.t)}) did not "
                f"converge: {solution.message()} For the network: check controls that cut a "
                "part of it off its tanks and reservoirs, or try method=solvers.Default() or "
                "a smaller hydraulic_step.", code=RESULTS(int(solution.result)))
        node_heads = _node_heads(state.net, heads, res_heads, levels)
        held = held_closed(state, node_heads, flows, state.held)
        changed = not np.array_equal(held, state.held)
        state.held = held
        if not (pressure_switch(state, node_heads) or changed):
            break
    else:  # as EPANET after MAXCHECK: keep the last statuses and go on
        warnings.warn(f"at t = {state.t} s ({_clock_text(state.t)}) the link statuses did not "
                      f"settle in {MAX_CHECKS} status checks (check valves, pumps at shutoff, "
                      "full or empty tanks, pressure controls); the last ones are kept, as "
                      "EPANET does.", RuntimeWarning, stacklevel=3)
    is_open = state.flowing()
    state.inflow = _tank_inflows(state, np.where(is_open, flows, 0.0)) * graph.ratio
    return {"time": state.t, "disconnected": disconnected_junctions(state.net, is_open, dem),
            "levels": levels.copy(), "junction_heads": heads,
            "reservoir_heads": res_heads, "flows": np.where(is_open, flows, 0.0),
            "open": is_open, "iterations": int(solution.iterations),
            "converged": True, "residual_norm": float(solution.residual_norm)}


def _node_heads(net: WaterNetwork, heads, res_heads, levels) -> dict:
    """Head (m) of every node by id."""
    out = {j.name: h for j, h in zip(net.junctions, heads)}
    out.update({r.name: h for r, h in zip(net.reservoirs, res_heads)})
    out.update({k.name: k.elevation + lv for k, lv in zip(net.tanks, levels)})
    return out


def _tank_inflows(state: EPSState, flows: np.ndarray) -> np.ndarray:
    """Net inflow (m3/s) of each tank (``flows`` 0 in closed links: EPANET leaves them out)."""
    inflow = np.zeros(len(state.net.tanks))
    for link, q in zip(state.links, flows):
        if link.start in state.tank_index:
            inflow[state.tank_index[link.start]] -= q
        if link.end in state.tank_index:
            inflow[state.tank_index[link.end]] += q
    return inflow


def _result(net: WaterNetwork, rows: list, clock: Clock) -> EPSResult:
    links = [*net.pipes, *net.pumps]
    stack = lambda key: np.asarray([r[key] for r in rows])  # noqa: E731
    levels, jheads, rheads = stack("levels"), stack("junction_heads"), stack("reservoir_heads")
    flows, status = stack("flows"), stack("open").astype(int)
    heads = {j.name: jheads[:, i] for i, j in enumerate(net.junctions)}
    heads.update({r.name: rheads[:, i] for i, r in enumerate(net.reservoirs)})
    heads.update({k.name: k.elevation + levels[:, i] for i, k in enumerate(net.tanks)})
    times = stack("time")
    report = np.arange(clock.rstart, clock.duration + 1, clock.rstep)
    return EPSResult(times, tuple(r["end"] for r in rows),
                     {k.name: levels[:, i] for i, k in enumerate(net.tanks)},
                     {n: heads[n] for n in net.node_names},
                     {link.name: flows[:, i] for i, link in enumerate(links)},
                     {link.name: status[:, i] for i, link in enumerate(links)},
                     stack("iterations"), stack("converged"), stack("residual_norm"), report)
