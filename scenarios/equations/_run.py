"""``python -m scenarios run equations``: solve, sweep or differentiate the shipped example."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .._cli_report import (Report, SweepSpec, failed_note, named_rows, plot_lines, sweep_rows,
                           sweep_span)
from ._build import read_equations
from ._solve import EquationsSweep, sensitivities, solve_equations, sweep_equations

__all__ = ["EXAMPLE", "run"]

#: The shipped example: five equations sharing two gradient providers.
EXAMPLE = Path(__file__).resolve().parent.parent / "data" / "equations" / "shared_slopes.json"


def run(input: str | os.PathLike | None = None, sweep: SweepSpec | None = None,
        solver: Any = None, progress: bool | None = None) -> Report:
    """Solve the equations file (default: :data:`EXAMPLE`), or sweep one constant or slope.

    Without a sweep the table shows each x with its derivative with respect to its provider's
    slope (computed through the solve with ``jax.jacrev``). ``solver``: a method object
    (default: that of :func:`solve_equations`, ``solvers.Default``).
    """
    graph = read_equations(input or EXAMPLE)
    if sweep is not None:
        return _sweep_report(graph, sweep_equations(graph, sweep.param, sweep.values,
                                                    solver=solver, progress=progress), solver)
    result = solve_equations(graph, solver=solver)
    doc, notes = result.to_json(), []
    rows = named_rows("x[{}]", doc["x"], "")
    if doc["converged"]:
        grads = sensitivities(result.graph, solver=solver)
        doc["dx_dm"] = {e: grads[_provider_of(graph, e)][e] for e in graph.equation_names}
        rows += [(f"dx[{e}]/d{_provider_of(graph, e)}", v, "") for e, v in doc["dx_dm"].items()]
    else:   # a derivative at a point that is no solution means nothing (it was NaN)
        doc["dx_dm"] = {e: None for e in graph.equation_names}
        notes.append("no sensitivities dx/dm: the solve did not converge")
    return Report.from_doc("equations", doc, rows, solver, notes=notes,
                           tables=lambda: {"equations": result.to_frame()},
                           title="m * x = c with shared slopes (x = c/m, dx/dm = -c/m^2)")


def _provider_of(graph, equation: str) -> str:
    provider = graph.equation(equation).gradient
    return next(n for n, p in zip(graph.provider_names, graph.providers) if p is provider)


def _sweep_report(graph, result: EquationsSweep, solver) -> Report:
    names, param = graph.equation_names, result.param
    rows = sweep_rows("x[{}]", names, result.x, "", sweep_span(param, result.values))

    def draw(fig):
        plot_lines(fig.add_subplot(), result.values, {n: result.x(n) for n in names}, param,
                   "x", f"solutions over a sweep of {param} ({len(result.values)} points)")

    return Report.from_doc("equations", result.to_json(), rows, solver, draw,
                           tables=lambda: {"equations": result.to_frame()},
                           title=f"m * x = c, batched sweep of {param}",
                           notes=failed_note(param, result.values, result.arrays["converged"]))
