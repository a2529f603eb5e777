"""EPANET 2.2's extended-period bookkeeping (``hydraul.c``), JAX-free, in SI.

``demands`` (pattern values at a time), ``controls`` (simple controls), ``timestep`` (the next
hydraulic time: ``timestep``, ``tanktimestep``, ``controltimestep``) and ``tanklevels`` follow
the C functions of the same names. Tank volumes and flows are kept as EPANET sees them: a flow
of ``q`` m3/s is ``q * ratio`` in EPANET's internal units (``UnitSystem.epanet_flow_ratio``).
"""
from __future__ import annotations

import math

import numpy as np

from ._inp_types import Control, NotModelled, WaterNetwork
from ._inp_units import CFS

__all__ = ["EPSState", "Clock", "check_supported", "demands", "controls", "timestep",
           "tanklevels"]

QZERO = 1e-6 * CFS   # EPANET's zero flow, 1e-6 cfs, in m3/s
DAY = 86400


def _round(x: float) -> int:
    """EPANET's ROUND: half away from zero, then truncation to ``long``."""
    return int(x + 0.5) if x >= 0 else int(x - 0.5)


class Clock:
    """EPANET's ``Times``: duration, steps, pattern start and the start clock time (s)."""

    def __init__(self, net: WaterNetwork, duration: int, hydraulic_step: int):
        self.duration, self.pstep, self.pstart = duration, net.pattern_step_s, net.pattern_start_s
        self.rstep, self.tstart = net.report_step_s, net.start_clocktime_s
        # EPANET's adjustdata: a report start after the end of the run reports from 0.
        self.rstart = net.report_start_s if net.report_start_s <= duration else 0
        self.hstep = min(hydraulic_step, self.pstep, self.rstep)

    def period(self, t: int) -> int:
        return (t + self.pstart) // self.pstep


class EPSState:
    """The changing state: time, report time, tank volumes (m3), link statuses (``open``: by
    the file and controls; ``held``: closed for now by EPANET's status checks), pump settings
    (speed) and the last net tank inflows (m3/s, EPANET-scaled)."""

    def __init__(self, net: WaterNetwork, clock: Clock):
        self.net, self.t, self.rtime = net, 0, clock.rstep
        self.area = np.asarray([math.pi * k.diameter ** 2 / 4.0 for k in net.tanks])
        self.curves = [_volume_curve(net, k) for k in net.tanks]
        self.volume = np.asarray([self.volume_at(i, k.init_level)
                                  for i, k in enumerate(net.tanks)])
        self.links = [*net.pipes, *net.pumps]
        self.open = np.asarray([link.initial_status == "OPEN" for link in self.links])
        self.setting = np.asarray([1.0] * len(net.pipes) + [p.speed for p in net.pumps])
        self.held = np.zeros(len(self.links), dtype=bool)  # closed by a status check
        self.inflow = np.zeros(len(net.tanks))
        self.tank_index = {k.name: i for i, k in enumerate(net.tanks)}
        self.link_index = {link.name: i for i, link in enumerate(self.links)}
        self.junctions = {j.name for j in net.junctions}

    def levels(self) -> np.ndarray:
        """Tank levels above their elevation (m): EPANET ``tankgrade``."""
        return np.asarray([v / a if c is None else np.interp(v, c[1], c[0])
                           for v, a, c in zip(self.volume, self.area, self.curves)])

    def volume_at(self, i: int, level: float) -> float:
        """Volume (m3) of tank ``i`` at ``level``: EPANET ``tankvolume`` (its ``interp`` holds
        the end values beyond a volume curve, as ``np.interp`` does)."""
        c = self.curves[i]
        return self.area[i] * level if c is None else float(np.interp(level, c[0], c[1]))

    def is_full(self, i: int) -> bool:
        return self.volume[i] >= self.volume_at(i, self.net.tanks[i].max_level)

    def is_empty(self, i: int) -> bool:
        return self.volume[i] <= self.volume_at(i, self.net.tanks[i].min_level)

    def flowing(self) -> np.ndarray:
        """Links open for the solve: open, not held closed, not a pump at speed 0 (EPANET
        treats one as closed)."""
        return self.open & ~self.held & (self.setting != 0.0)

    def status_differs(self, k: int, status: str) -> bool:
        """EPANET's ``LinkStatus != status``: a link held closed differs from both."""
        return bool(self.held[k]) or bool(self.open[k]) != (status == "OPEN")


