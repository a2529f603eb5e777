"""Matrix-free Newton-Krylov linear solvers: Jacobian-vector products, never J itself.

A Krylov solve that stops above its tolerance (it stalled, or ran out of iterations) is a
failed solve, never a poor or zero Newton direction: `krylov_result` checks the residual
``|b - A x|`` after the solve and turns such a result into NaN with
``RESULTS.linear_solve_failed`` (also for `SparseKrylov`).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any, Callable

import jax
import jax.numpy as jnp
import jax.scipy.sparse.linalg as jssl

from .._result import RESULTS
from ._abstract import AbstractLinearSolver, LinearSolution, Residual


#: The relative tolerance is at least this many units of roundoff of the solve's type: a
#: float32 solve cannot reach rtol = 1e-10 (float64 is unaffected above rtol ~ 1.4e-14).
ROUNDOFF_ULPS = 64


def krylov_rtol(rtol: float, dtype) -> float:
    """The relative tolerance a Krylov solve in ``dtype`` uses: ``rtol``, but at least
    `ROUNDOFF_ULPS` units of roundoff."""
    return max(float(rtol), ROUNDOFF_ULPS * float(jnp.finfo(dtype).eps))


def krylov_result(apply: Callable[[jax.Array], jax.Array], b: jax.Array, x: jax.Array,
                  rtol: float, atol: float, fail_factor: float) -> tuple[jax.Array, jax.Array]:
    """``(x, code)`` of an iterative solve of ``apply(x) = b``: x and ``successful`` when
    the residual ``|b - apply(x)| <= fail_factor * max(krylov_rtol(rtol) |b|, atol)`` and
    ``< |b|`` (2-norms; a solve that made no progress, x = 0 say, is no solve whatever
    the tolerances), else NaN and ``linear_solve_failed``. Under ``vmap`` each member is
    checked on its own."""
    b_norm = jnp.linalg.norm(b)
    r_norm = jnp.linalg.norm(b - apply(x))
    bound = jnp.maximum(krylov_rtol(rtol, b.dtype) * b_norm, atol)
    ok = (r_norm <= fail_factor * bound) & ((r_norm < b_norm) | (b_norm == 0))
    code = jnp.where(ok, RESULTS.successful.code(), RESULTS.linear_solve_failed.code())
    return jnp.where(ok, x, jnp.full((), jnp.nan, x.dtype)), code


def _check_tolerance(solver, name: str) -> float:
    value = getattr(solver, name)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{type(solver).__name__}({name}={value!r}): {name} must be a real "
                        f"number, got {type(value).__name__}; e.g. {name}=1e-10.")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{type(solver).__name__}({name}={value!r}): {name} must be a "
                         f"finite number >= 0, e.g. {name}=1e-10.")
    return float(value)


ITERS_HINT = "a Krylov solve with no iterations can never succeed; e.g. max_iters=200"
RESTART_HINT = "the Krylov subspace size between restarts, e.g. restart=30"


def check_krylov_settings(solver, counts: dict) -> None:
    """Check (and store as plain numbers) a Krylov solver's ``rtol``, ``atol``,
    ``fail_factor`` and the integer settings ``counts`` (name -> hint), when it is made."""
    for name in ("rtol", "atol", "fail_factor"):
        object.__setattr__(solver, name, _check_tolerance(solver, name))
    if solver.rtol == 0 and solver.atol == 0:
        raise ValueError(f"{type(solver).__name__}(rtol=0, atol=0) sets no tolerance to "
                         "stop at; give rtol > 0 (e.g. rtol=1e-10) or atol > 0.")
    if solver.fail_factor < 1:
        raise ValueError(f"{type(solver).__name__}(fail_factor={solver.fail_factor!r}): "
                         "fail_factor must be >= 1 (it loosens the tolerance by which "
                         "a finished solve is judged failed), e.g. fail_factor=1e3.")
    for name, hint in counts.items():
        object.__setattr__(solver, name, _check_count(solver, name, hint))


def _check_count(solver, name: str, hint: str) -> int:
    value = getattr(solver, name)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{type(solver).__name__}({name}={value!r}): {name} must be an "
                        f"integer, got {type(value).__name__} ({hint}).")
    if value < 1:
        raise ValueError(f"{type(solver).__name__}({name}={value!r}): {name} must be >= 1 "
                         f"({hint}).")
    return int(value)


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
    fail_factor: float = dataclasses.field(default=1e3, kw_only=True)

    def __post_init__(self):
        check_krylov_settings(self, {"max_iters": ITERS_HINT})

    def linearize(self, fn: Residual, x: jax.Array, params: Any):
        f = fn(x, params)
        if f.shape != x.shape:
            raise ValueError(
                f"{type(self).__name__} needs a square system, got {f.shape[0]} equations "
                f"in {x.shape[0]} unknowns; use LevenbergMarquardt with DenseLU instead."
            )
        return f, JacobianAt(fn, x, params)

    def solve_with_result(self, operator: JacobianAt, b: jax.Array) -> LinearSolution:
        """``J^{-1} b`` and ``successful``, or NaN and ``linear_solve_failed`` when the
        residual stays above ``fail_factor * max(rtol |b|, atol)``."""
        return LinearSolution(*self._checked(operator.jvp_fn(), b))

    def solve(self, operator: JacobianAt, b: jax.Array) -> jax.Array:
        return self._checked(operator.jvp_fn(), b)[0]

    def solve_transpose(self, operator: JacobianAt, b: jax.Array) -> jax.Array:
        return self._checked(operator.vjp_fn(), b)[0]

    def matvec(self, operator: JacobianAt, v: jax.Array) -> jax.Array:
        return jax.jvp(operator._at_x, (operator.x,), (v,))[1]

    def rmatvec(self, operator: JacobianAt, v: jax.Array) -> jax.Array:
        return operator.vjp_fn()(v)

    def _checked(self, apply, b):
        x = self._krylov(apply, b)
        return krylov_result(apply, b, x, self.rtol, self.atol, self.fail_factor)

    def _krylov(self, apply, b):
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class GMRES(_AbstractKrylov):
    """Restarted GMRES on JVPs (``jax.scipy.sparse.linalg.gmres``).

    ``restart`` is the Krylov subspace size between restarts (capped at the number of
    unknowns); ``max_iters`` bounds the number of restarts. ``rtol``/``atol``: the stopping
    test ``|b - J x| <= max(rtol |b|, atol)``. A solve whose residual ends above
    ``fail_factor`` times that bound gives NaN and ``RESULTS.linear_solve_failed``, so the
    Newton step fails instead of being a zero step that passes the step test: restarted
    GMRES can stall whatever ``max_iters`` (e.g. on a cyclic shift longer than
    ``restart``); raise ``restart`` or use a factorization (`DenseLU`, `SparseLU`). For
    inexact Newton steps, loosen ``rtol`` (e.g. 1e-4): the line search checks descent.
    """

    restart: int = 30

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "restart", _check_count(self, "restart", RESTART_HINT))

    def _krylov(self, apply, b):
        x, _ = jssl.gmres(apply, b, tol=krylov_rtol(self.rtol, b.dtype), atol=self.atol,
                          restart=self.restart, maxiter=self.max_iters, solve_method="batched")
        return x


@dataclasses.dataclass(frozen=True)
class BiCGStab(_AbstractKrylov):
    """BiCGStab on JVPs (``jax.scipy.sparse.linalg.bicgstab``): less memory than GMRES.

    ``max_iters`` bounds the iterations. A solve whose residual ends above
    ``fail_factor * max(rtol |b|, atol)`` (a breakdown or stall) gives NaN and
    ``RESULTS.linear_solve_failed``, as `GMRES` does.
    """

    def _krylov(self, apply, b):
        x, _ = jssl.bicgstab(apply, b, tol=krylov_rtol(self.rtol, b.dtype), atol=self.atol,
                             maxiter=self.max_iters)
        return x
