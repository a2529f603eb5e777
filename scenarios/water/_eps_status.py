"""The link statuses EPANET 2.2 decides during a solve (``hydstatus.c``: ``linkstatus``).

A link open by its status and controls is held closed for the moment ("temporarily") when
* a check-valve pipe would pass reverse flow (``cvstatus``),
* a head pump would have to lift more than its shutoff head ``speed^2 Hmax`` (``XHEAD``), or a
  constant-power pump carries no forward flow (``pumpstatus``),
* it would fill a full tank or drain an empty one (``tankstatus``); a tank that can overflow
  (EPANET 2.2's flag) keeps its inflow when full: it spills at its maximum level.
EPANET re-opens such links at every status check and closes them again while the condition
holds; a closed link carries the tiny flow ``dh / CBIG``, so the condition is judged on the
direction of the head difference. :func:`held_closed` is one such check (JAX-free).
:func:`pressure_switch` applies the controls on junction pressure after a solve (``pswitch``).
"""
from __future__ import annotations

import numpy as np

from ._eps_time import EPSState
from ._inp_units import CFS, FT

__all__ = ["held_closed", "tank_closures", "pressure_switch", "pressure_per_ft", "MAX_CHECKS"]

HTOL = 0.0005 * FT   # EPANET's head tolerance, 0.0005 ft
QTOL = 1e-4 * CFS    # EPANET's flow tolerance, 1e-4 cfs
TINY = 1e-6 * CFS    # EPANET's TINY flow of a constant-power pump
MAX_CHECKS = 10      # EPANET's MAXCHECK: status checks per solve


def _shutoff(pump) -> float:
    """EPANET's ``Hmax`` of a head pump (m): the fit's shutoff head, or a custom curve's
    first head; infinite for a constant-power pump."""
    if pump.pump_type == "POWER":
        return np.inf
    return pump.A if pump.A is not None else pump.curve_points[0][1]


def held_closed(state: EPSState, node_heads: dict, flows: np.ndarray,
                held: np.ndarray) -> np.ndarray:
    """Which links EPANET's ``linkstatus`` would hold closed at this solution (``held``: the
    links held closed while it was solved; they may re-open)."""
    n_pipes = len(state.net.pipes)
    new = np.zeros(len(state.links), dtype=bool)
    for k, link in enumerate(state.links):
        if not state.open[k]:
            continue
        dh = node_heads[link.start] - node_heads[link.end]
        if k < n_pipes and link.check_valve:
            new[k] = _cv_closed(dh, flows[k], held[k])
        elif k >= n_pipes:
            new[k] = _pump_closed(link, state.setting[k], dh, flows[k])
        if not new[k]:
            new[k] = _tank_closed(state, link, flows[k])
    return new


def tank_closures(state: EPSState, flows: np.ndarray) -> np.ndarray:
    """EPANET ``tankstatus`` alone: which links open in ``state`` would fill a full tank or
    drain an empty one at ``flows`` (m3/s; a closed link's tiny ``dh / CBIG`` flow counts)."""
    return np.asarray([bool(state.open[k]) and _tank_closed(state, link, flows[k])
                       for k, link in enumerate(state.links)], dtype=bool)


def _cv_closed(dh: float, q: float, was_closed: bool) -> bool:
    """EPANET ``cvstatus``."""
    if abs(dh) > HTOL:
        return dh < -HTOL or q < -QTOL
    return q < -QTOL or was_closed


def _pump_closed(pump, speed: float, dh: float, q: float) -> bool:
    """EPANET ``pumpstatus`` (``dh``: head at start minus head at end)."""
    if pump.pump_type == "POWER":
        return q < TINY
    return -dh > speed ** 2 * _shutoff(pump) + HTOL


def _tank_closed(state: EPSState, link, q: float) -> bool:
    """EPANET ``tankstatus``: flow into a full tank (unless it can overflow) or out of an
    empty one."""
    for end, into in ((link.start, -q), (link.end, q)):
        i = state.tank_index.get(end)
        if i is None or (state.curves[i] is None and state.area[i] <= 0.0):
            continue  # EPANET: a tank of area 0 is a fixed-head node
        fills = into > 0.0 and not state.net.tanks[i].can_overflow
        if (state.is_full(i) and fills) or (state.is_empty(i) and into < 0.0):
            return True
    return False


#: File pressure units per ft of head (EPANET's ``Ucf[PRESSURE]`` before specific gravity).
_PRESSURE_PER_FT = {"PSI": 0.4333, "KPA": 6.895 * 0.4333, "METERS": FT}


def pressure_per_ft(net) -> float:
    """The file's pressure units per ft of water, times the SPECIFIC GRAVITY, as EPANET 2.2's
    ``Ucf[PRESSURE]`` (``adjustdata``, ``initunits``): PSI for US flow units, whatever PRESSURE
    says; for SI ones kPa if PRESSURE is KPA, else metres (PSI, the default, becomes METERS)."""
    opts = {k.upper(): v for k, v in net.options.items()}
    kpa = opts.get("PRESSURE", "").upper().startswith("KPA")
    unit = "PSI" if net.units.is_us else "KPA" if kpa else "METERS"
    return _PRESSURE_PER_FT[unit] * float(opts.get("SPECIFIC GRAVITY", 1.0))


def pressure_switch(state: EPSState, node_heads: dict) -> bool:
    """EPANET ``pswitch``: apply each enabled control on a junction's pressure whose
    condition holds; True when a link's status or setting changed."""
    net, anychange = state.net, False
    elevations = {j.name: j.elevation for j in net.junctions}
    per_ft = pressure_per_ft(net)
    for c in net.controls:
        if not c.enabled or c.node not in elevations:
            continue
        grade = elevations[c.node] + c.level / per_ft * FT
        h = node_heads[c.node]
        if not ((c.kind == "low_level" and h <= grade + HTOL)
                or (c.kind == "high_level" and h >= grade - HTOL)):
            continue
        k = state.link_index[c.link]
        is_pump = k >= len(net.pipes)
        change = state.setting[k] != c.setting if is_pump else state.status_differs(k, c.status)
        if change:
            state.open[k], state.held[k] = c.status == "OPEN", False
            if is_pump:
                state.setting[k] = c.setting
            anychange = True
    return anychange
