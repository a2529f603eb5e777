"""Powell's dogleg trust-region method (MINPACK ``hybrj`` style, exact Jacobians)."""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from ..linear._dense import DenseLU
from ._iterate import AbstractIterativeMethod, Progress, last_point
from ._line_search import half_sq_norm
from ..linear._abstract import AbstractLinearSolver, failure_code
from ._method import (FlatProblem, check_count, check_linear_solver, check_tolerances, code,
                      jacobian_finite, max_abs, relative_step, step_is_small)
from .._result import RESULTS
from ._solution import FlatSolution

SCALINGS = ("more", "current", "none")


class _State(NamedTuple):
    x: jax.Array
    f: jax.Array
    phi: jax.Array
    delta: jax.Array
    scale: jax.Array
    rel_step: jax.Array  # relative_step of the last Newton step
    scaling: jax.Array   # index into SCALINGS


class _Dogleg(NamedTuple):
    """The two ends of the dogleg in scaled variables y = D x."""

    newton: jax.Array   # Gauss-Newton step (0 if J is singular)
    newton_ok: jax.Array
    cauchy: jax.Array   # minimiser of the linear model along -D^-2 J^T f
    gradient: jax.Array  # unit scaled steepest-descent direction (x variables)
    scale: jax.Array
    linear_failure: jax.Array  # the code of the Newton step's linear solve, if it failed

    def step(self, delta):
        norm = lambda p: jnp.sqrt(jnp.sum((self.scale * p) ** 2))
        n_gn, n_c = norm(self.newton), norm(self.cauchy)
        d = self.newton - self.cauchy
        a = jnp.sum((self.scale * d) ** 2)
        b = 2 * jnp.sum(self.scale ** 2 * self.cauchy * d)
        c = n_c ** 2 - delta ** 2
        beta = (-b + jnp.sqrt(jnp.maximum(b * b - 4 * a * c, 0))) / jnp.where(a > 0, 2 * a, 1)
        mixed = self.cauchy + jnp.clip(beta, 0, 1) * d
        along_gradient = delta * self.gradient
        dogleg = jnp.where(n_c >= delta, along_gradient, mixed)
        dogleg = jnp.where(self.newton_ok, dogleg, jnp.where(n_c >= delta, along_gradient,
                                                             self.cauchy))
        return jnp.where(self.newton_ok & (n_gn <= delta), self.newton, dogleg)


