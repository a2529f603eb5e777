"""The map of a solved power flow: buses coloured by voltage magnitude, branches by loading,
at a layout computed from the graph (MATPOWER cases carry no bus coordinates)."""
from __future__ import annotations

from typing import Any

import numpy as np

from .._maps import NetworkMap, draw_map, positions
from ._tables import branch_columns

__all__ = ["power_map", "draw_power_flow"]


def _branch_colours(result: Any) -> tuple[np.ndarray, str, np.ndarray]:
    """(values, label, direction): loading (%) where branches are rated, else |P| (MW)."""
    columns = branch_columns(result)
    direction = np.sign(columns["p_from_mw"])
    if np.isfinite(columns["loading_percent"]).any():
        return columns["loading_percent"], "branch loading (% of RATE_A)", direction
    return np.abs(columns["p_from_mw"]), "|P| sent into the branch (MW)", direction


def power_map(result: Any, title: str = "") -> NetworkMap:
    """Buses (slack: square, PV: triangle) coloured by Vm (p.u.); branches by loading, arrows
    in the direction of the active power flow."""
    case = result.model.case
    names = [str(b.id) for b in case.buses]
    pairs = list(zip(case.branch_array("from_index").tolist(),
                     case.branch_array("to_index").tolist()))
    xy, where = positions(names, {}, pairs)
    values, label, direction = _branch_colours(result)
    return NetworkMap(names, xy, np.asarray([result.bus(b.id).vm for b in case.buses]),
                      "voltage magnitude (p.u.)", pairs, values, label,
                      title or "bus voltages and branch loading", where,
                      direction=direction, kinds=[b.type for b in case.buses],
                      markers={"slack": "s", "PV": "^"}, link_cmap="plasma",
                      chart_axes=("bus (case order)", "branches"))


def draw_power_flow(fig, result: Any, title: str = "") -> None:
    """Draw :func:`power_map` of ``result`` into a matplotlib figure (for cases too large for
    a readable map: the voltage by bus and the histogram of branch loadings)."""
    draw_map(fig, power_map(result, title))
