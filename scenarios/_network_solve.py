"""Graph-level solves for the network domains (water, power flow): one solve or one batched sweep.

A thin layer over ``solvers.solve`` / ``solvers.solve_batch``: it lowers the graph once, picks
plain Newton with a dense LU for small systems and a sparse LU (from the graph's Jacobian
pattern) for large ones, and keeps the solved graph, from which results are read by name.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable, Mapping, NamedTuple

import numpy as np

import solvers

__all__ = ["Solved", "newton", "scalar", "solve_graph", "solve_graph_batch"]


class Solved(NamedTuple):
    """The solved graph (leaves with a leading batch axis in a sweep), the lowered System and
    the ``solvers.Solution`` (``result``, ``converged``, ``iterations``, ``residual_norm``)."""

    graph: Any
    system: Any
    solution: Any


def newton(atol: float, rtol: float, max_steps: int, dense_limit: int = 120,
           sparse: type = solvers.SparseLU, atol32: float = 1e-4) -> Callable[[Any], Any]:
    """A method factory: plain Newton (backtracking line search kept as a safeguard) with a
    dense LU up to ``dense_limit`` unknowns, else ``sparse`` (a sparse linear solver class)
    on the graph's Jacobian pattern. In float32 (``jax_enable_x64`` off) it warns and uses
    ``atol32`` and ``rtol = 1e-6``: the float64 tolerances are below float32 roundoff."""

    def make(system) -> Any:
        a, r = atol, rtol
        if np.dtype(system.x0.dtype).itemsize < 8:
            warnings.warn("solving in float32 because jax_enable_x64 is off: expect about 6 "
                          "significant digits. For reference accuracy call "
                          "jax.config.update('jax_enable_x64', True) before building the "
                          "model.", stacklevel=5)
            a, r = atol32, 1e-6
        if system.n <= dense_limit:
            linear = solvers.DenseLU()
        else:
            linear = sparse(*system.sparsity())
        return solvers.Newton(atol=a, rtol=r, max_steps=max_steps, linear_solver=linear)

    return make


def _method(method: Any, system) -> Any:
    return method if isinstance(method, solvers.AbstractRootMethod) else method(system)


def solve_graph(root: Any, method: Any) -> Solved:
    """Solve the graph of ``root``; ``method`` is a root method or a factory ``system ->
    method`` (see :func:`newton`)."""
    system = solvers.System.build(root)
    solution = solvers.solve(system, _method(method, system))
    return Solved(solution.system, system, solution)


def solve_graph_batch(root: Any, method: Any, updates: Mapping[Any, Any],
                      progress: bool | None = None) -> Solved:
    """One batched solve: ``updates`` maps parameter selectors (a key path such as
    ``".hydraulics.demand_multiplier"``, ``"Class.field"``, a class or a filter, as
    ``System.set_params`` takes them) to values with a common leading batch axis.
    ``progress``: show a progress bar (default: on a terminal, for batches run in chunks)."""
    system = solvers.System.build(root)  # solve_batch checks the keys and batch sizes
    values = {k: np.asarray(v) for k, v in updates.items()}
    solution = solvers.solve_batch(system, values, _method(method, system), progress=progress)
    return Solved(solution.system, system, solution)


def scalar(value, index) -> Any:
    """``value[index]`` as a Python number (``index`` None: the unbatched value)."""
    a = np.asarray(value)
    return (a if index is None else a[index]).item()
