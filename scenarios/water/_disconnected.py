"""EPANET's "System disconnected" check (``report.c``: ``disconnected``), after the status checks.

A closed link (in the file, by a control, or by a status check: into a full or out of an empty
tank, a check valve, a pump at shutoff) follows ``dh = CBIG q``, so it never makes the
equations singular; but a junction with demand that only a closed link joins to a supply gets
its demand through that link, at a head millions of metres off. EPANET then warns that the
system is disconnected; so does this module.
Supplies, as in EPANET: reservoirs, tanks (full or empty) and junctions with negative demand.
"""
from __future__ import annotations

import warnings

from .._islands import islands_without_reference, shown
from ._inp_types import WaterNetwork

__all__ = ["disconnected_junctions", "warn_disconnected"]


def disconnected_junctions(net: WaterNetwork, is_open, demands) -> list[str]:
    """The junctions with non-zero demand that no open link joins to a supply; ``is_open``:
    per link of ``(*net.pipes, *net.pumps)`` (open in the solve); ``demands`` per junction."""
    links = (*net.pipes, *net.pumps)
    edges = [(link.start, link.end) for link, o in zip(links, is_open) if o]
    supplies = [n.name for n in (*net.reservoirs, *net.tanks)]
    supplies += [j.name for j, d in zip(net.junctions, demands) if d < 0.0]
    cut = {n for island in islands_without_reference(net.node_names, edges, supplies)
           for n in island}
    return [j.name for j, d in zip(net.junctions, demands) if j.name in cut and d != 0.0]


def warn_disconnected(names: list[str], when: str, stacklevel: int) -> None:
    """A RuntimeWarning naming the disconnected junctions ``names`` at ``when``."""
    warnings.warn(
        f"system disconnected {when}: junction(s) {shown(names, 5)} with demand are joined to "
        "no reservoir or tank by open links (closed links cut them off: closed in the file or "
        "the graph, by a control, or by a status check, e.g. out of an empty tank), so their "
        "heads are meaningless, as in EPANET. Open a link that joins them to a supply, keep "
        "the tank from emptying (a higher initial level, a lower minimum level, a larger "
        "diameter) or give the junctions another supply (a reservoir, a pipe to the rest of "
        "the network).", RuntimeWarning, stacklevel=stacklevel + 1)
