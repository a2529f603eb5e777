"""A netlist's ``.tran`` analysis: the circuit stepped through time with ``solvers.simulate``.

Tolerances come from ``.options`` as ngspice reads them: ``reltol`` (default 1e-3) is the
relative tolerance of every unknown, ``vntol`` (1e-6 V) the absolute one of node voltages,
``abstol`` (1e-12 A) that of branch currents, ``trtol`` (7) loosens the truncation-error
test as ngspice's does; ``method=gear`` integrates with variable-coefficient BDF2 instead of
the trapezoidal rule (``method=trap``, the default) and ``maxord=1`` with backward Euler
only; ``chgtol`` has no counterpart (errors are estimated on the voltages
and currents that charges and fluxes depend on, not on the charges) and is ignored. Without ``uic`` the run starts from the DC operating point with every
source at its t = 0 value, every unknown (node voltages, inductor and source currents) carried
into the transient; ``.ic v(n)=...`` holds those nodes during that operating point as ngspice
does, through a 1e10 S conductance to the given value (``cktload.c``). ``uic`` skips the
operating point: the run starts from the ``.ic`` voltages, every other node at 0 V, capacitors
uncharged and inductor currents 0 (ngspice does not print that t = 0 point; we do).
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Union

import numpy as np

import solvers

from .._tables import pandas
from .._trajectories import trajectories
from ._build import build_circuit
from ._elements import Circuit
from ._netlist import GROUND, SPICE_METHODS, Netlist, Transient
from ._netlist import CurrentSource as CurrentSourceCard
from ._netlist import Resistor as ResistorCard
from ._solve import default_solver, solve_circuit
from ._spice_reader import read_netlist
from ._topology import CircuitError
from ._tran_messages import deck_message
from ._tran_times import tran_problem

__all__ = ["CircuitTransient", "simulate_circuit", "integrator_for"]

TransientInput = Union[Netlist, str, os.PathLike]
#: The conductance (S) by which ngspice holds a ``.ic`` node during the operating point.
IC_CONDUCTANCE = 1e10
#: The smallest step over the largest (``Transient.step_limit``): ngspice-39's ``delmin =
#: 1e-11 * maxStep`` (traninit.c); no option sets it, a smaller tmax lowers it.
MIN_STEP_FRACTION = 1e-11


@dataclasses.dataclass(frozen=True)
class CircuitTransient:
    """Waveforms of a ``.tran`` run on its output grid, by netlist name.

    ``time`` (G,); ``node_voltages`` / ``source_currents`` / ``inductor_currents``: name ->
    (G,) arrays; ``solution`` the ``solvers.TransientSolution`` (accepted steps, statistics).
    """

    time: np.ndarray
    node_voltages: dict
    source_currents: dict
    inductor_currents: dict
    solution: Any
    integrator: solvers.Integrator | None = None

    @property
    def converged(self) -> bool:
        return bool(np.all(np.asarray(self.solution.converged)))

    def voltage(self, node: str) -> np.ndarray:
        return _named(self.node_voltages, node, "node")

    def source_current(self, name: str) -> np.ndarray:
        return _named(self.source_currents, name, "voltage source")

    def message(self) -> str:
        """How the run ended; a failure says what a deck can change."""
        return deck_message(self.solution, self.integrator)

    def to_json(self) -> dict:
        """``{"analysis": "tran", "time": [...], "node_voltages": {...}, ...}`` plus run stats;
        ``residual_norm`` is null (a transient's steps converge on their update's size)."""
        lists = lambda d: {k: np.asarray(v).tolist() for k, v in d.items()}  # noqa: E731
        sol = self.solution
        return {"analysis": "tran", "time": self.time.tolist(),
                "node_voltages": lists(self.node_voltages),
                "source_currents": lists(self.source_currents),
                "inductor_currents": lists(self.inductor_currents),
                "converged": self.converged, "result": self.message(),
                "iterations": int(sol.n_newton), "accepted_steps": int(sol.n_steps),
                "rejected_steps": int(sol.n_rejected),
                # each step converges on its update's size; no residual is kept
                "residual_norm": None}

    def to_frame(self):
        """The waveforms as a pandas DataFrame: one row per time point (index ``time_s``),
        columns ``V(node)``, ``I(V1)`` and ``I(L1)`` as in ngspice; needs pandas."""
        columns = {f"V({k})": v for k, v in self.node_voltages.items()}
        columns.update({f"I({k})": v for k, v in self.source_currents.items()})
        columns.update({f"I({k})": v for k, v in self.inductor_currents.items()})
        pd = pandas()
        return pd.DataFrame({k: np.asarray(v) for k, v in columns.items()},
                            index=pd.Index(self.time, name="time_s"))


def _named(table: dict, name: str, what: str) -> np.ndarray:
    for key, value in table.items():
        if key.lower() == name.lower():
            return value
    raise KeyError(f"no {what} named {name!r}; known: {', '.join(table) or 'none'}")


def _option(netlist: Netlist, name: str, default: float) -> float:
    value = netlist.options.get(name, default)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        and value > 0 else default


def _method(netlist: Netlist) -> str:
    """The deck's ``.options method=`` as an ``Integrator`` method (trapezoidal by default)."""
    word = netlist.options.get("method", "trap")
    if not isinstance(word, str) or word.lower() not in SPICE_METHODS:
        raise ValueError(f".options method={word!r}: use trap or gear")
    return SPICE_METHODS[word.lower()]


