"""The link statuses EPANET 2.2 decides during a solve (``hydstatus.c``: ``linkstatus``).

A link open by its status and controls is held closed for the moment ("temporarily") when
* a check-valve pipe would pass reverse flow (``cvstatus``),
* a head pump would have to lift more than its shutoff head ``speed^2 Hmax`` (``XHEAD``), or a
  constant-power pump carries no forward flow (``pumpstatus``),
* it would fill a full tank or drain an empty one (``tankstatus``).
EPANET re-opens such links at every status check and closes them again while the condition
holds; a closed link carries the tiny flow ``dh / CBIG``, so the condition is judged on the
direction of the head difference. :func:`held_closed` is one such check (JAX-free).
"""
from __future__ import annotations

import numpy as np

from ._eps_time import EPSState
from ._inp_units import CFS, FT

__all__ = ["held_closed", "MAX_CHECKS"]

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
    net, n_pipes = state.net, len(state.net.pipes)
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
    """EPANET ``tankstatus``: flow into a full tank or out of an empty one."""
    for end, into in ((link.start, -q), (link.end, q)):
        i = state.tank_index.get(end)
        if i is None:
            continue
        if (state.is_full(i) and into > 0.0) or (state.is_empty(i) and into < 0.0):
            return True
    return False
