"""How Newton-type methods obtain and use the Jacobian of ``F(x, params)``.

A linear solver is a small, hashable, immutable object passed to a method (like diffrax's
solvers). It builds an *operator* for the Jacobian at ``x`` (a pytree of arrays that can be
carried through ``lax.while_loop`` and ``vmap``) and solves with it. Dense LU, matrix-free
Krylov and sparse (graph-coloured) back ends all implement this interface, so every method
works with every back end.
"""

from __future__ import annotations

import abc
from typing import Any, Callable, Optional

import jax

Residual = Callable[[jax.Array, Any], jax.Array]


class AbstractLinearSolver(abc.ABC):
    """Builds a Jacobian operator at a point and solves linear systems with it."""

    @abc.abstractmethod
    def linearize(self, fn: Residual, x: jax.Array, params: Any) -> tuple[jax.Array, Any]:
        """Return ``(fn(x, params), operator)`` where operator represents ``dF/dx`` at x."""

    @abc.abstractmethod
    def solve(self, operator: Any, b: jax.Array) -> jax.Array:
        """Return ``J^{-1} b`` (non-finite entries signal a singular Jacobian)."""

    @abc.abstractmethod
    def solve_transpose(self, operator: Any, b: jax.Array) -> jax.Array:
        """Return ``J^{-T} b`` (used by implicit differentiation)."""

    @abc.abstractmethod
    def matvec(self, operator: Any, v: jax.Array) -> jax.Array:
        """Return ``J v``."""

    @abc.abstractmethod
    def rmatvec(self, operator: Any, v: jax.Array) -> jax.Array:
        """Return ``J^T v``."""

    def rcond(self, operator: Any) -> jax.Array:
        """Estimate of the reciprocal condition number of J (1.0 when unknown).

        Methods use it only to name a failure ``singular_jacobian``; back ends that cannot
        estimate it cheaply keep this default.
        """
        return jax.numpy.ones(())

    def column_norms(self, operator: Any) -> Optional[jax.Array]:
        """Euclidean norms of J's columns (variable scaling of trust-region methods), or
        None when not cheap. This default forms J densely, so only up to 2000 unknowns;
        sparse back ends may override it with a sum over their stored values."""
        try:
            shape = jax.eval_shape(self.to_dense, operator).shape
        except NotImplementedError:
            return None
        if shape[1] > 2000:
            return None
        jac = self.to_dense(operator)
        return jax.numpy.sqrt(jax.numpy.sum(jax.numpy.where(
            jax.numpy.isfinite(jac), jac, 0.0) ** 2, axis=0))

    def to_dense(self, operator: Any) -> jax.Array:
        """Return J as a dense (m, n) matrix; for small systems, tests and least squares."""
        raise NotImplementedError(
            f"{type(self).__name__} cannot form a dense Jacobian; use a dense linear solver "
            "for this method or system size."
        )
