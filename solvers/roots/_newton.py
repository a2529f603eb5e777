"""Newton's method with a backtracking line search (optionally a watchdog) and model step
limiting."""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from ..linear._dense import DenseLU
from ._iterate import AbstractIterativeMethod, Progress
from ._line_search import LineSearchResult, backtrack, half_sq_norm
from ..linear._abstract import AbstractLinearSolver, failure_code
from ._method import (FlatProblem, apply_step_limit, check_count, check_linear_solver,
                      check_tolerances, code, jacobian_finite, max_abs, relative_step,
                      step_is_small)
from .._result import RESULTS


class _State(NamedTuple):
    x: jax.Array
    f: jax.Array
    phi: jax.Array
    best: tuple          # (x, f, phi): the smallest ||F|| so far (the watchdog's point)
    streak: jax.Array    # full steps in a row that did not improve on `best`
    rel_step: jax.Array  # relative_step of the last Newton step
    watchdog: jax.Array  # the watchdog's length (``Newton.watchdog``, or traced: ``options``)


@dataclasses.dataclass(frozen=True)
class Newton(AbstractIterativeMethod):
    """Newton's method, globalised by a backtracking (Armijo) line search on 0.5||F||^2.

    Converges when ``max|F| <= atol`` or the full Newton step satisfies
    ``|dx_i| <= rtol |x_i|`` for every i. The model's ``step_limit`` hook scales the step
    before the line search. ``rcond_tol`` only decides whether a failed line search is
    reported as ``singular_jacobian`` (ill-conditioned J) or ``line_search_failed``.

    ``watchdog = M > 0`` (Chamberlain et al.'s watchdog technique) takes full steps, needing
    only a finite residual, for up to M steps in a row that do not lower ||F|| below its best
    so far; then it returns to the best point and backtracks from there. A monotone line
    search stalls where one full step raises ||F|| on the way to a fast convergence (from a
    far start on a network with power-law element laws, the first step overshoots: damped
    steps of 1/256 make no progress while full Newton converges in 8). An unconverged run
    returns its best point. ``iterate(..., options=M)`` runs with watchdog length ``M``
    (traced: one compiled loop serves several lengths, as ``Default`` runs it).
    """

    exact_residual_type = True  # its line search keeps F in the carry beside x

    rtol: float = 1e-10
    atol: float = 1e-10
    max_steps: int = 50
    linear_solver: AbstractLinearSolver = DenseLU()
    line_search: bool = True
    max_backtracks: int = 30
    rcond_tol: float = 1e-13
    watchdog: int = 0

    def __post_init__(self) -> None:
        for name, minimum in (("max_steps", 1), ("max_backtracks", 0), ("watchdog", 0)):
            check_count(self, name, minimum)
        check_tolerances(self, "rtol", "atol", "rcond_tol")
        check_linear_solver(self)

    def init(self, problem: FlatProblem, x0, f0, params: Any, options: Any) -> _State:
        phi0 = half_sq_norm(f0)
        watchdog = jnp.asarray(self.watchdog if options is None else options, jnp.int32)
        return _State(x0, f0, phi0, (x0, f0, phi0), jnp.zeros((), jnp.int32),
                      jnp.full((), jnp.nan, x0.dtype), watchdog)

    def finish(self, problem: FlatProblem, params: Any, state: _State, result):
        x, f = state.x, state.f
        worse = ((state.watchdog > 0) & (state.best[2] < state.phi)
                 & (result != int(RESULTS.successful)))
        x, f, _ = _pick(worse, state.best, (x, f, state.phi))
        return x, max_abs(f), state.rel_step

    def _relaxed(self, s: _State) -> jax.Array:
        """Whether this step is a watchdog's full step (no sufficient-decrease test)."""
        return (s.watchdog > 0) & self.line_search & (s.streak < s.watchdog)

    @staticmethod
    def _step_test_valid(ls, op, x, deciding, slope) -> jax.Array:
        """Whether the step test may count where it ``deciding``-ly would: for a finite
        Jacobian only (an inf entry gives dx = F / inf = 0 exactly, which passes it anywhere:
        sqrt(x) = 2 at x = 0). The line search's slope F.(J d) is finite exactly then (an inf
        or NaN entry of J makes its row of J d inf or NaN), so it costs nothing; without a
        search, one matvec where the test decides."""
        if slope is not None:
            return ~deciding | jnp.isfinite(slope)
        return lax.cond(deciding, lambda: jacobian_finite(ls, op, x), lambda: jnp.asarray(True))

    def _search(self, problem, params, s: _State, slope, direction,
                running) -> LineSearchResult:
        if self.line_search:
            relaxed = self._relaxed(s)
            found = backtrack(problem.fn, s.x, direction, params, s.phi, slope,
                              max_backtracks=self.max_backtracks, active=running & ~relaxed)
            return found._replace(ok=jnp.where(relaxed, found.any_finite, found.ok))
        f = problem.fn(s.x + direction, params)
        phi = half_sq_norm(f)
        finite = jnp.isfinite(phi)
        return LineSearchResult(jnp.ones_like(phi), f, phi, finite, finite,
                                jnp.ones((), jnp.int32))

    def step(self, problem: FlatProblem, params: Any, s: _State,
             running) -> tuple[_State, Progress]:
        ls = self.linear_solver
        _, op = ls.linearize(problem.fn, s.x, params)
        linear = ls.solve_with_result(op, s.f)
        dx = -linear.value
        dx_ok = jnp.all(jnp.isfinite(dx))
        dx = jnp.where(dx_ok, dx, 0.0)
        small_step = dx_ok & step_is_small(dx, s.x, self.rtol)
        direction = apply_step_limit(problem, s.x, dx, params) * dx
        slope = jnp.dot(s.f, ls.matvec(op, direction)) if self.line_search else None
        search = self._search(problem, params, s, slope, direction, running)
        moved = search.ok & dx_ok
        x = jnp.where(moved, s.x + search.alpha * direction, s.x)
        f = jnp.where(moved, search.f, s.f)
        phi = jnp.where(moved, search.phi, s.phi)
        f_small = max_abs(f) <= self.atol
        j_ok = self._step_test_valid(ls, op, s.x, small_step & ~f_small, slope)
        converged = f_small | (small_step & j_ok)
        searched = search.ok | self._relaxed(s)  # a failed full step goes back to the best
        # The diagnosis (a matvec, the pivot ratio) runs only after a failed step: a cond
        # (a select under vmap, where both sides run as they did before).
        failure = lax.cond(dx_ok & searched & j_ok, lambda: code(RESULTS.successful),
                           lambda: self._failure(ls, op, s.x, linear, dx_ok, search))
        x, f, phi, best, streak = self._watch(s, x, f, phi, search.ok, converged)
        rel_step = jnp.where(dx_ok, relative_step(dx, s.x), jnp.inf)
        return (_State(x, f, phi, best, streak, rel_step, s.watchdog),
                Progress(converged, failure, search.num_fev, jnp.ones((), jnp.int32)))

    def _watch(self, s: _State, x, f, phi, ok, converged):
        """The watchdog's book-keeping: a new best resets the streak; a full step that is
        not finite, or the M-th in a row without a new best, returns to the best point,
        from which the next step backtracks. A converged or unwatched run never goes back."""
        improved = phi <= (1.0 - 1e-4) * s.best[2]
        streak = jnp.where(improved, 0, s.streak + 1)
        back = (self._relaxed(s) & ~improved & ~converged
                & (~ok | (streak >= s.watchdog)))
        best = _pick(improved, (x, f, phi), s.best)
        x, f, phi = _pick(back, best, (x, f, phi))
        return x, f, phi, best, jnp.where(back, s.watchdog, streak)

    def _failure(self, ls, op, x, linear, dx_ok, search: LineSearchResult) -> jax.Array:
        """The code of a failed step: no finite Newton step (why), else a failed search."""
        j_ok = jacobian_finite(ls, op, x)
        no_step = jnp.where(j_ok, failure_code(linear.result), code(RESULTS.nonfinite_jacobian))
        return jnp.where(~dx_ok | ~j_ok, no_step, self._why(ls, op, search))

    def _why(self, ls, op, search: LineSearchResult) -> jax.Array:
        """The code for a failed line search."""
        return jnp.where(~search.any_finite, code(RESULTS.nonfinite_residual),
                         jnp.where(ls.rcond(op) < self.rcond_tol,
                                   code(RESULTS.singular_jacobian),
                                   code(RESULTS.line_search_failed)))


def _pick(cond, a, b):
    """``a`` where ``cond`` else ``b``, leaf by leaf."""
    return jax.tree_util.tree_map(lambda u, v: jnp.where(cond, u, v), a, b)
