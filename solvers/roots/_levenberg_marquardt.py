"""Levenberg-Marquardt: damped Gauss-Newton for roots and (m > n) least squares."""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from ..linear._dense import DenseLU
from ._iterate import AbstractIterativeMethod, Progress, last_point
from ._line_search import half_sq_norm
from ..linear._abstract import AbstractLinearSolver
from ._method import (FlatProblem, check_count, check_linear_solver, check_tolerances, code,
                      max_abs, relative_step, step_is_small)
from .._result import RESULTS


def _eps(x):
    return float(jnp.finfo(x.dtype).eps)


class _State(NamedTuple):
    x: jax.Array
    f: jax.Array
    phi: jax.Array
    lam: jax.Array
    scale: jax.Array
    rel_step: jax.Array  # relative_step of the last Gauss-Newton step


class _Model(NamedTuple):
    """SVD of the column-scaled Jacobian ``J D^-1 = U S V^T`` at the current point."""

    vt: jax.Array
    s: jax.Array
    utf: jax.Array     # U^T f
    scale: jax.Array   # D
    f: jax.Array
    full_rank: jax.Array

    def step(self, lam):
        """The damped step p solving (J^T J + lam D^2) p = -J^T f."""
        return -(self.vt.T @ (self.s / (self.s ** 2 + lam) * self.utf)) / self.scale

    def predicted(self, lam, phi):
        """Decrease of 0.5||f + J p||^2 predicted by the linear model."""
        shrink = lam / (self.s ** 2 + lam)
        rest = jnp.sum(self.f * self.f) - jnp.sum(self.utf * self.utf)
        return phi - 0.5 * (jnp.sum((shrink * self.utf) ** 2) + rest)


class _Inner(NamedTuple):
    lam: jax.Array
    nu: jax.Array
    tries: jax.Array
    accepted: jax.Array
    negligible: jax.Array
    p: jax.Array
    f: jax.Array
    phi: jax.Array


