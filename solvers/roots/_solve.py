"""``solve_flat``: solve ``F(x, params) = 0`` for one member, differentiably (the flat form of
``solvers.solve``)."""

from __future__ import annotations

import dataclasses
import logging
from functools import partial
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..linear._bind import bind_linear_solvers
from .._concrete import is_concrete, staging
from ..linear._dense import DenseLU
from ._host_newton import host_newton
from ._implicit import implicit_solution
from .._inputs import check_flat_inputs
from ..linear._abstract import AbstractLinearSolver
from ._method import AbstractRootMethod, Continuation, FlatProblem, StepLimit
from ._polyalgorithm import Default
from ._precision import for_dtype
from ._shape import check_residual
from ._solution import Solution, SolveError
from ._host_fallback import sends_fallbacks_to_host
from ._staging import run_staged, stages_of
from ..linear._sparse import SparseHostLU
from ..linear._pattern_check import check_pattern_once
from ..linear._sparsity import SparsityPattern


def linear_solver_of(method: AbstractRootMethod) -> AbstractLinearSolver:
    """The linear solver a method uses (DenseLU for back ends that bring their own)."""
    solver = getattr(method, "linear_solver", None)
    if solver is None and hasattr(method, "inner"):
        solver = linear_solver_of(method.inner)
    return solver if isinstance(solver, AbstractLinearSolver) else DenseLU()


_REAL_FLOATS = frozenset(map(np.dtype, (np.float64, np.float32, np.float16)))


def check_arguments(x0, solver, sparsity=None) -> tuple[jax.Array, AbstractRootMethod]:
    """Validate the start and method; return x0 as a float array and the method, its linear
    solvers bound to ``sparsity`` (see `bind_linear_solvers`)."""
    method = Default() if solver is None else solver
    if not isinstance(method, AbstractRootMethod):
        raise TypeError(
            f"solver must be a method object such as solvers.Newton() or solvers.Default(), "
            f"got {type(solver).__name__}."
        )
    method = bind_linear_solvers(method, sparsity)
    if x0 is None:
        raise TypeError("x0 is missing: a flat function F(x, params) has no graph to read a "
                        "start from; pass one, e.g. solvers.solve(fn, jnp.zeros(n), params).")
    x0 = x0 if isinstance(x0, jax.Array) else jnp.asarray(x0)
    if x0.dtype in _REAL_FLOATS and x0.shape[-1:] != (0,):
        return x0, for_dtype(method, x0.dtype)
    if jnp.issubdtype(x0.dtype, jnp.complexfloating):
        raise ValueError(
            f"x0 is complex ({x0.dtype}): unknowns must be real. Split each complex unknown "
            "into its real and imaginary parts (two real unknowns, two real equations)."
        )
    if not jnp.issubdtype(x0.dtype, jnp.floating):
        x0 = x0.astype(jnp.result_type(float))
    if x0.shape[-1:] == (0,):
        raise ValueError("x0 is empty: the system has no unknowns, so there is nothing to "
                         "solve.")
    return x0, for_dtype(method, x0.dtype)


def solve_core(problem: FlatProblem, method: AbstractRootMethod, x0, params) -> Solution:
    """One member: iterate without gradients, then attach the implicit derivative."""
    sol = method.solve(problem, lax.stop_gradient(x0), lax.stop_gradient(params))
    x = implicit_solution(problem.fn, linear_solver_of(method), sol.x, params, sol.converged)
    return dataclasses.replace(sol, x=x)


_solve_jit = jax.jit(solve_core, static_argnums=(0, 1))


def solve_flat(fn: Callable[[jax.Array, Any], jax.Array], x0, params: Any = None, *,
               solver: Optional[AbstractRootMethod] = None,
               step_limit: Optional[StepLimit] = None,
               continuation: Optional[Continuation] = None,
               sparsity: Optional[SparsityPattern] = None,
               throw: bool = False) -> Solution:
    """Solve ``fn(x, params) = 0`` for x from ``x0`` (1-D); the same as
    ``solvers.solve(fn, x0, params, ...)``, returning a `Solution` without a graph.

    ``solver``: the method (default ``Default()``). ``step_limit(x, dx, params)`` and
    ``continuation(params, t)`` are the model hooks of `FlatProblem`. ``sparsity``: the
    Jacobian's `SparsityPattern`, for linear solvers that need one (``SparseLU()``,
    ``AutoLinearSolver()``); the first eager solve of each ``(fn, sparsity)`` checks it at
    ``x0`` and raises `SparsityError` naming the entries it misses. Works under ``jit``, ``vmap`` and ``grad`` (gradients of ``x`` by
    implicit differentiation). ``fn`` is a static argument of an internal ``jit``: pass the
    same function object to reuse the compiled solve. ``throw=True`` raises ``SolveError`` on
    failure; inside a transform JAX delivers it as ``jax.errors.JaxRuntimeError`` whose
    message holds the ``SolveError`` text.
    """
    check_flat_inputs("solve", x0, params)
    x0, method = check_arguments(x0, solver, sparsity)
    if x0.ndim != 1:
        raise ValueError(
            f"x0 must be a 1-D vector of unknowns, got shape {x0.shape}; for a batch of "
            "starts use solvers.solve_batch(fn, x0, params)."
        )
    if sparsity is not None and is_concrete((x0, params)) and not staging():
        check_pattern_once(fn, x0, params, sparsity)
    sol = solve_member(FlatProblem(fn, step_limit, continuation, host_callable=True), method,
                       x0, params)
    return raise_if_failed_anywhere(sol) if throw else sol


