"""``build_circuit``: a parsed :class:`Netlist` as a graph of element objects.

Every node name becomes one shared :class:`Node` object; every ``.model`` one shared
:class:`DiodeModel`; one :class:`Physics` (Vt from the temperature, GMIN from ``.options``)
is shared by all diodes. Topology errors are found here, before any Newton iteration.
"""
from __future__ import annotations

import math

import numpy as np

import solvers

from ._elements import (Capacitor, Circuit, CurrentSource, Diode, DiodeModel, Ground, Inductor,
                        Node, Physics, Resistor, VoltageSource, ZenerDiode)
from ._netlist import GROUND, Netlist, Transient
from ._netlist import Capacitor as CapacitorCard
from ._netlist import Inductor as InductorCard
from ._netlist import CurrentSource as CurrentSourceCard
from ._netlist import Diode as DiodeCard
from ._netlist import Resistor as ResistorCard
from ._netlist import VoltageSource as VoltageSourceCard
from ._topology import CircuitError, check_topology
from ._waveforms import waveform

__all__ = ["build_circuit", "thermal_voltage", "breakdown_voltage", "K_BOLTZMANN", "Q_CHARGE",
           "GMIN_DEFAULT"]

#: ngspice-39's constants (CODATA 2014): Vt(27 C) = 0.025864917007157463 V.
K_BOLTZMANN = 1.38064852e-23
Q_CHARGE = 1.6021766208e-19
GMIN_DEFAULT = 1e-12
TNOM_DEFAULT = 27.0


def thermal_voltage(celsius: float) -> float:
    """``k T / q`` in volts at ``celsius`` degrees, with ngspice's constants."""
    return K_BOLTZMANN * (celsius + 273.15) / Q_CHARGE


def build_circuit(netlist: Netlist, *, gmin: float | None = None,
                  transient: Transient | None = None, start=None) -> Circuit:
    """The circuit graph of ``netlist`` (unknowns start at 0 V / 0 A, or node voltages from
    ``start``: {node: volts}).

    ``gmin`` (S) overrides ``.options gmin`` (default 1e-12, as ngspice). With ``transient``
    (a ``.tran`` card) sources follow their waveforms on a shared ``solvers.Clock`` (defaults
    from its tstep/tstop); without, they hold their DC values. Raises ``CircuitError`` for a
    floating node, a loop of voltage sources or an unsupported model.
    """
    check_topology(netlist)
    _check_temperature(netlist)
    gmin = _gmin(netlist.options.get("gmin", GMIN_DEFAULT) if gmin is None else gmin)
    ground, physics = Ground(), Physics(thermal_voltage(netlist.temperature), gmin)
    start = start or {}
    nodes = {name: Node(float(start.get(name, 0.0))) for name in netlist.nodes}
    node = lambda name: ground if name == GROUND else nodes[name]  # noqa: E731
    models = {name: _model(netlist, name) for name in netlist.models}
    resistors, diodes, vsources, isources, internal = {}, {}, {}, {}, {}
    capacitors, inductors = {}, {}
    wave = _waves(transient)
    for e in netlist.elements:
        if isinstance(e, CapacitorCard):
            capacitors[e.name] = Capacitor(node(e.n1), node(e.n2), float(e.value))
        elif isinstance(e, InductorCard):
            inductors[e.name] = Inductor(node(e.n1), node(e.n2), float(e.value))
        elif isinstance(e, ResistorCard):
            resistors[e.name] = Resistor(node(e.n1), node(e.n2), _resistance(e.name, e.value))
        elif isinstance(e, DiodeCard):
            anode = node(e.anode)
            rs = netlist.models[e.model].RS
            if rs != 0.0:
                anode = internal[e.name] = Node()
                resistors[e.name + "#rs"] = Resistor(node(e.anode), anode,
                                                     _resistance(e.name + " RS", rs / e.area))
            diodes[e.name] = _diode(netlist, e, (anode, node(e.cathode)), models[e.model],
                                    physics)
        elif isinstance(e, VoltageSourceCard):
            vsources[e.name] = VoltageSource(node(e.pos), node(e.neg), float(e.dc),
                                             wave=wave(e.wave))
        elif isinstance(e, CurrentSourceCard):
            isources[e.name] = CurrentSource(node(e.pos), node(e.neg), float(e.dc),
                                             wave=wave(e.wave))
    return Circuit(ground, physics, nodes, internal, models, resistors, diodes, vsources,
                   isources, capacitors, inductors)


def _waves(transient: Transient | None):
    """``card -> waveform node`` on one shared clock (None for DC, or for no waveform)."""
    if transient is None:
        return lambda card: None
    clock = solvers.Clock()
    return lambda card: None if card is None else waveform(
        card.kind, card.params, clock, transient.tstep, transient.tstop)