@dataclasses.dataclass(frozen=True)
class LevenbergMarquardt(AbstractIterativeMethod):
    """Levenberg-Marquardt with Moré's column scaling and Nielsen's damping update.

    Works for square systems and for least squares, m > n. Converges when ``max|F| <= atol``
    or the Gauss-Newton step is within ``rtol`` of x while F lies in the range of J (so the
    equations agree). A stationary point of ||F|| that is not a root (``max_j |J_j . F| /
    (|J_j| |F|) <= gtol``, no step reduces ||F||, or a vanishing step with F outside the
    range of J: the least-squares point of inconsistent equations) is ``local_minimum``,
    never ``successful``: its x is the best fit, its ``residual_norm`` says how far from a
    root. Needs a linear solver that can form a dense Jacobian (``to_dense``).
    """

    least_squares = True

    rtol: float = 1e-10
    atol: float = 1e-10
    max_steps: int = 200
    linear_solver: AbstractLinearSolver = DenseLU()
    gtol: float = 1e-12
    tau: float = 1e-3
    max_rejections: int = 40

    def __post_init__(self) -> None:
        for name, minimum in (("max_steps", 1), ("max_rejections", 0)):
            check_count(self, name, minimum)
        check_tolerances(self, "rtol", "atol", "gtol", "tau")
        check_linear_solver(self)

    def init(self, problem: FlatProblem, x0, f0, params: Any, options: Any) -> _State:
        return _State(x0, f0, half_sq_norm(f0), jnp.full((), -1.0, x0.dtype),
                      jnp.zeros_like(x0), jnp.full((), jnp.nan, x0.dtype))

    def finish(self, problem: FlatProblem, params: Any, state: _State, result):
        return last_point(state)

    def _model(self, problem, params, s: _State):
        _, op = self.linear_solver.linearize(problem.fn, s.x, params)
        jac = self.linear_solver.to_dense(op)
        jac_ok = jnp.all(jnp.isfinite(jac))
        jac = jnp.where(jac_ok, jac, 0.0)
        scale = jnp.maximum(s.scale, jnp.sqrt(jnp.sum(jac * jac, axis=0)))
        scale = jnp.where(scale > 0, scale, 1.0)
        u, sv, vt = jnp.linalg.svd(jac / scale[None, :], full_matrices=False)
        cutoff = _eps(s.x) * max(jac.shape) * sv[0]
        full_rank = (sv.shape[0] == s.x.shape[0]) & (sv[-1] > cutoff)
        return _Model(vt, sv, u.T @ s.f, scale, s.f, full_rank), jac, jac_ok

    def _search(self, problem, params, s: _State, model: _Model, lam0) -> _Inner:
        """Increase the damping until a step reduces ||F|| (gain ratio > 1e-4)."""

        def body(c: _Inner) -> _Inner:
            p = model.step(c.lam)
            f = problem.fn(s.x + p, params)
            phi = half_sq_norm(f)
            pred = model.predicted(c.lam, s.phi)
            rho = (s.phi - phi) / jnp.where(pred > 0, pred, 1.0)
            ok = (pred > 0) & (rho > 1e-4) & jnp.isfinite(phi)
            lam = jnp.where(ok, c.lam * jnp.maximum(1 / 3, 1 - (2 * rho - 1) ** 3), c.lam * c.nu)
            negligible = jnp.all(jnp.abs(p) <= 4 * _eps(s.x) * jnp.abs(s.x)) | ~jnp.isfinite(
                lam * 1e10)
            return _Inner(lam, jnp.where(ok, 2.0, 2 * c.nu), c.tries + 1, ok, negligible,
                          p, f, phi)

        def cond(c: _Inner):
            return ~c.accepted & ~c.negligible & (c.tries < self.max_rejections)

        zero = jnp.zeros((), jnp.int32)
        init = _Inner(lam0, jnp.full_like(lam0, 2.0), zero, jnp.asarray(False),
                      jnp.asarray(False), jnp.zeros_like(s.x), s.f, s.phi)
        return lax.while_loop(cond, body, init)

    def step(self, problem: FlatProblem, params: Any, s: _State,
             running) -> tuple[_State, Progress]:
        model, jac, jac_ok = self._model(problem, params, s)
        lam0 = jnp.where(s.lam < 0, self.tau * model.s[0] ** 2, s.lam)
        lam0 = jnp.maximum(lam0, _eps(s.x) * model.s[0] ** 2 + jnp.finfo(s.x.dtype).tiny)
        inner = self._search(problem, params, s, model, lam0)
        moved = inner.accepted & jac_ok
        x = jnp.where(moved, s.x + inner.p, s.x)
        f = jnp.where(moved, inner.f, s.f)
        gauss_newton = model.step(0.0)
        gn_small = model.full_rank & step_is_small(gauss_newton, s.x, self.rtol)
        in_range = jnp.sum(model.utf ** 2) >= 0.5 * jnp.sum(s.f ** 2)  # F ~ -J p: consistent
        norms = jnp.sqrt(jnp.sum(jac * jac, axis=0)) * jnp.sqrt(2 * s.phi)
        cosine = max_abs(jnp.where(norms > 0, (jac.T @ s.f) / jnp.where(norms > 0, norms, 1), 0))
        stationary = (cosine <= self.gtol) | ~inner.accepted | (gn_small & ~in_range)
        converged = (max_abs(f) <= self.atol) | (gn_small & in_range)
        failure = jnp.where(~jac_ok, code(RESULTS.nonfinite_jacobian),
                            jnp.where(stationary, code(RESULTS.local_minimum),
                                      code(RESULTS.successful)))
        rel_step = jnp.where(model.full_rank, relative_step(gauss_newton, s.x), jnp.inf)
        new = _State(x, f, half_sq_norm(f), inner.lam, model.scale, rel_step)
        return new, Progress(converged, failure, inner.tries, jnp.ones((), jnp.int32))
