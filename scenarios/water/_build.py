"""``build_water``: the t = 0 snapshot of a parsed ``.inp`` network as a graph of elements.

Every node becomes one shared element object that its links reference; one ``Hydraulics`` holds
the constants and is shared by all elements. Links closed at t = 0 (or pumps at speed 0) stay
in, with EPANET's closed-link law ``dh = CBIG q`` (``_closed.py``). Unknowns start where
EPANET starts: pipe flows at 1 ft/s, pump flows at the design flow (times the speed), heads
at the mean fixed head (Newton does not depend on it: the equations are linear in the heads).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from .._islands import IslandError, islands_without_reference, shown
from ._closed import closed_resistance, switched
from ._constants import WaterConstants, resolve_constants
from ._elements import (CurvePump, Hydraulics, Junction, Pipe, PowerPump, Pump, Reservoir, Tank,
                        WaterGraph)
from ._inp_types import Pump as PumpData
from ._inp_types import NotModelled, WaterNetwork
from ._inp_units import CFS, FT

__all__ = ["build_graph", "check_islands", "is_open"]


def is_open(link) -> bool:
    """Is the pipe or pump open at t = 0 (pumps at speed 0 count as closed)?"""
    if link.status_t0 == "CLOSED":
        return False
    return not isinstance(link, PumpData) or link.speed_t0 != 0.0


def build_graph(network: WaterNetwork, constants="epanet") -> tuple[WaterGraph, WaterConstants]:
    """The ``WaterGraph`` of ``network`` and the constants used (see ``resolve_constants``)."""
    check_headloss(network)
    consts = resolve_constants(network, constants)
    check_islands(network)
    hyd, junctions, reservoirs, tanks = build_nodes(network, consts)
    nodes = {**junctions, **reservoirs, **tanks}
    ratio = network.units.epanet_flow_ratio
    closed_r = closed_resistance(ratio)
    pipes = {p.name: _closed_at_t0(p, Pipe(nodes[p.start], nodes[p.end], hyd, p.length,
                                           p.diameter, p.roughness, p.minor_loss,
                                           FT * math.pi * p.diameter ** 2 / 4.0), closed_r)
             for p in network.pipes}
    pumps = {p.name: _closed_at_t0(p, _pump(p if is_open(p) else dataclasses.replace(
        p, speed_t0=1.0), nodes, hyd, consts, ratio), closed_r) for p in network.pumps}
    return WaterGraph(hyd, junctions, reservoirs, tanks, pipes, pumps), consts


def _closed_at_t0(data, element, closed_r: float):
    """``element`` as built if the link is open at t = 0, else closed as EPANET closes it:
    kept in the equations with ``dh = CBIG q`` (its tiny flow enters the mass balance)."""
    return element if is_open(data) else switched(element, 0.0, closed_r)


def check_headloss(network: WaterNetwork) -> None:
    """Refuse a head-loss formula other than Hazen-Williams, saying what to do."""
    if network.headloss != "H-W":
        raise NotModelled(
            f"network {(network.title.strip().splitlines() or [''])[0]!r} uses the "
            f"{network.headloss} head-loss formula; only Hazen-Williams (H-W) is modelled. "
            "Convert the roughness to H-W C values.", "HEADLOSS")


def build_nodes(network: WaterNetwork, consts: WaterConstants) -> tuple:
    """``(hydraulics, junctions, reservoirs, tanks)``: the shared constants node and the nodes
    by name (junction heads start at the mean fixed head)."""
    hyd = Hydraulics(consts.k_hw, consts.minor_g, consts.rho_g, consts.rq_tol,
                     consts.regularisation, consts.max_gradient, 1.0)
    fixed = [r.head for r in network.reservoirs] + [t.head for t in network.tanks]
    h0 = float(np.mean(fixed)) if fixed else 0.0
    junctions = {j.name: Junction(hyd, j.elevation, j.demand, h0) for j in network.junctions}
    reservoirs = {r.name: Reservoir(r.head) for r in network.reservoirs}
    tanks = {t.name: Tank(t.elevation, t.init_level) for t in network.tanks}
    return hyd, junctions, reservoirs, tanks


def _pump(p: PumpData, nodes: dict, hyd: Hydraulics, consts: WaterConstants, ratio: float):
    a, b = nodes[p.start], nodes[p.end]
    w = p.speed_t0
    if p.pump_type == "POWER":
        return PowerPump(a, b, hyd, p.power, w, w * CFS / ratio)  # EPANET starts at 1 cfs
    points = p.curve_points
    if p.curve_model != "power":
        flows = np.asarray([q for q, _ in points], dtype=np.float64)
        heads = np.asarray([h for _, h in points], dtype=np.float64)
        return CurvePump(a, b, hyd, flows, heads, w, w * 0.5 * (flows[0] + flows[-1]))
    shutoff, coefficient, exponent = p.A, p.B, p.C
    if consts.pump_fit == "wntr" and len(points) == 1:
        (q1, h1), = points
        shutoff, coefficient, exponent = 4.0 / 3.0 * h1, h1 / (3.0 * q1 ** 2), 2.0
    design = points[0][0] if len(points) == 1 else points[1][0]
    return Pump(a, b, hyd, shutoff, coefficient, exponent, w, w * design)


def check_islands(network: WaterNetwork) -> None:
    """Raise ``IslandError`` naming the junctions that no link at all joins to a reservoir or
    tank: their heads are undefined. A closed link counts (EPANET keeps it with ``dh = CBIG
    q``, and a control may open it); the demand junctions that only closed links join to a
    supply get a RuntimeWarning when solved (``_disconnected.py``)."""
    links = [(link.start, link.end) for link in (*network.pipes, *network.pumps)]
    fixed = [r.name for r in network.reservoirs] + [t.name for t in network.tanks]
    islands = islands_without_reference(network.node_names, links, fixed)
    if islands:
        names = [n for island in islands for n in island]
        raise IslandError(
            f"network {network.title!r}: junction(s) {shown(names)} are not linked (by any "
            f"link, open or closed) to any reservoir or tank ({len(islands)} island(s)), so "
            "their heads are undefined. Add a link that joins them to the rest of the "
            "network, or a reservoir or tank to each island.", tuple(names))
