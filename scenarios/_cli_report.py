"""What a scenario run hands to the command line: a summary, the JSON document, a plot.

Each domain's ``run(...)`` returns a :class:`Report`; ``python -m scenarios run`` prints it,
writes ``report.json`` with ``--json`` and calls ``report.draw(figure)`` with ``--plot``.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np

import solvers

__all__ = ["Report", "SweepSpec", "solve_status", "solver_name", "quick_solve", "fmt"]


@dataclasses.dataclass(frozen=True)
class SweepSpec:
    """``--sweep PARAM=START:STOP:COUNT``: the parameter's name and its values."""

    param: str
    values: np.ndarray


@dataclasses.dataclass
class Report:
    """A finished run. ``rows`` are the main results ``(name, value, unit)``; ``json`` the
    document ``--json`` writes (with ``converged``, ``iterations``, ``residual_norm``);
    ``draw(fig)`` draws the plot into a matplotlib figure (None: no plot helps here)."""

    scenario: str
    solver: str
    converged: bool
    iterations: int
    residual_norm: float
    rows: list
    json: dict
    draw: Callable[[Any], None] | None = None
    title: str = ""
    notes: list = dataclasses.field(default_factory=list)

    def table(self, max_rows: int = 12) -> str:
        """The readable summary printed by ``python -m scenarios run``."""
        head = [("scenario", self.scenario, ""), ("solver", self.solver, ""),
                ("converged", "yes" if self.converged else "NO", ""),
                ("iterations", str(self.iterations), ""),
                ("residual", f"{self.residual_norm:.3g}", "max|F|")]
        rows = [(str(n), v if isinstance(v, str) else fmt(v), u) for n, v, u in self.rows]
        shown = rows[:max_rows]
        width = max(len(n) for n, _, _ in head + shown)
        vwidth = max(len(v) for _, v, _ in head + shown)
        lines = [self.title] if self.title else []
        lines += [f"  {n:<{width}}  {v:>{vwidth}}  {u}".rstrip() for n, v, u in head]
        if shown:
            lines.append("  " + "-" * (width + vwidth + 2))
            lines += [f"  {n:<{width}}  {v:>{vwidth}}  {u}".rstrip() for n, v, u in shown]
        if len(rows) > max_rows:
            lines.append(f"  ... and {len(rows) - max_rows} more (all of them in --json)")
        return "\n".join(lines + [f"  note: {n}" for n in self.notes])


def fmt(value: Any) -> str:
    """A number (or short vector) for the summary table."""
    arr = np.asarray(value, dtype=float)
    if arr.ndim == 0:
        return f"{float(arr):.6g}"
    return "(" + ", ".join(f"{v:.6g}" for v in arr.reshape(-1)) + ")"


def solve_status(solution) -> tuple[bool, int, float]:
    """(all converged, max iterations, max residual norm) over the members of a solution."""
    conv = bool(np.all(np.asarray(solution.converged)))
    iters = int(np.max(np.asarray(solution.iterations)))
    norm = float(np.max(np.asarray(solution.residual_norm)))
    return conv, iters, norm


def solver_name(solver: Any) -> str:
    """Short display name of a solve method (``None``: the library's default polyalgorithm)."""
    return "Default" if solver is None else type(solver).__name__


def quick_solve(attempt: Callable[[Any], Any], solver: Any = None) -> tuple[Any, Any]:
    """``(attempt(method), method)``: with ``solver`` if given; else Newton first (it compiles
    in a fraction of the polyalgorithm's time, which matters for a command-line run) and
    ``solvers.Default()`` only if some member did not converge. ``attempt`` returns a result
    with ``.solution.converged`` or a sweep with ``.converged``."""
    if solver is not None:
        return attempt(solver), solver
    newton = solvers.Newton()
    out = attempt(newton)
    if np.all(np.asarray(getattr(out, "solution", out).converged)):
        return out, newton
    fallback = solvers.Default()
    return attempt(fallback), fallback
