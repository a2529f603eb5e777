"""``python -m scenarios run powerflow``: solve a MATPOWER case (``.m`` or validation JSON)."""
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._cli_report import Report, SweepSpec, failed_note
from ._case_json import read_case_json
from ._map import draw_power_flow
from ._matpower import read_matpower
from ._model import SWEEP_PARAMETERS, build_powerflow

__all__ = ["EXAMPLE", "run"]

#: The shipped example: MATPOWER's case9.
EXAMPLE = Path(__file__).resolve().parent.parent / "data" / "powerflow" / "case9.m"


def _name(solver: Any) -> str:
    return "Newton (polar), then fallbacks" if solver is None else type(solver).__name__


def read_case(path: str | os.PathLike):
    """A ``.json`` validation case or a MATPOWER ``.m`` file (any other suffix)."""
    return read_case_json(path) if str(path).lower().endswith(".json") else read_matpower(path)


def run(input: str | os.PathLike | None = None, sweep: SweepSpec | None = None,
        solver: Any = None, progress: bool | None = None, start: str | None = None) -> Report:
    """Solve the case (default :data:`EXAMPLE`) from ``start`` (default ``"case"``: the case
    file's voltages; ``"flat"`` for ``--flat-start``), falling back to the other starts if
    Newton fails there, or sweep ``load_scale`` (or a parameter key path) in one batched
    solve from ``start``."""
    case = read_case(input or EXAMPLE)
    model = build_powerflow(case, start or "case")
    title = f"AC power flow of {case.name!r} ({len(case.buses)} buses)"
    if sweep is not None:
        return _sweep_report(model, sweep, solver, progress, title)
    result = model.solve(solver)
    over = result.q_limit_violations() if result.converged else []
    doc = {**result.to_json(), "solver": _name(solver), "case_notes": list(case.notes),
           "q_limits": {"enforced": False, "violations": over}}
    rows = _BusRows(("start", result.start, ""), result.buses(), [b.id for b in case.buses])
    notes = ([result.start_note()] + ([] if result.converged else [result.message()])
             + _case_notes(case.notes) + _q_limit_notes(over, case.base_mva)
             + _low_voltage_notes(result.low_voltage_buses() if result.converged else {}))
    return Report("powerflow", _name(solver), result.converged, result.iterations,
                  result.residual_norm, rows, doc, lambda fig: draw_power_flow(
                      fig, result, f"{case.name}: bus voltages and branch loading"),
                  title=title, notes=notes, tables=result.to_frames)


def _case_notes(notes: tuple, shown: int = 6) -> list[str]:
    """What the reader changed or dropped (out-of-service elements, bus types), at most
    ``shown`` of them (all in the JSON's ``case_notes``)."""
    out = [f"case: {n}" for n in notes[:shown]]
    if len(notes) > shown:
        out.append(f"case: ... and {len(notes) - shown} more changes (--json: case_notes)")
    return out


def _low_voltage_notes(low: dict, shown: int = 4) -> list[str]:
    """A warning for buses below 0.5 p.u.: likely a low-voltage solution, not the operating
    point (found from a start far from it)."""
    if not low:
        return []
    worst = sorted(low.items(), key=lambda item: item[1])[:shown]
    listed = ", ".join(f"bus {i} {vm:.3f}" for i, vm in worst)
    more = f" and {len(low) - shown} more" if len(low) > shown else ""
    return [f"{len(low)} bus(es) below 0.5 p.u. ({listed}{more}): this may be a low-voltage "
            "solution of the equations rather than the operating point; try --flat-start"]


def _q_limit_notes(over: list, base: float, shown: int = 4) -> list[str]:
    """A note naming the buses whose generators exceed their Q limits (not enforced)."""
    if not over:
        return []
    parts = [f"bus {v['bus']} Qg = {v['qg'] * base:.4g} Mvar "
             + (f"> Qmax {v['qmax'] * base:.4g} Mvar" if v["qg"] > v["qmax"]
                else f"< Qmin {v['qmin'] * base:.4g} Mvar") for v in over[:shown]]
    more = f" and {len(over) - shown} more" if len(over) > shown else ""
    return [f"generator Q limits are not enforced (as in MATPOWER's runpf by default), and "
            f"{len(over)} PV/slack bus(es) hold their voltage only beyond them: "
            f"{'; '.join(parts)}{more} (--json: q_limits)"]


class _BusRows(Sequence):
    """The table rows: ``first``, then Vm / Va of each bus, formatted when read (the table
    prints only a few of them)."""

    def __init__(self, first: tuple, buses: dict, ids: list):
        self.first, self.buses, self.ids = first, buses, ids

    def __len__(self) -> int:
        return len(self.ids) + 1

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if not -len(self) <= i < len(self):
            raise IndexError(f"row {i} out of range for {len(self)} rows")
        i %= len(self)
        if i == 0:
            return self.first
        bus = self.buses[self.ids[i - 1]]
        return f"bus {bus.id}", f"{bus.vm:.6f} / {bus.va_deg:.4f}", "Vm p.u. / Va deg"


def _sweep_report(model, sweep: SweepSpec, solver, progress, title: str) -> Report:
    result = model.sweep(sweep.values, sweep.param, solver, progress)
    doc = {**result.to_json(), "solver": _name(solver), "start": model.start}
    members = [result[i] for i in range(len(result))]
    ids = [b.id for b in model.case.buses]
    span = f"{sweep.param}={sweep.values[0]:.4g}..{sweep.values[-1]:.4g}"
    rows = [(f"Vm[{i}] at {span}", f"{members[0].bus(i).vm:.6f} .. {members[-1].bus(i).vm:.6f}",
             "p.u.") for i in ids]
    doc.update(iterations=max(m.iterations for m in members),
               residual_norm=max(m.residual_norm for m in members))

    def draw(fig):
        ax = fig.add_subplot()
        for value, member in zip(result.values, members):
            ax.plot(ids, [member.bus(i).vm for i in ids], marker=".",
                    label=f"{sweep.param} = {value:.3g}")
        ax.set_xlabel("bus")
        ax.set_ylabel("Vm (p.u.)")
        ax.set_title(f"voltage profile over a sweep of {sweep.param}")
        ax.legend(fontsize="small")

    known = ", ".join(SWEEP_PARAMETERS)
    return Report("powerflow", _name(solver), bool(np.all(result.converged)),
                  doc["iterations"], doc["residual_norm"], rows, doc, draw,
                  title=title + f", sweep of {span}",
                  notes=failed_note(sweep.param, sweep.values, result.converged)
                  + [f"named sweep parameters: {known} (or a parameter key path)"],
                  tables=result.to_frames)