def solve_member(problem: FlatProblem, method: AbstractRootMethod, x0, params,
                 shape: Optional[tuple] = None) -> Solution:
    """One member. ``Default`` runs stage by stage (`run_staged`: a fallback is compiled only
    when Newton fails) whenever the values can be read now: outside transforms, and under
    an eager ``grad``/``jvp`` (the stages solve the values without their tangents, then the
    implicit derivative is attached, as the compiled solve attaches it); a Newton stage on
    the host LU then steps from the host (`_attempt`). Where ``Default``'s program calls
    back for its fallbacks itself (`_one_program`), concrete values go to that program.
    Under ``jit`` or ``vmap``: one compiled program. ``shape``: ``(m, n)`` when known
    (saves a trace of F)."""
    concrete = is_concrete((x0, params))  # then stop_gradient is the identity: skip its dispatches
    bare = (x0, params) if concrete else lax.stop_gradient((x0, params))
    if staging() or not (concrete or is_concrete(bare)):
        return _solve_jit(problem, method, x0, params)
    if not isinstance(method, Default):
        return _attempt(problem, method, x0, params) if concrete else _solve_jit(
            problem, method, x0, params)
    m, n = shape if shape is not None else (_equations(problem.fn, *bare), int(x0.shape[-1]))
    if concrete and _one_program(problem, method, m, n):
        return _solve_jit(problem, method, x0, params)
    sol = run_staged(method, m, n, lambda stage, _: _attempt(problem, stage, *bare))
    if concrete:
        return sol
    x = implicit_solution(problem.fn, linear_solver_of(method), sol.x, params, sol.converged)
    return dataclasses.replace(sol, x=x)


def _equations(fn, x0, params) -> int:
    """How many equations F has (its output, checked: `check_residual`)."""
    out = jax.eval_shape(fn, x0, params)
    check_residual(out, x0)
    return int(np.prod(out.shape))


def _one_program(problem: FlatProblem, method: Default, m: int, n: int) -> bool:
    """Whether one member runs ``Default`` as its compiled program: where the program holds
    Newton alone and calls back for a fallback only when needed (`sends_fallbacks_to_host`),
    staging from Python would add a read-back and dispatches (~100 us of a 10-node
    ladder's 270). A first stage on the host LU still steps from the host (`_attempt`)."""
    stages = stages_of(method, m, n)
    return (stages is not None
            and sends_fallbacks_to_host(method.traced_fallbacks, problem)
            and not isinstance(getattr(stages[0], "linear_solver", None), SparseHostLU))


def _attempt(problem: FlatProblem, method: AbstractRootMethod, x0, params) -> Solution:
    """``method`` on concrete inputs: a Newton on the host LU first steps from the host
    (`host_newton`: its compiled part fits the persistent cache), the compiled method
    where that does not converge."""
    sol = host_newton(problem, method, x0, params)
    if sol is not None and bool(sol.converged):
        return sol
    return _solve_jit(problem, method, x0, params)


def raise_if_failed_anywhere(sol: Solution) -> Solution:
    """``sol.raise_if_failed()`` now if concrete, else from a callback when the result is
    computed (the only way to raise from inside jit: ``jax.pure_callback``, a host round
    trip). The callback's output is added to x as zero so it is never optimised away."""
    if is_concrete(sol.result):
        return sol.raise_if_failed()
    token = jax.pure_callback(
        partial(_host_check, np.dtype(sol.x.dtype)),
        jax.ShapeDtypeStruct(sol.result.shape, sol.x.dtype),
        sol.result, sol.iterations, sol.residual_norm, vmap_method="expand_dims")
    _keep_off_fast_path()
    return dataclasses.replace(sol, x=sol.x + jnp.expand_dims(token, -1) * 0.0)


def _keep_off_fast_path() -> None:
    """Give the program an effect that never runs. A jitted function whose earlier call
    succeeded runs from JAX's C++ fast path, which turns a callback's error into a plain
    ``ValueError`` (jax-ml/jax#34083); a program with an effect always runs from the Python
    path, which raises ``jax.errors.JaxRuntimeError`` as documented (~0.1 ms a call)."""
    never = lax.optimization_barrier(jnp.zeros((), bool))  # False, unknown to the compiler
    lax.cond(never, lambda: jax.debug.callback(_unreachable), lambda: None)


def _unreachable() -> None:
    raise AssertionError("solvers: the fast-path guard of throw=True ran")


class _QuietSolveErrors(logging.Filter):
    """Drop JAX's log record (a traceback on stderr) of a callback that raised our
    ``SolveError``: the error itself still reaches the caller, so the log only repeats it."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], SolveError))


# JAX logs a failed pure_callback on this logger (a name, not an import: if it changes, the
# filter does nothing and JAX's traceback shows again).
logging.getLogger("jax._src.callback").addFilter(_QuietSolveErrors())


def _host_check(dtype, result, iterations, residual_norm):
    """Runs on the host with concrete numpy values: raise SolveError for a failure."""
    result = np.asarray(result)
    ok = result == 0
    view = Solution(np.zeros(result.shape + (0,)), result, ok, np.asarray(iterations),
                        np.zeros_like(result), np.zeros_like(result),
                        np.asarray(residual_norm), np.full(result.shape, np.nan))
    view.raise_if_failed()
    return np.zeros(result.shape, dtype=dtype)