def _volume_curve(net: WaterNetwork, tank) -> tuple[np.ndarray, np.ndarray] | None:
    """``(levels m, volumes m3)`` of the tank's volume curve, or None (a cylinder)."""
    if tank.volume_curve is None:
        return None
    points = np.asarray(net.curves[tank.volume_curve], dtype=float)
    levels, volumes = points[:, 0] * net.units.length, points[:, 1] * net.units.volume
    if np.any(np.diff(levels) <= 0) or np.any(np.diff(volumes) <= 0):
        raise NotModelled(f"volume curve {tank.volume_curve!r} of tank {tank.name!r}: levels "
                          "and volumes must both increase from point to point.",
                          f"curve {tank.volume_curve}")
    return levels, volumes


def check_supported(net: WaterNetwork) -> None:
    """Raise ValueError for what this EPS engine does not model."""
    rules = [r for r in net.rules if r.strip() and not r.strip().startswith(";")]
    if rules:
        title = (net.title.strip().splitlines() or [""])[0]
        raise NotModelled(f"network {title!r} has rule-based controls ([RULES]); the "
                          "extended-period run supports simple [CONTROLS] only. Rewrite the "
                          "rules as simple controls or remove them.", "[RULES]")
    for tank in net.tanks:
        if tank.diameter <= 0.0 and tank.volume_curve is None:
            raise NotModelled(f"tank {tank.name!r} has diameter 0 and no volume curve; give it "
                              "a diameter or a volume curve (or make it a reservoir).",
                              f"tank {tank.name}")


def demands(state: EPSState, clock: Clock) -> tuple[np.ndarray, np.ndarray]:
    """Junction demands and reservoir heads at ``state.t``; applies pump speed patterns."""
    net, p = state.net, clock.period(state.t)

    def factor(name):
        if name is None:
            return 1.0
        values = net.patterns[name]
        return values[p % len(values)]

    dem = np.asarray([sum(d.base * factor(d.pattern) for d in j.demands)
                      * net.demand_multiplier for j in net.junctions])
    heads = np.asarray([r.base_head * factor(r.pattern) for r in net.reservoirs])
    for pump in net.pumps:
        if pump.pattern is not None:
            _set_speed(state, state.link_index[pump.name], factor(pump.pattern))
    return dem, heads


def _set_speed(state: EPSState, k: int, value: float) -> None:
    """EPANET ``setlinksetting`` for a pump (a pump held closed counts as closed)."""
    state.setting[k] = value
    if value > 0 and (not state.open[k] or state.held[k]):
        state.open[k], state.held[k] = True, False
    if value == 0 and state.open[k] and not state.held[k]:
        state.open[k] = False


def _grade(net: WaterNetwork, c: Control) -> float:
    node = next(n for n in (*net.tanks, *net.reservoirs) if n.name == c.node)
    return getattr(node, "elevation", 0.0) + c.level * net.units.length


def controls(state: EPSState, clock: Clock) -> list[int]:
    """Apply the simple controls that fire at ``state.t``; the lines of those that changed
    a link."""
    net, changed = state.net, []
    for c in net.controls:
        if c.enabled and _fires(state, clock, c):
            k = state.link_index[c.link]
            is_pump = k >= len(net.pipes)
            new_setting = c.setting if is_pump else state.setting[k]
            was_open = state.open[k] and not state.held[k]
            if was_open != (c.status == "OPEN") or state.setting[k] != new_setting:
                state.open[k], state.setting[k] = c.status == "OPEN", new_setting
                state.held[k] = False
                changed.append(c.line)
    return changed


