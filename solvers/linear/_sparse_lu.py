"""Numeric phase of the level-scheduled sparse LU: factor, solve, refine, detect breakdown.

Arrays have the batch axes *last*: values ``(slots, *batch)``, vectors ``(n, *batch)``, so
each gather or segment sum moves contiguous rows of ``batch`` numbers (about 8x faster on
CPU than the batch-first layout plain ``vmap`` produces). `lu_solver` returns a
``custom_vmap`` function whose rule moves the vmapped axis to the end (in cache-sized
chunks on CPU) and calls itself, so nested ``vmap``s compose. Pivots are static
(`LUPlan`). Rows are scaled by their largest entry and a pivot is tiny relative to its
column, so the tests do not depend on units. A tiny pivot, or a backward error that stays
large after refinement, turns that system's solution into NaN: ``singular_jacobian`` where
the pivot's whole column vanished (J is singular), else ``linear_solve_failed`` (static
pivots that do not suit these values, e.g. a permutation's zero diagonal).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .._result import RESULTS
from ._sparse_plan import LUPlan
from ._sparsity import compressed_index


def _run(stages, step, carry):
    """Apply ``step`` level by level: unrolled stages directly, stacked ones in a scan."""
    for stage in stages:
        if stage.scanned:
            arrays = {k: jnp.asarray(v) for k, v in stage.arrays.items()}
            carry, _ = lax.scan(lambda c, s: (step(c, s), None), carry, arrays)
        else:
            carry = step(carry, stage.arrays)
    return carry


def _max0(x):
    """``max`` over axis 0 of a batch-last array by halving: plain elementwise maxima that
    XLA fuses (its CPU reduction over a major axis is a slow reduce-window)."""
    while x.shape[0] > 1:
        half = x.shape[0] // 2
        top = jnp.maximum(x[:half], x[half:2 * half])
        x = jnp.concatenate([top, x[2 * half:]]) if x.shape[0] % 2 else top
    return x[0] if x.shape[0] else jnp.zeros(x.shape[1:], x.dtype)  # of |.| or masks


def _any0(mask):
    return _max0(mask.astype(jnp.int8)) > 0


def _col(mask, ndim):
    """Reshape a 1-D per-row array to broadcast against ``(rows, *batch)``."""
    return jnp.reshape(mask, mask.shape + (1,) * (ndim - 1))


def factor(plan: LUPlan, v0: jax.Array) -> jax.Array:
    """LU of ``A[R][:, C]`` without pivoting; ``v0`` holds A's values in their slots."""

    def step(v, s):
        width = s["dl"].shape[0]
        acc = lax.dynamic_slice_in_dim(v, s["off"], width, axis=0)
        prod = v[s["pl"]] * v[s["pu"]]
        acc = acc - jax.ops.segment_sum(prod, s["seg"], num_segments=width)
        one = jnp.ones((), v.dtype)
        denom = jnp.where(_col(s["isl"], acc.ndim), acc[s["dl"]], one)
        return lax.dynamic_update_slice_in_dim(v, acc / denom, s["off"], axis=0)

    return _run(plan.factor_stages, step, v0)


def _sweep(stages, v, base, coef, divide):
    """One triangular sweep over padded vectors: ``x_k = (base_k - sum c x_p) / d_k``."""

    def step(x, s):
        width = s["diag"].shape[0]
        blk = lax.dynamic_slice_in_dim(base, s["off"], width, axis=0)
        prod = v[s[coef]] * x[s["part"]]
        blk = blk - jax.ops.segment_sum(prod, s["seg"], num_segments=width)
        if divide:
            blk = blk / v[s["diag"]]
        return lax.dynamic_update_slice_in_dim(x, blk, s["off"], axis=0)

    return _run(stages, step, jnp.zeros_like(base))


def _pad(plan, x):
    p = plan.vec_pad
    widths = [(1 + p, p)] + [(0, 0)] * (x.ndim - 1)
    return jnp.pad(x, widths)


def _unpad(plan, x):
    return x[1 + plan.vec_pad: 1 + plan.vec_pad + plan.row_perm.size]


