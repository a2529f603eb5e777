"""``python -m scenarios run circuit``: the operating point, a DC sweep or the transient of a
SPICE netlist."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .._cli_report import (Report, SweepSpec, failed_note, named_rows, plot_bars, plot_lines, sweep_rows,
                           sweep_span)
from .._errors import FormatError
from ._build import _check_temperature, _model
from ._netlist import DCSweep, Netlist, Transient, VoltageSource
from ._topology import CircuitError
from ._solve import solve_circuit, sweep_circuit
from ._spice_reader import read_deck
from ._transient import simulate_circuit

__all__ = ["EXAMPLE", "run"]

#: The shipped example: a diode ladder of the validation set (ngspice: V(2) = 2.42856 V).
EXAMPLE = Path(__file__).resolve().parent.parent / "data" / "circuits" / "ladder_rd_5.cir"


def run(input: str | os.PathLike | None = None, sweep: SweepSpec | None = None,
        solver: Any = None, progress: bool | None = None) -> Report:
    """Solve the netlist (default: :data:`EXAMPLE`). A deck with ``.tran`` runs its
    transient (``sweep`` and a ``.dc`` card are refused there: one analysis per run);
    otherwise ``sweep`` (``V1=0:5:51``: a source by name) or else the netlist's ``.dc``
    analysis runs as one batched solve, or the ``.op`` operating point is computed."""
    netlist, name, lines = read_deck(input or EXAMPLE)
    _check_cards(netlist, name, lines)
    dc = next((a for a in netlist.analyses if isinstance(a, DCSweep)), None)
    if any(isinstance(a, Transient) for a in netlist.analyses):
        _check_transient_run(name, lines, sweep)
        return _transient_report(netlist)
    if sweep is not None:
        return _sweep_report(netlist, sweep.param, sweep.values, solver, progress)
    if dc is not None:
        return _sweep_report(netlist, dc.source, dc.points(), solver, progress)
    result = solve_circuit(netlist, solver=solver)
    doc = result.to_json()
    doc["diode_currents"] = result.diode_currents()
    rows = (named_rows("V({})", doc["node_voltages"], "V")
            + named_rows("I({})", doc["source_currents"], "A")
            + named_rows("I({})", doc["diode_currents"], "A"))
    notes = [] if result.converged else [result.message()]

    def draw(fig):
        plot_bars(fig.add_subplot(), doc["node_voltages"], "voltage (V)",
                  f"DC operating point: {_title(netlist)}", "tab:blue", xlabel="node")

    return Report.from_doc("circuit", doc, rows, solver, draw, title=_title(netlist),
                           notes=notes, tables=lambda: {"circuit": result.to_frame()})


def _check_transient_run(name: str, lines: dict[str, int], sweep: SweepSpec | None) -> None:
    """A ``.tran`` deck runs its transient only: refuse a ``--sweep`` or a ``.dc`` card,
    which would otherwise be dropped without a word."""
    tran = lines[".tran"]
    if sweep is not None:
        raise FormatError(
            name, tran, f"--sweep {sweep.param}=... sweeps the DC solution, but this deck's "
            ".tran card asks for a transient, and a transient cannot be swept here",
            "drop --sweep to run the transient, or remove the .tran card (in a copy of the "
            "deck) to run the DC sweep; to run the transient for several values, call "
            "scenarios.circuits.simulate_circuit once per value from Python")
    if ".dc" in lines:
        raise FormatError(
            name, lines[".dc"], f"this deck has both .dc and .tran (line {tran}), but run "
            "circuit runs one analysis (the .dc would be dropped)",
            "remove one of the cards, or put each in a deck of its own")


def _check_cards(netlist: Netlist, name: str, lines: dict[str, int]) -> None:
    """``build_circuit``'s refusals of the temperature and of a diode model (BV or IBV not
    positive), which a netlist may hold, as FormatErrors naming the card's file:line."""
    checks = [(".temp", lambda: _check_temperature(netlist))] + [
        (f".model {model}", lambda model=model: _model(netlist, model)) for model in netlist.models]
    for card, check in checks:
        try:
            check()
        except CircuitError as err:
            raise FormatError(name, lines.get(card), str(err)) from None


def _title(netlist: Netlist) -> str:
    return netlist.title.lstrip("* ").split(":")[0][:60] or "circuit"


def _sweep_report(netlist: Netlist, source: str, values, solver, progress) -> Report:
    result = sweep_circuit(netlist, source, values, solver=solver, progress=bool(progress))
    doc = result.to_json()
    span, columns = sweep_span(source, result.values), result.columns
    rows = (sweep_rows("V({})", columns["node_voltages"], result.voltage, "V", span)
            + sweep_rows("I({})", columns["source_currents"], result.source_current, "A", span))
    notes = failed_note(source, result.values, result.arrays["converged"])
    unit = "V" if isinstance(netlist.element(source), VoltageSource) else "A"

    def draw(fig):
        left, right = fig.subplots(1, 2)
        plot_lines(left, result.values, {f"I({n})": result.source_current(n)
                                         for n in columns["source_currents"]},
                   f"{source} ({unit})", "source current (A)", "I-V curve")
        plot_lines(right, result.values, {f"V({n})": result.voltage(n)
                                          for n in columns["node_voltages"][:12]},
                   f"{source} ({unit})", "node voltage (V)", "node voltages", fontsize="small")

    return Report.from_doc("circuit", doc, rows, solver, draw,
                           title=f"{_title(netlist)}: DC sweep of {source}, "
                                 f"{len(result.values)} points in one batched solve", notes=notes,
                           tables=lambda: {"circuit": result.to_frame()})


def _transient_report(netlist: Netlist) -> Report:
    result = simulate_circuit(netlist)
    doc = result.to_json()
    last = lambda table: {k: v[-1] for k, v in table.items()}  # noqa: E731
    rows = (named_rows("V({}) at tstop", last(result.node_voltages), "V")
            + named_rows("I({}) at tstop", last(result.source_currents), "A"))
    notes = [f"{doc['accepted_steps']} accepted steps, {doc['rejected_steps']} rejected"]
    if not result.converged:
        notes.append(result.message())

    def draw(fig):
        left, right = fig.subplots(1, 2)
        plot_lines(left, result.time, {f"V({n})": v for n, v in
                                       list(result.node_voltages.items())[:12]},
                   "time (s)", "node voltage (V)", "node voltages", fontsize="small")
        plot_lines(right, result.time, {f"I({n})": i for n, i in result.source_currents.items()},
                   "time (s)", "current (A)", "source currents")

    return Report.from_doc("circuit", doc, rows, None, draw,
                           title=f"{_title(netlist)}: transient", notes=notes,
                           tables=lambda: {"circuit": result.to_frame()})
