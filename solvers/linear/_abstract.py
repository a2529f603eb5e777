"""How Newton-type methods obtain and use the Jacobian of ``F(x, params)``.

A linear solver is a small, hashable, immutable object passed to a method (like lineax's
solvers): configuration only. It builds an *operator* for the Jacobian at ``x`` (a pytree of
arrays that can be carried through ``lax.while_loop`` and ``vmap``) and solves with it,
returning the value and a result code (`solve_with_result`). Sparse back ends need the
Jacobian's sparsity: a solve binds them to the system's pattern (`bind`), so
``Newton(linear_solver=SparseLU())`` is written before anything is lowered. Dense LU,
matrix-free Krylov and sparse (graph-coloured) back ends all implement this interface, so
every method works with every back end.
"""

from __future__ import annotations

import abc
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp

from .._result import RESULTS

Residual = Callable[[jax.Array, Any], jax.Array]


class LinearSolution(NamedTuple):
    """A linear solve's ``value`` and its ``result`` code: ``RESULTS.successful``,
    ``singular_jacobian`` (a pivot vanished) or ``linear_solve_failed`` (no vanishing
    pivot, but the solve is not accurate: static pivots broke down, Krylov stalled)."""

    value: jax.Array
    result: jax.Array


def finite_result(x: jax.Array) -> jax.Array:
    """The code of a solve that signals failure only by non-finite entries."""
    return jnp.where(jnp.all(jnp.isfinite(x)), RESULTS.successful.code(),
                     RESULTS.singular_jacobian.code())


def failure_code(result: jax.Array) -> jax.Array:
    """The code of a linear solve that gave a non-finite value: its own failure code, or
    ``singular_jacobian`` when it reported success (the non-finite value came from its
    input)."""
    return jnp.where(result == int(RESULTS.successful), RESULTS.singular_jacobian.code(), result)


class AbstractLinearSolver(abc.ABC):
    """Builds a Jacobian operator at a point and solves linear systems with it."""

    @abc.abstractmethod
    def linearize(self, fn: Residual, x: jax.Array, params: Any) -> tuple[jax.Array, Any]:
        """Return ``(fn(x, params), operator)`` where operator represents ``dF/dx`` at x."""

    #: Whether `bind` must give this solver a sparsity pattern before it can be used.
    needs_sparsity: bool = False

    def bind(self, pattern: Any) -> "AbstractLinearSolver":
        """This solver for a Jacobian with sparsity ``pattern`` (a ``SparsityPattern``, or
        None when unknown). Solves call it for every linear solver of the method; solvers
        that need no pattern, or already have one, return themselves."""
        return self

    @abc.abstractmethod
    def solve(self, operator: Any, b: jax.Array) -> jax.Array:
        """Return ``J^{-1} b`` (non-finite entries signal failure; `solve_with_result`
        says which)."""

    def solve_with_result(self, operator: Any, b: jax.Array) -> LinearSolution:
        """``J^{-1} b`` and its result code (this default: non-finite means singular)."""
        x = self.solve(operator, b)
        return LinearSolution(x, finite_result(x))

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
