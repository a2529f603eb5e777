"""``python -m scenarios run water``: solve an EPANET ``.inp`` network at t = 0, or sweep it,
or (``--eps``) run it over its [TIMES] DURATION."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from .._cli_report import Report, SweepSpec, failed_note
from .._errors import FormatError
from ._eps_report import eps_report
from ._inp import read_inp
from ._inp_types import NotModelled
from ._map import draw_water_map
from ._model import SWEEP_PARAMETERS, build_water

__all__ = ["EXAMPLE", "run"]

#: The shipped example: EPANET's Net1 (a pump, a tank, a reservoir).
EXAMPLE = Path(__file__).resolve().parent.parent / "data" / "water" / "Net1.inp"


def _name(solver: Any) -> str:
    return "Newton (plain, EPANET start)" if solver is None else type(solver).__name__


def run(input: str | os.PathLike | None = None, sweep: SweepSpec | None = None,
        solver: Any = None, progress: bool | None = None, eps: bool = False) -> Report:
    """Solve the ``.inp`` file (default :data:`EXAMPLE`) with EPANET's constants, or sweep
    ``demand_multiplier`` (or a parameter key path) in one batched solve, or (``eps``) run
    it over its DURATION as EPANET does (:func:`simulate_eps`)."""
    net = read_inp(input or EXAMPLE)
    try:
        return _run(net, input, sweep, solver, progress, eps)
    except NotModelled as err:  # what the model refuses, with the file:line that says it
        raise FormatError(str(input or EXAMPLE), net.source_lines.get(err.where),
                          str(err)) from None


def _run(net, input, sweep: SweepSpec | None, solver: Any, progress: bool | None,
         eps: bool) -> Report:
    name = (net.title.strip().splitlines() or [Path(str(input or EXAMPLE)).stem])[0]
    if eps:
        if sweep is not None:
            raise ValueError("--eps and --sweep do not combine: run one or the other")
        return eps_report(net, name, _name(solver), solver)
    model = build_water(net, "epanet")
    title = f"water network {name!r} at t = 0"
    if sweep is not None:
        return _sweep_report(model, sweep, solver, progress, title)
    result = model.solve(solver)
    doc = {**result.to_json(), "solver": _name(solver)}
    rows = ([(f"H[{n}]", h, "m") for n, h in doc["heads"].items()]
            + [(f"Q[{n}]", q, "m3/s") for n, q in doc["flows"].items()])
    notes = [] if result.converged else [result.message()]
    return Report("water", _name(solver), result.converged, result.iterations,
                  result.residual_norm, rows, doc,
                  lambda fig: draw_water_map(fig, result, f"{name}: pressure and flow at t = 0"),
                  title=title, notes=notes, tables=result.to_frames)


def _sweep_report(model, sweep: SweepSpec, solver, progress, title: str) -> Report:
    result = model.sweep(sweep.values, sweep.param, solver, progress)
    doc = {**result.to_json(), "solver": _name(solver)}
    members = [result[i] for i in range(len(result))]
    names = [j.name for j in model.network.junctions]
    span = f"{sweep.param}={sweep.values[0]:.4g}..{sweep.values[-1]:.4g}"
    rows = [(f"H[{n}] at {span}", f"{m0:.6g} .. {m1:.6g}", "m")
            for n, m0, m1 in ((n, members[0].head(n), members[-1].head(n)) for n in names)]
    doc.update(iterations=max(m.iterations for m in members),
               residual_norm=max(m.residual_norm for m in members))

    def draw(fig):
        ax = fig.add_subplot()
        for n in names:
            ax.plot(result.values, result.head(n), label=n)
        ax.set_xlabel(sweep.param)
        ax.set_ylabel("head (m)")
        ax.set_title(f"junction heads over a sweep of {sweep.param}")
        if len(names) <= 12:
            ax.legend()

    known = ", ".join(SWEEP_PARAMETERS)
    return Report("water", _name(solver), bool(np.all(result.converged)), doc["iterations"],
                  doc["residual_norm"], rows, doc, draw, title=title + f", sweep of {span}",
                  notes=failed_note(sweep.param, sweep.values, result.converged)
                  + [f"named sweep parameters: {known} (or a parameter key path)"],
                  tables=result.to_frames)