def _diode(netlist: Netlist, e: DiodeCard, nodes: tuple, model: DiodeModel, physics: Physics):
    """A :class:`Diode`, or a :class:`ZenerDiode` when its model has BV: its breakdown voltage
    as ngspice matches it to IBV for this diode's saturation current (IS x area, IBV x m)."""
    card = netlist.models[e.model]
    if card.BV is None:
        return Diode(*nodes, model, physics, e.area)
    bv = breakdown_voltage(card.BV, e.m * card.IBV, card.IS * e.area, card.N * physics.vt,
                           physics.vt, netlist.options.get("reltol", 1e-3))
    if not bv > 0:
        raise _error(f".model {e.model}: BV={card.BV:g} with IBV={card.IBV:g} gives ngspice's "
                     f"matched breakdown voltage tBrkdwnV = {bv:.3g} V, not positive: not "
                     "supported", "raise BV or lower IBV")
    return ZenerDiode(*nodes, model, physics, e.area, bv)


def _model(netlist: Netlist, name: str) -> DiodeModel:
    card = netlist.models[name]
    if not (card.IS > 0 and card.N > 0 and card.RS >= 0):
        raise _error(f".model {name}: need IS > 0, N > 0 and RS >= 0, got IS={card.IS:g}, "
                     f"N={card.N:g}, RS={card.RS:g}", "fix the model card")
    if card.BV is not None and not (0 < card.BV < math.inf and 0 < card.IBV < math.inf):
        raise _error(f".model {name}: need BV > 0 and IBV > 0 (finite), got BV={card.BV:g}, "
                     f"IBV={card.IBV:g}", "give the breakdown voltage as a positive number "
                     "of volts, or remove BV for a diode without breakdown")
    return DiodeModel(float(card.IS), float(card.N))


def breakdown_voltage(bv: float, ibv: float, csat: float, vtebrk: float, vt: float,
                      reltol: float = 1e-3) -> float:
    """ngspice's ``DIOtBrkdwnV`` (diotemp.c): the voltage ``xbv`` in ``-csat exp(-(xbv + v) /
    vtebrk)`` at which the reverse current reaches ``ibv`` at ``v = -bv``, found by its own
    fixed-point iteration to ``reltol`` (its early stop kept: results match ngspice's)."""
    if ibv < csat * bv / vt:  # IBV below what IS gives at BV: ngspice raises it, keeps BV
        return float(bv)
    xbv = bv - vtebrk * math.log(1.0 + ibv / csat)
    for _ in range(25):
        xbv = bv - vtebrk * math.log(ibv / csat + 1.0 - xbv / vt)
        reached = csat * (math.exp((bv - xbv) / vtebrk) - 1.0 + xbv / vt)
        if abs(reached - ibv) <= reltol * ibv:
            break
    return float(xbv)


def _gmin(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise _error(f".options gmin={value!r} is not usable", "give a conductance >= 0 in "
                     "siemens, e.g. gmin=1e-12 (ngspice's default)")
    return float(value)


def _resistance(name: str, value: float) -> float:
    if value == 0.0 or not math.isfinite(value):
        raise _error(f"{name}: resistance {value!r} ohm is not usable",
                     "use a finite non-zero value; short two nodes with a 0 V voltage source")
    return float(value)


def _check_temperature(netlist: Netlist) -> None:
    """Each diode's model is at TNOM (its own TNOM, else ``.options tnom``), as no parameter
    is scaled with temperature; without diodes, ``.options tnom`` is."""
    tnom = netlist.options.get("tnom", TNOM_DEFAULT)
    used = dict.fromkeys(e.model for e in netlist.elements if isinstance(e, DiodeCard))
    for name in used:
        own = dict(netlist.models[name].params).get("TNOM")
        if own is not None and not np.isclose(netlist.temperature, own, rtol=0.0, atol=1e-12):
            raise _error(f".temp {netlist.temperature:g} differs from TNOM={own:g} of .model "
                         f"{name}: temperature scaling of diode parameters is not supported",
                         f"remove TNOM from the model or set .temp {own:g}")
    if used and all("TNOM" in dict(netlist.models[name].params) for name in used):
        return
    if not np.isclose(netlist.temperature, tnom, rtol=0.0, atol=1e-12):
        raise _error(f".temp {netlist.temperature:g} differs from TNOM {tnom:g}: temperature "
                     "scaling of diode parameters is not supported",
                     f"simulate at TNOM (.temp {tnom:g}) or give parameters measured at that "
                     "temperature")


def _error(problem: str, hint: str) -> CircuitError:
    return CircuitError(f"{problem}. {hint[:1].upper() + hint[1:]}.")
