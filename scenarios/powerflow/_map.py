"""The picture of a solved power flow: a map of the buses coloured by voltage magnitude and
the branches by loading, at a layout computed from the graph (MATPOWER cases carry no bus
coordinates); for cases too large for a readable map, the voltage profile and the loading
histogram."""
from __future__ import annotations

from typing import Any

import numpy as np

from .._layout import MAX_LAYOUT_NODES
from .._maps import NetworkMap, draw_map, positions

__all__ = ["power_map", "draw_power_flow"]


def _branch_colours(result: Any) -> tuple[np.ndarray, str, np.ndarray]:
    """(values, label, direction): loading (%) where branches are rated, else |P| (MW)."""
    table = result.to_frame("branch")
    direction = np.sign(table["p_from_mw"].to_numpy())
    if table["loading_percent"].notna().any():
        return table["loading_percent"].to_numpy(), "branch loading (% of RATE_A)", direction
    return np.abs(table["p_from_mw"].to_numpy()), "|P| sent into the branch (MW)", direction


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
                      markers={"slack": "s", "PV": "^"}, link_cmap="plasma")


def draw_power_flow(fig, result: Any, title: str = "") -> None:
    """The map of ``result`` (:func:`power_map`), or for large cases the voltage profile by
    bus and the histogram of branch loadings."""
    if len(result.model.case.buses) <= MAX_LAYOUT_NODES:
        draw_map(fig, power_map(result, title))
        return
    bus, branch = result.to_frame("bus"), result.to_frame("branch")
    left, right = fig.subplots(1, 2)
    left.plot(np.arange(len(bus)), bus["vm_pu"].to_numpy(), ".", ms=2)
    left.set_xlabel("bus (case order)")
    left.set_ylabel("Vm (p.u.)")
    left.set_title("voltage profile")
    values, label, _ = _branch_colours(result)
    right.hist(values[np.isfinite(values)], bins=40, color="tab:purple")
    right.set_xlabel(label)
    right.set_ylabel("branches")
    right.set_title(f"{len(branch)} branches")
    fig.suptitle(title, fontsize=10)
