"""Newton's method with a backtracking line search and model step limiting."""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from ._dense import DenseLU
from ._line_search import LineSearchResult, backtrack, half_sq_norm
from ._linear import AbstractLinearSolver
from ._method import (AbstractRootMethod, FlatProblem, apply_step_limit, code, freeze,
                      initial_checks, max_abs, step_is_small)
from ._result import RESULTS
from ._solution import FlatSolution, make_solution


class _State(NamedTuple):
    x: jax.Array
    f: jax.Array
    phi: jax.Array
    steps: jax.Array
    num_fev: jax.Array
    num_jev: jax.Array
    result: jax.Array
    done: jax.Array


def check_square(fn, x0, params, method: str) -> None:
    """Raise a clear error (at trace time) unless F maps n unknowns to n residuals."""
    out = jax.eval_shape(fn, x0, params)
    if x0.ndim != 1 or out.shape != x0.shape:
        raise ValueError(
            f"{method} needs a square system F: (n,) -> (n,); got x0 of shape {x0.shape} "
            f"and F(x0) of shape {out.shape}. Flatten the unknowns into one vector, or use "
            "solvers.LevenbergMarquardt() for least squares (more equations than unknowns)."
        )


@dataclasses.dataclass(frozen=True)
class Newton(AbstractRootMethod):
    """Newton's method, globalised by a backtracking (Armijo) line search on 0.5||F||^2.

    Converges when ``max|F| <= atol`` or the full Newton step satisfies
    ``|dx_i| <= rtol |x_i|`` for every i. The model's ``step_limit`` hook scales the step
    before the line search. ``rcond_tol`` only decides whether a failed line search is
    reported as ``singular_jacobian`` (ill-conditioned J) or ``line_search_failed``.
    """

    rtol: float = 1e-10
    atol: float = 1e-10
    max_steps: int = 50
    linear_solver: AbstractLinearSolver = DenseLU()
    line_search: bool = True
    max_backtracks: int = 30
    rcond_tol: float = 1e-13

    def run(self, problem: FlatProblem, x0, params: Any, active) -> FlatSolution:
        check_square(problem.fn, x0, params, "Newton")
        x0, f0, result, done = initial_checks(problem.fn, x0, params, active, self.atol)
        zero = jnp.zeros((), jnp.int32)
        state = _State(x0, f0, half_sq_norm(f0), zero, zero + 1, zero, result, done)
        state = lax.while_loop(lambda s: ~s.done,
                               lambda s: self._step(problem, params, s), state)
        return make_solution(state.x, state.result, state.steps, state.num_fev,
                             state.num_jev, max_abs(state.f))

    def _search(self, problem, params, s: _State, op, direction) -> LineSearchResult:
        if self.line_search:
            slope = jnp.dot(s.f, self.linear_solver.matvec(op, direction))
            return backtrack(problem.fn, s.x, direction, params, s.phi, slope,
                             max_backtracks=self.max_backtracks, active=~s.done)
        f = problem.fn(s.x + direction, params)
        phi = half_sq_norm(f)
        finite = jnp.isfinite(phi)
        return LineSearchResult(jnp.ones_like(phi), f, phi, finite, finite,
                                jnp.ones((), jnp.int32))

    def _step(self, problem: FlatProblem, params, s: _State) -> _State:
        ls = self.linear_solver
        _, op = ls.linearize(problem.fn, s.x, params)
        dx = -ls.solve(op, s.f)
        dx_ok = jnp.all(jnp.isfinite(dx))
        dx = jnp.where(dx_ok, dx, 0.0)
        small_step = dx_ok & step_is_small(dx, s.x, self.rtol)
        direction = apply_step_limit(problem, s.x, dx, params) * dx
        search = self._search(problem, params, s, op, direction)
        moved = search.ok & dx_ok
        x = jnp.where(moved, s.x + search.alpha * direction, s.x)
        f = jnp.where(moved, search.f, s.f)
        steps = s.steps + 1
        converged = (max_abs(f) <= self.atol) | small_step
        failure = jnp.where(
            ~dx_ok, code(RESULTS.singular_jacobian),
            jnp.where(search.ok, code(RESULTS.successful), self._why(ls, op, search)))
        failed = failure != int(RESULTS.successful)
        out_of_steps = steps >= self.max_steps
        result = jnp.where(converged, code(RESULTS.successful),
                           jnp.where(failed, failure,
                                     jnp.where(out_of_steps, code(RESULTS.max_steps_reached),
                                               code(RESULTS.successful))))
        new = _State(x, f, half_sq_norm(f), steps, s.num_fev + search.num_fev,
                     s.num_jev + 1, result, converged | failed | out_of_steps)
        return freeze(s.done, s, new)

    def _why(self, ls, op, search: LineSearchResult) -> jax.Array:
        """The code for a failed line search."""
        return jnp.where(~search.any_finite, code(RESULTS.nonfinite_residual),
                         jnp.where(ls.rcond(op) < self.rcond_tol,
                                   code(RESULTS.singular_jacobian),
                                   code(RESULTS.line_search_failed)))
