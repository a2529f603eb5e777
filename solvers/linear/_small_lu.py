"""Partial-pivoting LU of a small dense matrix written as unrolled element-wise array code.

LAPACK's ``getrf``/``getrs`` under ``vmap`` on CPU are one library call per batch member
(about 0.37 us for a 4 x 4 factor and solve, most of a transient step's time); this form
is unrolled at trace time into scalar selects and multiply-adds (pivot search and row
exchanges included) that XLA fuses into a few loops over the whole batch. For the small
systems of batched transients.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from ._dense import DenseLU, DenseOperator, dense_jacobian

#: the largest system that `SmallDenseLU` factors (the trace and the work grow as n^3)
MAX_N = 8


def lu_factor(a: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(lu, perm)`` with ``a[perm] = L U`` (L unit lower, both packed in ``lu``)."""
    n = a.shape[0]
    rows = [[a[i, j] for j in range(n)] for i in range(n)]
    perm = [jnp.asarray(i, jnp.int32) for i in range(n)]
    for k in range(n):
        p, best = jnp.asarray(k, jnp.int32), jnp.abs(rows[k][k])
        for i in range(k + 1, n):
            better = jnp.abs(rows[i][k]) > best
            p, best = jnp.where(better, i, p), jnp.where(better, jnp.abs(rows[i][k]), best)
        rows, perm = _swap(rows, perm, k, p)
        pivot = rows[k][k]
        pivot = jnp.where(pivot != 0, pivot, jnp.nan)  # a zero pivot: non-finite solves
        for i in range(k + 1, n):
            low = rows[i][k] / pivot
            rows[i] = rows[i][:k] + [low] + [rows[i][j] - low * rows[k][j] for j in range(k + 1, n)]
    return jnp.stack([jnp.stack(r) for r in rows]), jnp.stack(perm)


def _swap(rows: list, perm: list, k: int, p) -> tuple[list, list]:
    """Rows ``k`` and ``p >= k`` (a traced index) exchanged, as selects."""
    new_k, new_pk = list(rows[k]), perm[k]
    for i in range(k + 1, len(rows)):
        hit = p == i
        new_k = [jnp.where(hit, u, v) for u, v in zip(rows[i], new_k)]
        new_pk = jnp.where(hit, perm[i], new_pk)
        rows[i] = [jnp.where(hit, u, v) for u, v in zip(rows[k], rows[i])]
        perm[i] = jnp.where(hit, perm[k], perm[i])
    rows[k], perm[k] = new_k, new_pk
    return rows, perm


def _select(v: list, index) -> jax.Array:
    """``v[index]`` for a traced index, as selects."""
    out = v[0]
    for j in range(1, len(v)):
        out = jnp.where(index == j, v[j], out)
    return out


def _triangular(m: jax.Array, b: list, lower: bool, unit: bool) -> list:
    """Solve ``tril(m) y = b`` (``lower``) or ``triu(m) y = b``; ``unit``: ones on the diagonal."""
    n = len(b)
    y = [None] * n
    for i in (range(n) if lower else reversed(range(n))):
        known = range(i) if lower else range(i + 1, n)
        value = b[i]
        for j in known:
            value = value - m[i, j] * y[j]
        y[i] = value if unit else value / m[i, i]
    return y


def lu_solve(lu: jax.Array, perm: jax.Array, b: jax.Array) -> jax.Array:
    """``a^{-1} b`` from :func:`lu_factor`'s output."""
    n = b.shape[0]
    vb = [b[j] for j in range(n)]
    pb = [_select(vb, perm[i]) for i in range(n)]
    return jnp.stack(_triangular(lu, _triangular(lu, pb, True, True), False, False))


def lu_solve_transpose(lu: jax.Array, perm: jax.Array, b: jax.Array) -> jax.Array:
    """``a^{-T} b``: ``U^T z = b``, ``L^T w = z``, then ``x[perm] = w``."""
    n = b.shape[0]
    z = _triangular(lu.T, [b[j] for j in range(n)], True, False)
    w = _triangular(lu.T, z, False, True)
    x = [jnp.zeros_like(b[0])] * n
    for i in range(n):
        x = [jnp.where(perm[i] == j, w[i], x[j]) for j in range(n)]
    return jnp.stack(x)


@dataclasses.dataclass(frozen=True)
class SmallDenseLU(DenseLU):
    """`DenseLU` with the factorization as unrolled array code (:func:`lu_factor`): the
    same operator (``piv`` holds the row permutation), for systems of at most `MAX_N`."""

    def linearize(self, fn, x, params):
        f, jac = dense_jacobian(fn, x, params)
        if jac.shape[0] != jac.shape[1] or jac.shape[0] > MAX_N:
            raise ValueError(f"SmallDenseLU needs a square Jacobian of at most {MAX_N} "
                             f"unknowns, got shape {jac.shape}; use DenseLU.")
        lu, perm = lu_factor(jac)
        return f, DenseOperator(jac, lu, perm)

    def solve(self, operator: DenseOperator, b: jax.Array) -> jax.Array:
        return lu_solve(operator.lu, operator.piv, b)

    def solve_transpose(self, operator: DenseOperator, b: jax.Array) -> jax.Array:
        return lu_solve_transpose(operator.lu, operator.piv, b)
