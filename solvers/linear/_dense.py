"""Dense Jacobian by forward-mode autodiff, solved by LU: the back end for small systems."""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl

from ._abstract import AbstractLinearSolver, Residual


class DenseOperator(NamedTuple):
    """J as a dense (m, n) matrix plus its LU factors (None unless J is square)."""

    jac: jax.Array
    lu: Optional[jax.Array]
    piv: Optional[jax.Array]


def dense_jacobian(fn: Residual, x: jax.Array, params: Any) -> tuple[jax.Array, jax.Array]:
    """``(F(x), dF/dx)`` in one forward pass: one primal, n tangents batched."""
    basis = jnp.eye(x.shape[0], dtype=x.dtype)
    return jax.vmap(
        lambda t: jax.jvp(lambda y: fn(y, params), (x,), (t,)), out_axes=(None, 1)
    )(basis)


def _require_square(op: DenseOperator) -> None:
    if op.lu is None:
        m, n = op.jac.shape
        raise ValueError(
            f"DenseLU.solve needs a square Jacobian, got {m} equations in {n} unknowns; "
            "use solvers.LevenbergMarquardt() for over- or under-determined systems."
        )


def _factor_dtype(dtype) -> Any:
    """The type LU factors in: float32 for half precision, which LAPACK and cuSOLVER lack."""
    return jnp.float32 if jnp.dtype(dtype).itemsize < 4 else dtype


@dataclasses.dataclass(frozen=True)
class DenseLU(AbstractLinearSolver):
    """Dense Jacobian (``jax.jvp`` over the identity, or assembled element by element when
    ``fn`` is a lowered System's residual and that is cheaper) and partial-pivoting LU.

    ``rcond`` is the pivot ratio ``min|U_ii| / max|U_ii|``: cheap, and zero exactly when
    the LU factorisation met a zero pivot.
    """

    def linearize(self, fn: Residual, x: jax.Array, params: Any):
        assemble = getattr(fn, "dense_jacobian", None)
        assemble = assemble(x.shape[-1]) if assemble is not None and x.ndim == 1 else None
        f, jac = (assemble if assemble is not None else partial(dense_jacobian, fn))(x, params)
        if jac.shape[0] != jac.shape[1]:
            return f, DenseOperator(jac, None, None)
        lu, piv = jsl.lu_factor(jac.astype(_factor_dtype(jac.dtype)))
        return f, DenseOperator(jac, lu, piv)

    def solve(self, operator: DenseOperator, b: jax.Array) -> jax.Array:
        _require_square(operator)
        wide = b.astype(operator.lu.dtype)
        return jsl.lu_solve((operator.lu, operator.piv), wide).astype(b.dtype)

    def solve_transpose(self, operator: DenseOperator, b: jax.Array) -> jax.Array:
        _require_square(operator)
        wide = b.astype(operator.lu.dtype)
        return jsl.lu_solve((operator.lu, operator.piv), wide, trans=1).astype(b.dtype)

    def matvec(self, operator: DenseOperator, v: jax.Array) -> jax.Array:
        return operator.jac @ v

    def rmatvec(self, operator: DenseOperator, v: jax.Array) -> jax.Array:
        return operator.jac.T @ v

    def rcond(self, operator: DenseOperator) -> jax.Array:
        if operator.lu is None:
            return jnp.ones((), operator.jac.dtype)
        pivots = jnp.abs(jnp.diagonal(operator.lu))
        biggest = jnp.max(pivots)
        return jnp.where(biggest > 0, jnp.min(pivots) / jnp.where(biggest > 0, biggest, 1), 0)

    def to_dense(self, operator: DenseOperator) -> jax.Array:
        return operator.jac
