"""Solve an equations graph, sweep it in one batched solve, differentiate its solution.

Analytic answers for checking: ``x = c / m`` and ``dx/dm = -c / m**2`` (for the equations that
share the provider ``m``; zero for the others).
"""
from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import simgraph as sg
import solvers

from .._cli_report import solve_status
from .._sweep_table import SweepTable, sweep_arrays, sweep_values
from .._tables import PointTable
from ._model import EquationSet

__all__ = ["EquationsResult", "EquationsSweep", "solve_equations", "sweep_equations",
           "sensitivities", "parameter_path"]


@dataclasses.dataclass(frozen=True)
class EquationsResult(PointTable):
    """A solved equations graph: ``x("e1")`` by name; ``graph`` is the solved graph;
    ``to_frame()``: one row (``x[name]``, solve status)."""

    LABELS = {"x": "x[{}]"}
    graph: EquationSet
    solution: Any

    def x(self, name: str) -> float:
        return float(self.graph.equation(name).x)

    def to_json(self) -> dict:
        conv, iters, norm = solve_status(self.solution)
        return {"x": {n: self.x(n) for n in self.graph.equation_names},
                "converged": conv, "iterations": iters, "residual_norm": norm}


class EquationsSweep(SweepTable):
    """One batched solve per value of ``param``: ``x("e1")`` is an array over the sweep."""

    def x(self, name: str) -> np.ndarray:
        return self.column("x", name)


#: Accuracy asked of max|F|, relative to the smallest nonzero |constant|: the library's
#: absolute 1e-10 accepted the start x = 0 of ``m x = 1e-12`` as a solution.
RESIDUAL_RTOL = 1e-12


def residual_tolerance(graph: EquationSet, swept: Any = ()) -> float | None:
    """``max|F|`` below which ``graph`` counts as solved: ``1e-10`` (the library's default),
    or less where a constant (or a ``swept`` one) is small. None when the constants are
    traced or all zero (the default applies)."""
    try:
        values = np.abs(np.concatenate([np.ravel(np.asarray(e.constant, dtype=np.float64))
                                        for e in graph.equations]
                                       + [np.ravel(np.asarray(swept, dtype=np.float64))]))
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        return None
    small = values[values > 0].min(initial=np.inf)
    tol = min(1e-10, RESIDUAL_RTOL * float(small))
    return tol if tol > 0 else None


def default_solver(graph: EquationSet, batch_size: int | None = None, swept: Any = ()) -> Any:
    """``solvers.default_method`` with the tolerance :func:`residual_tolerance`."""
    tol = residual_tolerance(graph, swept)
    return solvers.default_method(solvers.System.build(graph), batch_size=batch_size,
                                  **({} if tol is None else {"atol": tol}))


def solve_equations(graph: EquationSet, solver: Any = None) -> EquationsResult:
    """Solve every equation of ``graph`` (one solve of the whole graph); ``solver`` defaults
    to :func:`default_solver`."""
    solution = solvers.solve(graph, solver=default_solver(graph) if solver is None else solver)
    return EquationsResult(solution.system, solution)


def parameter_path(graph: EquationSet, name: str) -> str:
    """Key path of a sweepable value: an equation's name -> its constant, a provider's name
    -> its slope; a key path (starting with ``.``) is returned as is."""
    if name.startswith("."):
        return name
    if name in graph.equation_names:
        return f".equations[{graph.equation_names.index(name)}].constant"
    if name in graph.provider_names:
        return f".providers[{graph.provider_names.index(name)}].value"
    raise KeyError(f"no equation or provider named {name!r} to sweep; equations: "
                   f"{', '.join(graph.equation_names)}; providers: {', '.join(graph.provider_names)}")


def sweep_equations(graph: EquationSet, param: str, values, solver: Any = None,
                    progress: bool | None = None) -> EquationsSweep:
    """Solve for every value of ``param`` (see :func:`parameter_path`) with ``solve_batch``."""
    path = parameter_path(graph, param)
    values = sweep_values(param, values)
    if solver is None:
        solver = default_solver(graph, len(values), values if path.endswith(".constant") else ())
    arrays = sweep_arrays(graph, {path: values},
                          lambda g: {"x": jnp.stack([e.x for e in g.equations], axis=-1)},
                          solver=solver, progress=progress)
    return EquationsSweep(param, values, {"x": graph.equation_names}, arrays)


def sensitivities(graph: EquationSet, solver: Any = None) -> dict:
    """``{provider: {equation: dx/dm}}``: derivatives of every solution with respect to every
    slope, by reverse mode through the solve (one ``jax.jacrev``); ``graph`` is not mutated.

    With ``solver=None`` the graph is solved first outside the transform (``solvers.solve``
    stages its default: Newton, the fallbacks only if Newton fails) and differentiated at that
    root with Newton, which stops there at once: the fallback stages, which a traced solve
    would compile whether needed or not, are never traced.
    """
    if solver is None:
        graph, solver = solve_equations(graph).graph, solvers.Newton()
    state, structure = sg.split(graph, "GradientProvider.value")
    paths = [f".providers[{j}].value" for j in range(len(graph.providers))]

    def xs(ms):
        values = {**state, **{path: ms[j] for j, path in enumerate(paths)}}
        solved = solvers.solve(sg.merge(structure, values), solver=solver).system
        return jnp.stack([e.x for e in solved.equations])

    m0 = np.stack([np.asarray(state[path], dtype=float) for path in paths])  # no eager program
    jac = np.asarray(jax.jacrev(xs)(m0))
    return {p: dict(zip(graph.equation_names, map(float, jac[:, j])))
            for j, p in enumerate(graph.provider_names)}