def triangular_solve(plan: LUPlan, v: jax.Array, b: jax.Array, transpose: bool) -> jax.Array:
    """Solve ``A x = b`` (or ``A^T x = b``) with factor values ``v``."""
    if not transpose:
        y = _sweep(plan.down_stages, v, _pad(plan, b[plan.row_perm]), "cl", divide=False)
        x = _unpad(plan, _sweep(plan.up_stages, v, y, "cu", divide=True))
        return x[_inverse(plan.col_perm)]
    w = _sweep(plan.down_stages, v, _pad(plan, b[plan.col_perm]), "cu", divide=True)
    z = _unpad(plan, _sweep(plan.up_stages, v, w, "cl", divide=False))
    return z[_inverse(plan.row_perm)]


def _inverse(perm):
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.size)
    return inv


def _matvec(plan, a, x, transpose):
    """``A x`` or ``A^T x`` for pattern-aligned values ``a`` (batch-last layout)."""
    rows, cols = plan.pattern.rows, plan.pattern.cols
    if transpose:
        rows, cols = cols, rows
    return jax.ops.segment_sum(a * x[cols], rows, num_segments=plan.row_perm.size)


def _backward_error(plan, a, x, b, transpose):
    """Residual and per-system ``|b - A x|_inf / (|A|_inf |x|_inf + |b|_inf)``."""
    r = b - _matvec(plan, a, x, transpose)
    n = plan.row_perm.size
    a_norm = jnp.max(jax.ops.segment_sum(jnp.abs(a), plan.a_slot_rows, num_segments=n), axis=0)
    scale = a_norm * jnp.max(jnp.abs(x), axis=0) + jnp.max(jnp.abs(b), axis=0)
    tiny = jnp.finfo(a.dtype).tiny
    return r, jnp.max(jnp.abs(r), axis=0) / jnp.maximum(scale, tiny)


def _row_scales(plan, index, data):
    """``r``: one over each row's largest ``|A_ij|`` (rows of zeros keep theirs), so that
    ``diag(r) A`` has rows of largest entry 1 and pivot tests do not depend on units."""
    row_max = jax.ops.segment_max(jnp.abs(data[index]), plan.pattern.rows,
                                  num_segments=plan.row_perm.size)
    return 1 / jnp.maximum(row_max, jnp.finfo(data.dtype).tiny)


def _scaled(plan, index, data, r):
    """The pattern-aligned values of ``diag(r) A``."""
    return data[index] * r[plan.pattern.rows]


@functools.lru_cache(maxsize=32)
def _slot_rows(plan: LUPlan) -> np.ndarray:
    """The row of A whose entry initializes each factor slot (0 for empty slots)."""
    return np.append(plan.pattern.rows, 0)[plan.slot_src]


def _factor_impl(plan, index, data, pivot_tol, growth_limit):
    """``(v, r, code, risky)``: the factor values of the row-scaled ``diag(r) A``, the row
    scales, per system the pivots' result code (`_pivot_code`) and whether any system's
    element growth calls for refinement."""
    batch = data.shape[1:]
    r = _row_scales(plan, index, data)
    d_ext = jnp.concatenate([data, jnp.zeros((1,) + batch, data.dtype)])
    src = np.concatenate([index, [data.shape[0]]])
    v = factor(plan, d_ext[src[plan.slot_src]] * r[_slot_rows(plan)])
    pivot = jnp.abs(v[plan.diag_slots])
    tol = pivot_tol * jnp.finfo(data.dtype).eps  # scaled |A_ij| <= 1: pivots above are fine
    code = lax.cond(jnp.any(_any0(~(pivot > tol))), functools.partial(_pivot_code, plan, index),
                    _no_breakdown, v, data, r, tol)
    growth = _max0(jnp.abs(v))  # max|LU| / max|diag(r) A|, whose largest entry is 1
    return v, r, code, jnp.any(~(growth <= growth_limit))  # NaN growth is risky too


def _no_breakdown(v, data, r, tol):
    return jnp.full(v.shape[1:], RESULTS.successful.code(), jnp.int32)


