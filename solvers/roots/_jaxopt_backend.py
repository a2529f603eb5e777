"""jaxopt's root finders and least-squares solvers behind the solvers method interface.

Only jaxopt's public API is used (``jaxopt.Broyden``, ``jaxopt.GaussNewton``,
``jaxopt.LevenbergMarquardt``). jaxopt is unmaintained upstream, so its answers are not
trusted: the result code comes from our own check of ``max|F|`` at the returned point,
and jaxopt's state only says why a failure happened (iteration limit, line search, or
its own stopping test met while F is not small). Its implicit differentiation is off:
``solve_flat`` differentiates the root with the method's ``linear_solver``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax.numpy as jnp

from ..linear._dense import DenseLU
from ..linear._abstract import AbstractLinearSolver
from ._method import (AbstractRootMethod, FlatProblem, check_count, check_linear_solver,
                      check_tolerances, code, initial_checks, max_abs)
from .._result import RESULTS
from ._shape import check_square
from ._solution import FlatSolution, make_solution


@dataclasses.dataclass(frozen=True)
class _AbstractJaxopt(AbstractRootMethod):
    rtol: float = 1e-10
    atol: float = 1e-10
    max_steps: int = 200
    linear_solver: AbstractLinearSolver = DenseLU()
    options: tuple = ()  # (name, value) pairs passed to the jaxopt class, overriding ours

    def __post_init__(self) -> None:
        check_count(self, "max_steps", 1)
        check_tolerances(self, "rtol", "atol")
        check_linear_solver(self)
        options = dict(self.options)  # a dict is unhashable: methods are static under jit
        if not all(isinstance(k, str) for k in options):
            raise TypeError(f"{type(self).__name__}(options=...) takes jaxopt keyword "
                            f"arguments by name, got keys {list(options)!r}.")
        object.__setattr__(self, "options", tuple(sorted(options.items())))

    def _make(self, fn):
        raise NotImplementedError

    def _kwargs(self, **defaults):
        """Keyword arguments for the jaxopt class: ours, overridden by ``options``."""
        kwargs = dict(maxiter=self.max_steps, implicit_diff=False, **defaults)
        kwargs.update(dict(self.options))
        return kwargs

    def _counts(self, state):
        """(num_fev, num_jev) from jaxopt's state."""
        return state.iter_num + 1, state.iter_num

    def _why(self, state):
        """Code when our residual check fails but jaxopt stopped before maxiter."""
        return code(RESULTS.local_minimum)

    def run(self, problem: FlatProblem, x0, params: Any, active) -> FlatSolution:
        check_square(problem.fn, x0, params, self, self.least_squares)
        x0, f0, result0, done0 = initial_checks(problem.fn, x0, params, active, self.atol)
        solver = self._make(problem.fn)
        x, state = solver.run(x0, params)
        f = problem.fn(x, params)
        x_finite = jnp.all(jnp.isfinite(x))
        finite = x_finite & jnp.all(jnp.isfinite(f))
        root = finite & (max_abs(f) <= self.atol)
        stopped_early = state.iter_num < dict(self.options).get("maxiter", self.max_steps)
        # an iterate that went NaN/inf (x^2 + 1 = 0 has no real root) is jaxopt's divergence,
        # not a non-finite F: it ends where F has no root to step to
        result = jnp.where(
            root, code(RESULTS.successful),
            jnp.where(~x_finite, code(RESULTS.local_minimum),
                      jnp.where(~finite, code(RESULTS.nonfinite_residual),
                                jnp.where(stopped_early, self._why(state),
                                          code(RESULTS.max_steps_reached)))))
        failed_at_start = done0 & (result0 != int(RESULTS.successful))
        result = jnp.where(failed_at_start, result0, result)
        x = jnp.where(finite & ~failed_at_start, x, x0)
        nfev, njev = self._counts(state)
        return make_solution(x, result, state.iter_num, nfev, njev,
                             max_abs(problem.fn(x, params)))


@dataclasses.dataclass(frozen=True)
class JaxoptBroyden(_AbstractJaxopt):
    """``jaxopt.Broyden``: quasi-Newton (no Jacobians), backtracking line search."""

    def _make(self, fn):
        import jaxopt

        return jaxopt.Broyden(fun=fn, **self._kwargs(tol=self.atol))

    def _counts(self, state):
        return state.num_fun_eval, jnp.zeros_like(state.iter_num)

    def _why(self, state):
        return jnp.where(state.failed_linesearch, code(RESULTS.line_search_failed),
                         code(RESULTS.local_minimum))


@dataclasses.dataclass(frozen=True)
class JaxoptGaussNewton(_AbstractJaxopt):
    """``jaxopt.GaussNewton``: undamped Gauss-Newton (stops when its step norm <= rtol;
    unless ``max|F| <= atol`` there, that is ``local_minimum``)."""

    least_squares = True

    def _make(self, fn):
        import jaxopt

        return jaxopt.GaussNewton(residual_fun=fn, **self._kwargs(tol=self.rtol))


@dataclasses.dataclass(frozen=True)
class JaxoptLevenbergMarquardt(_AbstractJaxopt):
    """``jaxopt.LevenbergMarquardt`` (stops when ||J^T F|| <= 1e-3 atol; unless
    ``max|F| <= atol`` there, that is ``local_minimum``)."""

    least_squares = True

    def _make(self, fn):
        import jaxopt

        return jaxopt.LevenbergMarquardt(residual_fun=fn, **self._kwargs(tol=1e-3 * self.atol))