@dataclasses.dataclass(frozen=True)
class TrustRegion(AbstractIterativeMethod):
    """Dogleg trust region on 0.5||F||^2 with Moré's column scaling.

    Steps interpolate between the Newton step and the steepest-descent (Cauchy) step inside
    a radius that grows when the linear model predicts well and shrinks when it does not:
    robust far from a root, Newton's quadratic convergence near one. Converges when
    ``max|F| <= atol`` or the Newton step satisfies ``|dx_i| <= rtol |x_i|``. Uses the
    linear solver's ``solve``/``matvec``/``rmatvec`` (and ``column_norms`` for the
    scaling; ``scaling`` picks it, see ``_scale``).
    """

    rtol: float = 1e-10
    atol: float = 1e-10
    max_steps: int = 200
    linear_solver: AbstractLinearSolver = DenseLU()
    factor: float = 100.0
    max_shrinks: int = 40
    scaling: str = "more"

    def __post_init__(self):
        for name, minimum in (("max_steps", 1), ("max_shrinks", 0)):
            check_count(self, name, minimum)
        check_tolerances(self, "rtol", "atol", "factor")
        check_linear_solver(self)
        if self.scaling not in SCALINGS:
            raise ValueError(f"TrustRegion scaling must be 'more', 'current' or 'none', "
                             f"got {self.scaling!r}.")

    def run_scaled(self, problem: FlatProblem, x0, params: Any, active,
                   scaling) -> FlatSolution:
        """``run`` with the scaling given as an index into SCALINGS (may be traced)."""
        return self.iterate(problem, x0, params, active, scaling)

    def init(self, problem: FlatProblem, x0, f0, params: Any, options: Any) -> _State:
        scaling = SCALINGS.index(self.scaling) if options is None else options
        return _State(x0, f0, half_sq_norm(f0), jnp.full((), -1.0, x0.dtype),
                      jnp.zeros_like(x0), jnp.full((), jnp.nan, x0.dtype),
                      jnp.asarray(scaling, jnp.int32))

    def finish(self, problem: FlatProblem, params: Any, state: _State, result):
        return last_point(state)

    def _scale(self, op, old, scaling):
        """Variable scaling D: Moré's running maximum of the Jacobian's column norms
        ("more"), the current column norms ("current"), or none ("none")."""
        norms = self.linear_solver.column_norms(op)
        if norms is None:  # e.g. matrix-free: no cheap column norms, so no scaling
            return jnp.ones_like(old)
        scale = jnp.where(scaling == 0, jnp.maximum(old, norms),
                          jnp.where(scaling == 1, norms, 1.0))
        return jnp.where(scale > 0, scale, 1.0)

    def _dogleg(self, op, f, scale) -> _Dogleg:
        ls = self.linear_solver
        linear = ls.solve_with_result(op, f)
        newton = -linear.value
        newton_ok = jnp.all(jnp.isfinite(newton))
        newton = jnp.where(newton_ok, newton, 0.0)
        g = ls.rmatvec(op, f) / scale                      # scaled gradient
        gnorm = jnp.sqrt(jnp.sum(g * g))
        direction = -g / scale / jnp.where(gnorm > 0, gnorm, 1.0)
        jd = ls.matvec(op, direction)
        curvature = jnp.sum(jd * jd)
        t = gnorm / jnp.where(curvature > 0, curvature, 1.0)
        return _Dogleg(newton, newton_ok, t * direction, direction, scale,
                       failure_code(linear.result))

    def _shrink(self, problem, params, s: _State, op, dog: _Dogleg, xnorm):
        """Shrink the radius until a dogleg step is accepted: ``(delta, tries, ok, p, F(x + p),
        phi)``."""
        ls = self.linear_solver
        delta0 = jnp.where(s.delta < 0, self.factor * jnp.where(xnorm > 0, xnorm, 1.0),
                           s.delta)

        def body(c):
            delta, tries, _, _, _, _ = c
            p = dog.step(delta)
            f = problem.fn(s.x + p, params)
            phi = half_sq_norm(f)
            jp = s.f + ls.matvec(op, p)
            pred = s.phi - 0.5 * jnp.sum(jp * jp)
            rho = (s.phi - phi) / jnp.where(pred > 0, pred, 1.0)
            ok = (pred > 0) & (rho > 1e-4) & jnp.isfinite(phi)
            pnorm = jnp.sqrt(jnp.sum((dog.scale * p) ** 2))
            delta = jnp.where(rho < 0.25, 0.5 * jnp.minimum(delta, pnorm),
                              jnp.where(rho > 0.75, jnp.maximum(delta, 2.0 * pnorm), delta))
            return delta, tries + 1, ok, p, f, phi

        def cond(c):
            delta, tries, ok = c[0], c[1], c[2]
            eps = jnp.finfo(s.x.dtype)
            tiny = delta <= 10 * eps.eps * jnp.maximum(xnorm, eps.tiny)
            return ~ok & ~tiny & (tries < self.max_shrinks)

        init = (delta0, jnp.zeros((), jnp.int32), jnp.asarray(False), jnp.zeros_like(s.x),
                s.f, s.phi)
        return lax.while_loop(cond, body, init)

    def step(self, problem: FlatProblem, params: Any, s: _State,
             running) -> tuple[_State, Progress]:
        ls = self.linear_solver
        _, op = ls.linearize(problem.fn, s.x, params)
        scale = self._scale(op, s.scale, s.scaling)
        dog = self._dogleg(op, s.f, scale)
        xnorm = jnp.sqrt(jnp.sum((scale * s.x) ** 2))
        delta, tries, ok, p, f_new, _ = self._shrink(problem, params, s, op, dog, xnorm)
        x = jnp.where(ok, s.x + p, s.x)
        f = jnp.where(ok, f_new, s.f)
        j_ok = jacobian_finite(ls, op, s.x)  # else a Newton step F / inf = 0 looks small
        converged = (max_abs(f) <= self.atol) | (dog.newton_ok & j_ok & step_is_small(
            dog.newton, s.x, self.rtol))
        failure = jnp.where(ok, code(RESULTS.successful),
                            jnp.where(~j_ok, code(RESULTS.nonfinite_jacobian),
                                      jnp.where(dog.newton_ok, code(RESULTS.local_minimum),
                                                dog.linear_failure)))
        rel_step = jnp.where(dog.newton_ok, relative_step(dog.newton, s.x), jnp.inf)
        new = _State(x, f, half_sq_norm(f), delta, scale, rel_step, s.scaling)
        return new, Progress(converged, failure, tries, jnp.ones((), jnp.int32))
