"""Graph-level solving for equations, thermal and truss: ``solve`` and ``solve_batch``.

These delegate to ``solvers.solve`` / ``solvers.solve_batch`` (the graph-level API). Until
those exist, a small stand-in built on the flat pieces (``System``, ``Newton``) keeps the
scenarios runnable and differentiable (implicit function theorem via ``lax.custom_root``).
TODO(lead): delete the ``_fallback_*`` part once ``solvers.solve``/``solve_batch`` land.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping

import jax
import jax.numpy as jnp
import numpy as np

import solvers

__all__ = ["solve", "solve_batch", "solver_name"]


def solve(graph: Any, solver: Any = None):
    """Solve the graph's equations; the result has ``.system`` (the solved graph),
    ``.result``, ``.converged``, ``.iterations`` and ``.residual_norm``."""
    if hasattr(solvers, "solve"):
        return solvers.solve(graph, solver=solver)
    return _fallback_solve(graph, solver)


def solve_batch(graph: Any, values: Mapping[str, Any], solver: Any = None):
    """Solve once per batch member: ``values`` maps key paths to arrays with a leading batch
    axis (all the same length). ``.system`` is the batched solved graph."""
    if hasattr(solvers, "solve_batch"):
        return solvers.solve_batch(graph, values, solver=solver)
    return _fallback_solve_batch(graph, values, solver)


def solver_name(solver: Any) -> str:
    """Short display name of a solve method (``None`` means the library default)."""
    return "default" if solver is None else type(solver).__name__


# -- stand-in until solvers.solve exists (TODO(lead): remove) --------------------------------
@dataclasses.dataclass(frozen=True)
class _Solution:
    system: Any
    result: Any
    converged: Any
    iterations: Any
    residual_norm: Any


def _method(solver):
    if solver is not None:
        return solver
    from solvers._newton import Newton
    return Newton()


def _root(system, params, method):
    """x solving F(x, params) = 0, differentiable in params by the implicit function theorem."""
    from solvers._method import FlatProblem
    sol = method.solve(FlatProblem(system.residual), system.x0, jax.lax.stop_gradient(params))

    def tangent_solve(g, y):
        return jnp.linalg.solve(jax.jacfwd(g)(y), y)

    x = jax.lax.custom_root(lambda x: system.residual(x, params), system.x0,
                            lambda f, x0: sol.x, tangent_solve)
    return x, sol


_root_jit = jax.jit(_root, static_argnums=2)


def _batched(system, values, method):
    def one(v):
        params = system.set_params(system.params, v)
        x, sol = _root(system, params, method)
        return x, params, sol
    return jax.vmap(one)(values)


_batched_jit = jax.jit(_batched, static_argnums=2)


def _fallback_solve(graph, solver):
    from solvers._system import System
    system = System.build(graph)
    x, sol = _root_jit(system, system.params, _method(solver))
    return _Solution(system.to_graph(x), sol.result, sol.converged, sol.iterations,
                     sol.residual_norm)


def _fallback_solve_batch(graph, values, solver):
    from solvers._system import System
    system = System.build(graph)
    values = {k: jnp.asarray(v) for k, v in values.items()}
    sizes = {int(np.shape(v)[0]) for v in values.values()}
    if len(sizes) != 1:
        raise ValueError(f"solve_batch: every value array needs the same leading batch length; "
                         f"got lengths {sorted(sizes)} for {list(values)}")
    x, params, sol = _batched_jit(system, values, _method(solver))
    return _Solution(system.to_graph(x, params), sol.result, sol.converged, sol.iterations,
                     sol.residual_norm)
