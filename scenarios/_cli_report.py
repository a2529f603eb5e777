"""What a scenario run hands to the command line: a summary, the JSON document, a plot.

Each domain's ``run(...)`` returns a :class:`Report`; ``python -m scenarios run`` prints it,
writes ``report.json`` with ``--json``, ``report.tables()`` with ``--csv`` and calls
``report.draw(figure)`` with ``--plot``.
The helpers below build the parts a domain's run shares with the others: the report from a
result's JSON document (:meth:`Report.from_doc`), table rows of named values or of a sweep's
ends, and line or bar plots of named values.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable, Mapping

import numpy as np

__all__ = ["Report", "SweepSpec", "solve_status", "solver_name", "fmt", "named_rows",
           "sweep_span", "sweep_rows", "failed_note", "plot_lines", "plot_bars"]


@dataclasses.dataclass(frozen=True)
class SweepSpec:
    """``--sweep PARAM=START:STOP:COUNT``: the parameter's name and its values."""

    param: str
    values: np.ndarray


@dataclasses.dataclass
class Report:
    """A finished run. ``rows`` are the main results ``(name, value, unit)``; ``json`` the
    document ``--json`` writes (with ``converged``, ``iterations``, ``residual_norm``);
    ``draw(fig)`` draws the plot into a matplotlib figure (None: no plot helps here);
    ``tables()`` returns the result's pandas tables ``{name: DataFrame}`` for ``--csv``."""

    scenario: str
    solver: str
    converged: bool
    iterations: int
    residual_norm: float | None  # None: the run keeps none (a transient)
    rows: list
    json: dict
    draw: Callable[[Any], None] | None = None
    title: str = ""
    notes: list = dataclasses.field(default_factory=list)
    tables: Callable[[], Mapping[str, Any]] | None = None

    @classmethod
    def from_doc(cls, scenario: str, doc: Mapping, rows: list, solver: Any = None,
                 draw: Callable[[Any], None] | None = None, *, title: str = "",
                 notes: Iterable[str] = (),
                 tables: Callable[[], Mapping[str, Any]] | None = None) -> "Report":
        """The report of a run whose JSON document ``doc`` (a result's ``to_json()``) holds
        ``converged``, ``iterations`` and ``residual_norm``; ``solver`` is the method the
        run was given (named by :func:`solver_name`)."""
        return cls(scenario, solver_name(solver), bool(doc["converged"]), int(doc["iterations"]),
                   read_residual(doc.get("residual_norm")), rows, doc, draw, title, list(notes),
                   tables)

    def table(self, max_rows: int = 12) -> str:
        """The readable summary printed by ``python -m scenarios run``."""
        head = [("scenario", self.scenario, ""), ("solver", self.solver, ""),
                ("converged", "yes" if self.converged else "NO", ""),
                ("iterations", str(self.iterations), ""),
                _residual_row(self.residual_norm)]
        shown = [(str(n), v if isinstance(v, str) else fmt(v), u)
                 for n, v, u in self.rows[:max_rows]]  # format only what is printed
        width = max(len(n) for n, _, _ in head + shown)
        vwidth = max(len(v) for _, v, _ in head + shown)
        lines = [self.title] if self.title else []
        lines += [f"  {n:<{width}}  {v:>{vwidth}}  {u}".rstrip() for n, v, u in head]
        if shown:
            lines.append("  " + "-" * (width + vwidth + 2))
            lines += [f"  {n:<{width}}  {v:>{vwidth}}  {u}".rstrip() for n, v, u in shown]
        if len(self.rows) > max_rows:
            lines.append(f"  ... and {len(self.rows) - max_rows} more (all of them in --json)")
        return "\n".join(lines + [f"  note: {n}" for n in self.notes])


def read_residual(value: Any) -> float | None:
    """A document's ``residual_norm``: None where it has none (a transient's is null)."""
    return None if value is None else float(value)


def _residual_row(norm: float | None) -> tuple:
    if norm is None:
        return ("residual", "n/a", "steps converge on their update size")
    return ("residual", f"{norm:.3g}", "max|F|")


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
    """Short display name of a solve method. None: the domain's default, the library's
    ``solvers.Default`` polyalgorithm (``solvers.solve`` / ``solve_batch`` run its Newton stage
    first and compile the fallbacks only for members that failed)."""
    return "Default" if solver is None else type(solver).__name__


def named_rows(label: str, values: Mapping, unit: str) -> list:
    """Table rows ``(label.format(name), value, unit)`` of a ``{name: value}`` group."""
    return [(label.format(name), value, unit) for name, value in values.items()]


def sweep_span(param: str, values) -> str:
    """``PARAM=FIRST..LAST``: the range of a sweep, for its row labels."""
    return f"{param}={values[0]:.4g}..{values[-1]:.4g}"


def sweep_rows(label: str, names: Iterable[str], column: Callable[[str], Any], unit: str,
               span: str) -> list:
    """Table rows of a sweep's first and last values: ``(label.format(name) at span,
    "first .. last", unit)`` for each name, the values over the sweep being ``column(name)``."""
    return [(f"{label.format(name)} at {span}", f"{fmt(v[0])} .. {fmt(v[-1])}", unit)
            for name, v in ((name, column(name)) for name in names)]


def failed_note(param: str, values, converged) -> list:
    """``[note]`` naming the sweep points that did not converge (their rows' values are not
    solutions; the JSON has each member's result); ``[]`` if every point converged."""
    converged = np.asarray(converged, dtype=bool)
    if converged.shape != (len(values),):
        raise ValueError(f"one converged flag per point: {converged.shape} for {len(values)}")
    failed = np.flatnonzero(~converged)
    if failed.size == 0:
        return []
    return [f"{failed.size} of {len(values)} points did not converge, at {param} = "
            f"{points_text(values, ~converged)}: their values are not solutions (see --json "
            "for each point's result)"]


def points_text(values, picked, limit: int = 8) -> str:
    """The sweep ``values`` where ``picked`` (a bool mask), for a message: the first
    ``limit``, then "and N more"."""
    chosen = np.asarray(values)[np.asarray(picked, dtype=bool)]
    shown = ", ".join(f"{float(v):.4g}" for v in chosen[:limit])
    return shown + (f" and {chosen.size - limit} more" if chosen.size > limit else "")


def plot_lines(ax, x, curves: Mapping, xlabel: str, ylabel: str, title: str, **legend) -> None:
    """One labelled line per ``{label: y}`` of ``curves`` against ``x``, on a matplotlib axis
    (``legend``: options of ``ax.legend``)."""
    for label, y in curves.items():
        ax.plot(x, y, label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(**legend)


def plot_bars(ax, values: Mapping, ylabel: str, title: str, color: str, xlabel: str = "",
              bottom: float | None = None) -> None:
    """A bar per ``{name: value}`` of ``values`` on a matplotlib axis (``bottom``: where the
    value axis starts, default matplotlib's)."""
    ax.bar(list(values), list(values.values()), color=color)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if bottom is not None:
        ax.set_ylim(bottom=bottom)
