"""``python -m scenarios run equations``: solve, sweep or differentiate the shipped example."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .._cli_report import Report, SweepSpec, quick_solve, solve_status, solver_name
from ._build import read_equations
from ._solve import sensitivities, solve_equations, sweep_equations

__all__ = ["EXAMPLE", "run"]

#: The shipped example: five equations sharing two gradient providers.
EXAMPLE = Path(__file__).resolve().parent.parent / "data" / "equations" / "shared_slopes.json"


def run(input: str | os.PathLike | None = None, sweep: SweepSpec | None = None,
        solver: Any = None, progress: bool | None = None) -> Report:
    """Solve the equations file (default: :data:`EXAMPLE`), or sweep one constant or slope.

    Without a sweep the table shows each x with its derivative with respect to its provider's
    slope (computed through the solve with ``jax.jacrev``).

    ``solver``: a method object; by default Newton, and ``solvers.Default()`` only if Newton
    fails (see :func:`scenarios._cli_report.quick_solve`).
    """
    graph = read_equations(input or EXAMPLE)
    if sweep is not None:
        return _sweep_report(graph, sweep, solver, progress)
    result, method = quick_solve(lambda m: solve_equations(graph, solver=m), solver)
    rows = [(f"x[{name}]", result.x(name), "") for name in graph.equation_names]
    doc = result.to_json()
    grads = sensitivities(graph, solver=method)
    doc["dx_dm"] = {e: grads[_provider_of(graph, e)][e] for e in graph.equation_names}
    rows += [(f"dx[{e}]/d{_provider_of(graph, e)}", v, "") for e, v in doc["dx_dm"].items()]
    conv, iters, norm = solve_status(result.solution)
    return Report("equations", solver_name(method), conv, iters, norm, rows, doc,
                  title="m * x = c with shared slopes (x = c/m, dx/dm = -c/m^2)")


def _provider_of(graph, equation: str) -> str:
    provider = graph.equation(equation).gradient
    return next(n for n, p in zip(graph.provider_names, graph.providers) if p is provider)


def _sweep_report(graph, sweep: SweepSpec, solver, progress) -> Report:
    result, method = quick_solve(lambda m: sweep_equations(graph, sweep.param, sweep.values,
                                                           solver=m, progress=progress), solver)
    doc = result.to_json()
    rows = [(f"x[{n}] at {sweep.param}={sweep.values[0]:.4g}..{sweep.values[-1]:.4g}",
             f"{result.x(n)[0]:.6g} .. {result.x(n)[-1]:.6g}", "") for n in graph.equation_names]

    def draw(fig):
        ax = fig.add_subplot()
        for name in graph.equation_names:
            ax.plot(result.values, result.x(name), label=name)
        ax.set_xlabel(sweep.param)
        ax.set_ylabel("x")
        ax.set_title(f"solutions over a sweep of {sweep.param} ({len(result.values)} points)")
        ax.legend()

    return Report("equations", solver_name(method), doc["converged"], doc["iterations"],
                  doc["residual_norm"], rows, doc, draw,
                  title=f"m * x = c, batched sweep of {sweep.param}")