def _pivot_code(plan, index, v, data, r, tol):
    """Per system: successful where no pivot vanished; else ``singular_jacobian`` where the
    first vanished pivot's whole column (pivot and L column before the division) vanished,
    so every pivot order meets a zero (J is singular, as partial pivoting would report), or
    the pattern is structurally singular; else ``linear_solve_failed``: a static pivot broke
    down on a Jacobian that may be regular (a permutation's zero diagonal). A pivot has
    vanished when below ``tol`` times its column's largest entry of ``diag(r) A``."""
    n = plan.diag_slots.size
    a = jnp.abs(_scaled(plan, index, data, r))
    col_max = jax.ops.segment_max(a, plan.pattern.cols, num_segments=n)
    tiny = tol * col_max[plan.col_perm]
    piv, lslots = _l_columns(plan)
    pivot = v[plan.diag_slots]
    vanished = ~(jnp.abs(pivot) > tiny)
    v_l = v[lslots]
    raw = jnp.where(jnp.isnan(v_l), 0, jnp.where(jnp.isinf(v_l), jnp.inf, v_l * pivot[piv]))
    col = jnp.maximum(jax.ops.segment_max(jnp.abs(raw), piv, num_segments=n), 0)
    dead = (col <= tiny) & ~jnp.isnan(pivot)
    first = jnp.argmax(vanished, axis=0)
    singular = jnp.take_along_axis(dead, first[None], axis=0)[0] | plan.structurally_singular
    code = jnp.where(singular, RESULTS.singular_jacobian.code(),
                     RESULTS.linear_solve_failed.code())
    return jnp.where(jnp.any(vanished, axis=0), code, RESULTS.successful.code()).astype(
        jnp.int32)