def _fires(state: EPSState, clock: Clock, c: Control) -> bool:
    if c.kind == "time":
        return c.time_s == state.t
    if c.kind == "clocktime":
        return (state.t + clock.tstart) % DAY == c.time_s
    i = state.tank_index.get(c.node)
    if i is None:  # a reservoir: EPANET compares two zero volumes; a junction: after a solve
        return c.node not in state.junctions
    v1, vplus = state.volume[i], abs(state.inflow[i])
    v2 = state.volume_at(i, _grade(state.net, c) - state.net.tanks[i].elevation)
    return v1 <= v2 + vplus if c.kind == "low_level" else v1 >= v2 - vplus


def timestep(state: EPSState, clock: Clock) -> tuple[int, str]:
    """EPANET ``timestep`` without the tank update: the next step (s) and what set it."""
    t = state.t
    tstep, why = clock.hstep, "hydraulic step"
    dt = (clock.period(t) + 1) * clock.pstep - clock.pstart - t
    if 0 < dt < tstep:
        tstep, why = dt, "pattern step"
    dt = state.rtime - t
    if 0 < dt < tstep:
        tstep, why = dt, "report time"
    tstep, why = _tank_step(state, tstep, why)
    return _control_step(state, clock, tstep, why)


def _tank_step(state: EPSState, tstep: int, why: str) -> tuple[int, str]:
    """EPANET ``tanktimestep``: the time a tank takes to fill or drain."""
    for i, tank in enumerate(state.net.tanks):
        q, level = state.inflow[i], state.levels()[i]
        if abs(q) <= QZERO:
            continue
        if q > 0.0 and level < tank.max_level:
            v, what = state.volume_at(i, tank.max_level) - state.volume[i], "fills"
        elif q < 0.0 and level > tank.min_level:
            v, what = state.volume_at(i, tank.min_level) - state.volume[i], "empties"
        else:
            continue
        xt = v / q
        if abs(xt) > tstep + 1:
            continue
        t = _round(xt)
        if 0 < t < tstep:
            tstep, why = t, f"tank {tank.name} {what}"
    return tstep, why


def _control_step(state: EPSState, clock: Clock, tstep: int, why: str) -> tuple[int, str]:
    """EPANET ``controltimestep``: the time until a control would change a link."""
    net = state.net
    for c in net.controls:
        if not c.enabled:
            continue
        t = _control_time(state, clock, c)
        k = state.link_index[c.link]
        is_pump = k >= len(net.pipes)
        changes = (is_pump and state.setting[k] != c.setting) or state.status_differs(k, c.status)
        if 0 < t < tstep and changes:
            tstep, why = t, f"control on line {c.line}"
    return tstep, why


def _control_time(state: EPSState, clock: Clock, c: Control) -> int:
    if c.kind == "time":
        return c.time_s - state.t if c.time_s > state.t else 0
    if c.kind == "clocktime":
        t1 = (state.t + clock.tstart) % DAY
        return c.time_s - t1 if c.time_s >= t1 else DAY - t1 + c.time_s
    i = state.tank_index.get(c.node)
    if i is None or abs(state.inflow[i]) <= QZERO:
        return 0
    q, level = state.inflow[i], state.levels()[i]
    target = _grade(net := state.net, c) - net.tanks[i].elevation
    if (level < target and c.kind == "high_level" and q > 0) or \
            (level > target and c.kind == "low_level" and q < 0):
        return _round((state.volume_at(i, target) - state.volume[i]) / q)
    return 0


def tanklevels(state: EPSState, tstep: int) -> None:
    """EPANET ``tanklevels``: explicit volume update, snapped to full or empty within 1 s."""
    for i, tank in enumerate(state.net.tanks):
        q = state.inflow[i]
        if abs(q) <= QZERO:
            continue
        state.volume[i] += q * tstep
        vmax, vmin = state.volume_at(i, tank.max_level), state.volume_at(i, tank.min_level)
        if state.volume[i] + q >= vmax:
            state.volume[i] = vmax
        elif state.volume[i] - q <= vmin:
            state.volume[i] = vmin
