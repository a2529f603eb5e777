"""Matrix-free Newton-Krylov linear solvers: Jacobian-vector products, never J itself."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.scipy.sparse.linalg as jssl

from ._abstract import AbstractLinearSolver, Residual


@jax.tree_util.register_pytree_node_class
class JacobianAt:
    """The Jacobian of ``fn`` at ``(x, params)``, applied by autodiff (fn is static)."""

    def __init__(self, fn: Residual, x: jax.Array, params: Any):
        self.fn, self.x, self.params = fn, x, params

    def tree_flatten(self):
        return (self.x, self.params), self.fn

    @classmethod
    def tree_unflatten(cls, fn, children):
        return cls(fn, *children)

    def _at_x(self, y):
        return self.fn(y, self.params)

    def jvp_fn(self):
        return jax.linearize(self._at_x, self.x)[1]

    def vjp_fn(self):
        pullback = jax.vjp(self._at_x, self.x)[1]
        return lambda v: pullback(v)[0]


@dataclasses.dataclass(frozen=True)
class _AbstractKrylov(AbstractLinearSolver):
    rtol: float = 1e-10
    atol: float = 0.0
    max_iters: int = 200

    def linearize(self, fn: Residual, x: jax.Array, params: Any):
        f = fn(x, params)
        if f.shape != x.shape:
            raise ValueError(
                f"{type(self).__name__} needs a square system, got {f.shape[0]} equations "
                f"in {x.shape[0]} unknowns; use LevenbergMarquardt with DenseLU instead."
            )
        return f, JacobianAt(fn, x, params)

    def solve(self, operator: JacobianAt, b: jax.Array) -> jax.Array:
        return self._krylov(operator.jvp_fn(), b)

    def solve_transpose(self, operator: JacobianAt, b: jax.Array) -> jax.Array:
        return self._krylov(operator.vjp_fn(), b)

    def matvec(self, operator: JacobianAt, v: jax.Array) -> jax.Array:
        return jax.jvp(operator._at_x, (operator.x,), (v,))[1]

    def rmatvec(self, operator: JacobianAt, v: jax.Array) -> jax.Array:
        return operator.vjp_fn()(v)

    def _krylov(self, apply, b):
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class GMRES(_AbstractKrylov):
    """Restarted GMRES on JVPs (``jax.scipy.sparse.linalg.gmres``).

    ``restart`` is the Krylov subspace size between restarts; ``max_iters`` bounds the
    number of restarts. Inexact steps are fine for Newton: its line search checks descent.
    """

    restart: int = 30

    def _krylov(self, apply, b):
        x, _ = jssl.gmres(apply, b, tol=self.rtol, atol=self.atol, restart=self.restart,
                          maxiter=self.max_iters, solve_method="batched")
        return x


@dataclasses.dataclass(frozen=True)
class BiCGStab(_AbstractKrylov):
    """BiCGStab on JVPs (``jax.scipy.sparse.linalg.bicgstab``): less memory than GMRES."""

    def _krylov(self, apply, b):
        x, _ = jssl.bicgstab(apply, b, tol=self.rtol, atol=self.atol, maxiter=self.max_iters)
        return x
