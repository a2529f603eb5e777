"""Tables of a water solution (WNTR's node and link results): heads, pressures, demands by
node id; flows, velocities, head losses by link id. SI units, named in the columns."""
from __future__ import annotations

import math
from typing import Any

from .._tables import pandas

__all__ = ["node_frame", "link_frame"]


def node_frame(result: Any) -> Any:
    """One row per node (index ``node``, file order): ``type``, ``elevation_m`` (a
    reservoir's: its head), ``head_m``, ``pressure_m``, ``demand_m3s`` (as ``result.demand``)."""
    net = result.model.network
    kinds = [("junction", n) for n in net.junctions] + [("reservoir", n) for n in
                                                         net.reservoirs]
    kinds += [("tank", n) for n in net.tanks]
    rows = [{"type": kind, "head_m": result.head(n.name), "pressure_m": result.pressure(n.name),
             "demand_m3s": result.demand(n.name)} for kind, n in kinds]
    for row, (kind, n) in zip(rows, kinds):
        row["elevation_m"] = row["head_m"] if kind == "reservoir" else n.elevation
    columns = ["type", "elevation_m", "head_m", "pressure_m", "demand_m3s"]
    index = pandas().Index([n.name for _, n in kinds], name="node")
    return pandas().DataFrame(rows, index=index, columns=columns)


def link_frame(result: Any) -> Any:
    """One row per link (index ``link``, file order): ``type``, ``start``, ``end``, ``status``
    (in the solve: ``CLOSED`` in the file, by a control or a status check), ``flow_m3s``
    (start to end), ``velocity_m_s`` (|flow| / pipe area; NaN for pumps), ``headloss_m`` (head
    at start minus head at end: negative across a pump that lifts)."""
    net = result.model.network
    links = [("pipe", p) for p in net.pipes] + [("pump", p) for p in net.pumps]
    rows = []
    for kind, link in links:
        flow = result.flow(link.name)
        area = math.pi * link.diameter ** 2 / 4.0 if kind == "pipe" else math.nan
        rows.append({"type": kind, "start": link.start, "end": link.end,
                     "status": "OPEN" if result.status(link.name) else "CLOSED",
                     "flow_m3s": flow,
                     "velocity_m_s": abs(flow) / area,
                     "headloss_m": result.head(link.start) - result.head(link.end)})
    index = pandas().Index([link.name for _, link in links], name="link")
    return pandas().DataFrame(rows, index=index)