def integrator_for(netlist: Netlist, system: solvers.System, tran: Transient,
                   max_steps: int = 200000, save_steps: bool = False) -> solvers.Integrator:
    """The ``solvers.Integrator`` of a deck: its tolerances, ``tmax`` as the largest step and
    :data:`MIN_STEP_FRACTION` of it as the smallest (ngspice's delmin).
    ``save_steps`` keeps every accepted state (needed for gradients; memory max_steps x n)."""
    vntol, abstol = _option(netlist, "vntol", 1e-6), _option(netlist, "abstol", 1e-12)
    atol = tuple(vntol if path.endswith(".v") else abstol for path in system.unknown_paths())
    order = 1 if _option(netlist, "maxord", 2.0) < 2 else 2
    return solvers.Integrator(rtol=_option(netlist, "reltol", 1e-3), atol=atol,
                              method=_method(netlist), order=order,
                              lte_factor=_option(netlist, "trtol", 7.0), hmax=tran.step_limit(),
                              hmin=MIN_STEP_FRACTION * tran.step_limit(), max_steps=max_steps,
                              save_steps=save_steps)


def _start(netlist: Netlist, tran: Transient) -> tuple[Circuit, str]:
    """The circuit to integrate, its unknowns at the start, and how to start (``"dc"``: from
    the operating point that ``solvers.simulate`` finds; ``"given"``: from the unknowns)."""
    ic = netlist.initial_conditions
    if tran.uic:
        return build_circuit(netlist, transient=tran, start=dict(ic)), "given"
    circuit = build_circuit(netlist, transient=tran)
    if not ic:
        return circuit, "dc"
    system, x = _held_operating_point(netlist, tran)
    index = {path: k for k, path in enumerate(system.unknown_paths())}
    own = solvers.System.build(circuit)
    start = np.asarray(x)[[index[path] for path in own.unknown_paths()]]
    return own.to_graph(start), "given"


def _held_operating_point(netlist: Netlist, tran: Transient):
    """The operating point with every ``.ic`` node pulled to its value through
    :data:`IC_CONDUCTANCE` (a Norton source: no loop with the deck's sources, no new unknown);
    returns its ``System`` and solution vector."""
    ic = netlist.initial_conditions
    held, r = [], 1.0 / IC_CONDUCTANCE
    for k, (node, value) in enumerate(ic.items()):  # value / r: no current at v = value exactly
        held += [ResistorCard(f"R#ic{k}", node, GROUND, r),
                 CurrentSourceCard(f"I#ic{k}", GROUND, node, value / r)]
    dc = dataclasses.replace(netlist, elements=netlist.elements + tuple(held),
                             initial_conditions={})
    point = solve_circuit(build_circuit(dc, transient=tran))
    if not point.converged:
        raise solvers.SolveError(f"the operating point with .ic held did not converge: "
                                 f"{point.message()}")
    vntol, reltol = _option(netlist, "vntol", 1e-6), _option(netlist, "reltol", 1e-3)
    for node, value in ic.items():
        got = point.voltage(node)
        if abs(got - value) > vntol + reltol * abs(value):
            raise _unheld(node, value, got)
    return solvers.System.build(point.names), point.solution.x  # the build is a cache hit


def _unheld(node: str, value: float, got: float) -> CircuitError:
    return CircuitError(
        f".ic v({node})={value:g}: node {node!r} is fixed at {got:g} V at the operating point "
        f"(by voltage sources or inductors, a short at DC, or a conducting diode), so it cannot "
        f"start at {value:g} V (holding it would drive {IC_CONDUCTANCE * abs(value - got):.3g} A "
        f"through them). Remove v({node}) from the .ic card, give it {got:g}, or add uic to the "
        ".tran card to start from the .ic values without an operating point.")


def simulate_circuit(netlist: TransientInput, tran: Transient | None = None, *,
                     integrator: solvers.Integrator | None = None,
                     times=None) -> CircuitTransient:
    """Run the deck's ``.tran`` (or ``tran``); output on ``tstart + k tstep`` up to tstop
    (or on ``times``)."""
    netlist = netlist if isinstance(netlist, Netlist) else read_netlist(netlist)
    tran = tran or next((a for a in netlist.analyses if isinstance(a, Transient)), None)
    if tran is None:
        raise ValueError(f"netlist {netlist.title!r} has no .tran analysis; give one "
                         "(scenarios.circuits.Transient(tstep, tstop))")
    bad = tran_problem(tran.tstep, tran.tstop, tran.tstart, tran.tmax)
    if bad is not None:  # a Transient given here is no part of the checked Netlist
        raise ValueError(f"{tran}: {bad[1]}; {bad[2]}")
    circuit, initial = _start(netlist, tran)
    system = solvers.System.build(circuit)
    cfg = integrator or integrator_for(netlist, system, tran)
    grid = tran.times() if times is None else np.asarray(times, dtype=float)
    sol = solvers.simulate(system, grid, t0=0.0, integrator=cfg, initial=initial)
    of = trajectories(sol)
    return CircuitTransient(
        grid, {k: of(v)[:, 0] for k, v in circuit.nodes.items()},
        {k: of(v)[:, -1] for k, v in circuit.vsources.items()},
        {k: of(v)[:, -1] for k, v in circuit.inductors.items()}, sol, cfg)