@functools.lru_cache(maxsize=32)
def _l_columns(plan: LUPlan):
    """``(pivot, slot)`` of each L entry: pivot k's L column follows its diagonal slot."""
    d = np.append((np.diff(plan.diag_slots) - 1) // 2, 0)  # the last pivot is a root
    piv = np.repeat(np.arange(d.size), d)
    start = np.cumsum(d) - d
    return piv, plan.diag_slots[piv] + 1 + np.arange(piv.size) - start[piv]


def _apply_impl(plan, index, data, fac, b, transpose, refine, backward_tol):
    """Solve with the factors ``fac`` of ``data``; where the element growth is large
    (static pivots gone bad), refine and check the backward error. Returns x (NaN for
    failed systems) and per system the result code: the pivots' code (`_pivot_code`), or
    a failed linear solve where a backward error stays too large."""
    v, r, code, risky = fac
    batch = data.shape[1:]
    eps = jnp.finfo(data.dtype).eps
    b = b if transpose else b * r  # diag(r) A x = diag(r) b; A^T (r y) = b

    def residual(x):  # only where growth is large: the common path skips the matvec
        return _backward_error(plan, _scaled(plan, index, data, r), x, b, transpose)

    def skip(x):
        return jnp.zeros_like(b), jnp.zeros(batch, b.dtype)

    def step(carry):  # one copy of the sweeps in the program: solve, then refinements
        k, x, res, _ = carry
        x = x + triangular_solve(plan, v, res, transpose)
        return (k + 1, x) + lax.cond(risky, residual, skip, x)

    def more(carry):
        k, _, _, err = carry
        return (k == 0) | (risky & (k <= refine) & jnp.any(err > 8 * eps))

    start = (0, jnp.zeros_like(b), b, jnp.zeros(batch, b.dtype))
    _, x, _, err = lax.while_loop(more, step, start)
    x = x * r if transpose else x
    pivot_ok = code == RESULTS.successful.code()
    ok = pivot_ok & ~(err > backward_tol) & ~_any0(~jnp.isfinite(x))
    result = jnp.where(ok | ~pivot_ok, code, RESULTS.linear_solve_failed.code())
    return jnp.where(ok[None], x, jnp.full((), jnp.nan, x.dtype)), result


def _solve_impl(plan, index, data, b, transpose, refine, pivot_tol, backward_tol,
                growth_limit):
    """Factor and solve (`_factor_impl`, then `_apply_impl`)."""
    fac = _factor_impl(plan, index, data, pivot_tol, growth_limit)
    return _apply_impl(plan, index, data, fac, b, transpose, refine, backward_tol)


def chunk_size(plan: LUPlan) -> int:
    """Systems per chunk under vmap on CPU (0: no chunking, on accelerators).

    A chunk's factors take about 4 MB, so each level's gathers hit cache instead of
    memory: 2x faster than one pass over a batch of 10 000 ladders (measured).
    """
    if jax.default_backend() != "cpu":
        return 0
    per_system = 8 * (plan.n_values + 4 * plan.row_perm.size)
    return int(2 ** np.clip(np.floor(np.log2(2 ** 22 / per_system)), 4, 10))


@functools.lru_cache(maxsize=32)
def lu_solver(plan: LUPlan, compressed: bool, transpose: bool, refine: int,
              pivot_tol: float, backward_tol: float, growth_limit: float):
    """A ``(data, b) -> (x, result code)`` function for this plan whose ``vmap`` uses the
    batch-last layout.

    ``data`` is the operator's array: pattern values, or the compressed ``J S`` when
    ``compressed`` (see `compressed_index`). Under ``vmap`` on CPU the batch is processed
    in cache-sized chunks (``lax.map`` with ``batch_size``) so each level's gathers stay in
    cache; on accelerators the whole batch goes at once.
    """
    index = compressed_index(plan.pattern) if compressed else np.arange(plan.pattern.nnz)
    impl = functools.partial(_solve_impl, plan, np.asarray(index, np.int64), transpose=transpose,
                             refine=refine, pivot_tol=pivot_tol, backward_tol=backward_tol,
                             growth_limit=growth_limit)

    @jax.custom_batching.custom_vmap
    def solve(data, b):
        return impl(data, b)

    @solve.def_vmap
    def _rule(axis_size, in_batched, data, b):
        data = _batch_first(data, in_batched[0], axis_size)
        b = _batch_first(b, in_batched[1], axis_size)
        chunk = chunk_size(plan)
        if 0 < chunk < axis_size:
            return _chunked(solve, data, b, axis_size, chunk), (True, True)
        x, result = solve(jnp.moveaxis(data, 0, -1), jnp.moveaxis(b, 0, -1))
        return (jnp.moveaxis(x, -1, 0), result), (True, True)

    return solve


def _chunked(solve, data, b, size, chunk):
    """``vmap(solve)`` over chunks of about ``chunk`` systems, one chunk at a time."""
    n_chunks = -(-size // chunk)
    chunk = -(-size // n_chunks)
    extra = n_chunks * chunk - size

    def split(x):
        x = jnp.pad(x, [(0, extra)] + [(0, 0)] * (x.ndim - 1), mode="edge") if extra else x
        return x.reshape((n_chunks, chunk) + x.shape[1:])

    out = lax.map(lambda db: jax.vmap(solve)(*db), (split(data), split(b)))
    return jax.tree_util.tree_map(
        lambda o: o.reshape((n_chunks * chunk,) + o.shape[2:])[:size], out)


def _batch_first(x, batched, size):
    return x if batched else jnp.broadcast_to(x[None], (size,) + x.shape)


@functools.lru_cache(maxsize=32)
def lu_factored(plan: LUPlan, compressed: bool, transpose: bool, refine: int,
                pivot_tol: float, backward_tol: float, growth_limit: float):
    """``(factorize, apply)``: ``factorize(data)`` the factors, ``apply(data, factors, b)``
    ``(x, result code)`` as `lu_solver`'s, so one factorization serves several solves
    (chord Newton). Under ``vmap`` both use the batch-last layout (no chunking)."""
    index = np.asarray(compressed_index(plan.pattern) if compressed
                       else np.arange(plan.pattern.nnz), np.int64)

    @jax.custom_batching.custom_vmap
    def factorize(data):
        return _factor_impl(plan, index, data, pivot_tol, growth_limit)

    @factorize.def_vmap
    def _factor_rule(axis_size, in_batched, data):
        v, r, code, risky = factorize(jnp.moveaxis(
            _batch_first(data, in_batched[0], axis_size), 0, -1))
        return ((jnp.moveaxis(v, -1, 0), jnp.moveaxis(r, -1, 0), code,
                 jnp.broadcast_to(risky, (axis_size,))), (True, True, True, True))

    @jax.custom_batching.custom_vmap
    def apply(data, fac, b):
        return _apply_impl(plan, index, data, fac, b, transpose, refine, backward_tol)

    @apply.def_vmap
    def _apply_rule(axis_size, in_batched, data, fac, b):
        last = lambda x, batched: jnp.moveaxis(_batch_first(x, batched, axis_size), 0, -1)  # noqa: E731
        v, r, code, risky = (last(f, bat) for f, bat in zip(fac, in_batched[1]))
        x, result = apply(last(data, in_batched[0]), (v, r, code, jnp.any(risky)),
                          last(b, in_batched[2]))
        return (jnp.moveaxis(x, -1, 0), result), (True, True)

    return factorize, apply
