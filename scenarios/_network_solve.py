"""Graph-level solves for the network domains (water, power flow): one solve or one batched sweep.

A thin layer over ``solvers``: lower the graph with ``System.build``, run a root method on the
flat system under ``jax.jit`` (and ``jax.vmap`` over parameter values for a sweep, written in
with ``System.set_params``), and rebuild the solved graph, from which results are read by name.
The jitted functions live at module level, so graphs of equal structure share one compilation.
TODO(scenarios): delegate to ``solvers.solve`` / ``solvers.solve_batch`` once they exist.
"""
from __future__ import annotations

from typing import Any, Mapping, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from solvers import FlatProblem

try:
    from solvers import System
except ImportError:  # TODO(scenarios): drop once solvers/__init__.py exports System
    from solvers._system import System

__all__ = ["Solved", "solve_graph", "solve_graph_batch"]


class Solved(NamedTuple):
    """The solved graph (leaves with a leading batch axis in a sweep), the lowered System and
    the flat solution (``result`` codes, ``converged``, ``iterations``, ``residual_norm``)."""

    graph: Any
    system: Any
    solution: Any


def _problem(system) -> Any:
    step = system.step_limit(system.x0, jnp.zeros_like(system.x0), system.params)
    return FlatProblem(system.residual, system.step_limit if step is not None else None)


def _run(method, system, x0, params):
    return method.solve(_problem(system), x0, params)


def _run_batch(method, keys, system, x0, values):
    def one(vals):
        params = system.set_params(system.params, dict(zip(keys, vals)))
        return _run(method, system, x0, params), params
    return jax.vmap(one)(values)


_solve_jit = jax.jit(_run, static_argnums=0)
_batch_jit = jax.jit(_run_batch, static_argnums=(0, 1))


def solve_graph(root: Any, method: Any, x0: Any = None) -> Solved:
    """Solve the graph of ``root`` with ``method`` (a root method such as ``Newton``);
    ``x0`` (flat) replaces the start values held in the graph."""
    system = System.build(root)
    x0 = system.x0 if x0 is None else jnp.asarray(x0, system.x0.dtype)
    solution = _solve_jit(method, system, x0, system.params)
    return Solved(system.to_graph(solution.x), system, solution)


def solve_graph_batch(root: Any, method: Any, updates: Mapping[Any, Any]) -> Solved:
    """One batched solve: ``updates`` maps parameter selectors (a key path such as
    ``".hydraulics.demand_multiplier"``, ``"Class.field"``, a class or a filter, as
    ``System.set_params`` takes them) to values with a common leading batch axis."""
    system = System.build(root)
    keys = tuple(updates)
    values = [jnp.asarray(v) for v in updates.values()]
    sizes = {v.shape[0] if v.ndim else None for v in values}
    if len(sizes) != 1 or None in sizes:
        shapes = ", ".join(f"{k!s}: {tuple(v.shape)}" for k, v in zip(keys, values))
        raise ValueError(f"every sweep value needs the same leading batch axis; got {shapes}. "
                         "Stack one value per batch member on axis 0.")
    solution, params = _batch_jit(method, keys, system, system.x0, values)
    return Solved(system.to_graph(solution.x, params), system, solution)


def scalar(value, index) -> Any:
    """``value[index]`` as a Python number (``index`` None: the unbatched value)."""
    a = np.asarray(value)
    return (a if index is None else a[index]).item()
