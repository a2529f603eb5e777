"""Jacobian sparsity patterns and graph-coloured sparse Jacobians.

A `SparsityPattern` lists the structural nonzeros ``(rows, cols)`` of an ``m x n`` Jacobian
(a superset is fine: extra entries only cost work). Columns that share no row get one
colour, so the Jacobian is recovered from ``n_colors`` JVPs instead of ``n`` (Curtis, Powell
& Reid): one ``jax.linearize`` plus a ``vmap`` over the seed directions. Values are stored
aligned with the pattern (row-major order), ready for segment-sum products and the sparse
factorizations in ``_sparse_lu``.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from ._scipy import sparse as sp


class SparsityError(ValueError):
    """A sparsity pattern is malformed or does not fit the function or system it is used with."""


class SparsityPattern:
    """Immutable, hashable set of structural nonzeros of an ``m x n`` matrix.

    Duplicates are merged and entries sorted row-major, so equal sets compare (and hash)
    equal. ``rows`` and ``cols`` are read-only ``int32`` numpy arrays.
    """

    __slots__ = ("rows", "cols", "shape", "_hash")

    def __init__(self, rows, cols, shape):
        m, n = _check_shape(shape)
        rows = _check_index(rows, m, "rows")
        cols = _check_index(cols, n, "cols")
        if rows.shape != cols.shape:
            raise SparsityError(
                f"rows and cols must have the same length, got {rows.size} and {cols.size}; "
                "pass one (row, col) pair per structural nonzero."
            )
        key = np.unique(rows.astype(np.int64) * max(n, 1) + cols)
        r = (key // max(n, 1)).astype(np.int32)
        c = (key % max(n, 1)).astype(np.int32)
        r.flags.writeable = False
        c.flags.writeable = False
        object.__setattr__(self, "rows", r)
        object.__setattr__(self, "cols", c)
        object.__setattr__(self, "shape", (m, n))
        object.__setattr__(self, "_hash", hash((m, n, r.tobytes(), c.tobytes())))

    @classmethod
    def from_dense(cls, mask) -> "SparsityPattern":
        """Pattern of the nonzeros of a dense 2-D array (tests, small systems)."""
        mask = np.asarray(mask)
        if mask.ndim != 2:
            raise SparsityError(f"from_dense needs a 2-D array, got shape {mask.shape}.")
        r, c = np.nonzero(mask)
        return cls(r, c, mask.shape)

    @classmethod
    def from_scipy(cls, matrix) -> "SparsityPattern":
        """Pattern of the stored entries of a scipy sparse matrix (explicit zeros kept)."""
        coo = sp.coo_matrix(matrix)
        return cls(coo.row, coo.col, coo.shape)

    def __setattr__(self, name, value):
        raise AttributeError("SparsityPattern is immutable; build a new one instead.")

    def __eq__(self, other):
        return (
            isinstance(other, SparsityPattern)
            and self._hash == other._hash
            and self.shape == other.shape
            and np.array_equal(self.rows, other.rows)
            and np.array_equal(self.cols, other.cols)
        )

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return f"SparsityPattern(shape={self.shape}, nnz={self.nnz})"

    def __reduce__(self):
        return (SparsityPattern, (self.rows, self.cols, self.shape))

    @property
    def nnz(self) -> int:
        return int(self.rows.size)

    def to_scipy(self, values=None) -> sp.csr_matrix:
        """CSR matrix with this pattern (ones, or the given pattern-aligned values)."""
        data = np.ones(self.nnz) if values is None else np.asarray(values)
        return sp.csr_matrix((data, (self.rows, self.cols)), shape=self.shape)

    def positions(self, rows, cols) -> np.ndarray:
        """Index in the pattern of each ``(rows[k], cols[k])``; raises if one is missing."""
        n = max(self.shape[1], 1)
        key = self.rows.astype(np.int64) * n + self.cols
        want = np.asarray(rows, np.int64) * n + np.asarray(cols, np.int64)
        pos = np.minimum(np.searchsorted(key, want), max(self.nnz - 1, 0))
        missing = key[pos] != want if self.nnz else np.ones(want.shape, bool)
        if np.any(missing):
            k = int(np.argmax(missing))
            raise SparsityError(
                f"entry ({int(np.ravel(rows)[k])}, {int(np.ravel(cols)[k])}) is not in the "
                "sparsity pattern; add it to the pattern (a superset is allowed)."
            )
        return pos


def _check_shape(shape):
    try:
        m, n = (int(s) for s in shape)
    except (TypeError, ValueError):
        raise SparsityError(f"shape must be a pair (m, n) of ints, got {shape!r}.") from None
    if m < 0 or n < 0:
        raise SparsityError(f"shape must be non-negative, got {shape!r}.")
    return m, n


def _check_index(idx, size, name):
    arr = np.asarray(idx)
    if arr.ndim != 1 or not (arr.size == 0 or np.issubdtype(arr.dtype, np.integer)):
        raise SparsityError(
            f"{name} must be a 1-D integer array, got dtype {arr.dtype} shape {arr.shape}."
        )
    arr = arr.astype(np.int64)
    if arr.size and (arr.min() < 0 or arr.max() >= size):
        bad = int(arr[(arr < 0) | (arr >= size)][0])
        raise SparsityError(f"{name} holds index {bad}, outside [0, {size}); check the pattern.")
    return arr


@functools.lru_cache(maxsize=64)
def column_coloring(pattern: SparsityPattern) -> tuple[np.ndarray, int]:
    """Greedy colouring of the columns so that columns of one colour share no row.

    Greedy colouring is run in two visiting orders of the column intersection graph,
    largest degree first and the natural order, and the one with fewer colours is kept
    (each colour costs one JVP per Jacobian). The natural order follows how the model
    numbers its unknowns, which for chains and networks is close to a band: 3 colours for
    a ladder where largest-first needs 5 (the second order is skipped when the first
    reaches the lower bound, the most entries in a row). Returns ``(colors, n_colors)``
    with ``colors`` a read-only int32 array of length ``n``.
    """
    m, n = pattern.shape
    a = pattern.to_scipy().tocsc()
    inter = (a.T @ a).tocsr()
    bound = int(np.bincount(pattern.rows, minlength=1).max()) if pattern.nnz else 0
    colors = None
    for order in (np.argsort(-np.diff(inter.indptr), kind="stable"), np.arange(n)):
        trial = greedy_coloring(inter.indptr, inter.indices, order)
        if colors is None or trial.max(initial=-1) < colors.max(initial=-1):
            colors = trial
        if colors.max(initial=-1) + 1 <= bound:  # a row's columns all differ: optimal
            break
    n_colors = int(colors.max()) + 1 if n else 0
    colors = colors.astype(np.int32)
    colors.flags.writeable = False
    return colors, n_colors


def compressed_jacobian(
    fn: Callable[[jax.Array, Any], jax.Array], x: jax.Array, params: Any,
    pattern: SparsityPattern,
) -> tuple[jax.Array, jax.Array]:
    """Return ``(fn(x, params), J S)`` with S the ``(n, n_colors)`` colour seed matrix.

    ``J S`` has shape ``(n_colors, m)``; `compressed_index` maps it to pattern values.
    Costs one linearization and ``n_colors`` JVPs. Entries outside the pattern are assumed
    zero; if they are not, the result is wrong, so derive the pattern from the model.
    """
    m, n = pattern.shape
    if x.shape != (n,):
        raise SparsityError(
            f"x has shape {x.shape} but the sparsity pattern has {n} columns; build the "
            "pattern for this system's unknown vector."
        )
    colors, n_colors = column_coloring(pattern)
    f, jvp = jax.linearize(lambda y: fn(y, params), x)
    if f.shape != (m,):
        raise SparsityError(
            f"the residual has shape {f.shape} but the sparsity pattern has {m} rows; build "
            "the pattern for this system's residual vector."
        )
    if n_colors == 0:
        return f, jnp.zeros((0, m), f.dtype)
    seeds = (jnp.asarray(colors)[None, :] == jnp.arange(n_colors)[:, None]).astype(x.dtype)
    return f, jax.vmap(jvp)(seeds)


@functools.lru_cache(maxsize=64)
def compressed_index(pattern: SparsityPattern) -> np.ndarray:
    """Index into the flattened ``J S`` of each pattern entry (read-only int32 array)."""
    colors, _ = column_coloring(pattern)
    idx = colors[pattern.cols].astype(np.int64) * pattern.shape[0] + pattern.rows
    idx = idx.astype(np.int32)
    idx.flags.writeable = False
    return idx


def greedy_coloring(indptr, indices, order) -> np.ndarray:
    """First-fit colouring of a graph in CSR form, visiting vertices in ``order`` (on Python
    lists: a few neighbours a vertex, where NumPy's per-call cost would dominate)."""
    n = len(indptr) - 1
    starts, neighbours = np.asarray(indptr).tolist(), np.asarray(indices).tolist()
    colors = [-1] * n
    mark = [-1] * (n + 1)  # mark[c] == j: colour c is used by a neighbour of j
    for j in np.asarray(order).tolist():
        for i in neighbours[starts[j]:starts[j + 1]]:
            c = colors[i]
            if c >= 0:
                mark[c] = j
        c = 0
        while mark[c] == j:
            c += 1
        colors[j] = c
    return np.asarray(colors, np.int64)


def sparse_jacobian(
    fn: Callable[[jax.Array, Any], jax.Array], x: jax.Array, params: Any,
    pattern: SparsityPattern,
) -> tuple[jax.Array, jax.Array]:
    """Return ``(fn(x, params), values)``: the Jacobian's values aligned with ``pattern``."""
    f, compressed = compressed_jacobian(fn, x, params, pattern)
    return f, compressed.reshape(-1)[jnp.asarray(compressed_index(pattern))]


def pattern_matvec(pattern: SparsityPattern, values: jax.Array, v: jax.Array) -> jax.Array:
    """``J v`` for the pattern-aligned ``values`` of J (one gather and one segment sum)."""
    prod = values * v[jnp.asarray(pattern.cols)]
    return jax.ops.segment_sum(
        prod, jnp.asarray(pattern.rows), num_segments=pattern.shape[0], indices_are_sorted=True
    )


def pattern_rmatvec(pattern: SparsityPattern, values: jax.Array, v: jax.Array) -> jax.Array:
    """``J^T v`` for the pattern-aligned ``values`` of J."""
    prod = values * v[jnp.asarray(pattern.rows)]
    return jax.ops.segment_sum(prod, jnp.asarray(pattern.cols), num_segments=pattern.shape[1])


def pattern_to_dense(pattern: SparsityPattern, values: jax.Array) -> jax.Array:
    """Dense ``(m, n)`` matrix from pattern-aligned values."""
    dense = jnp.zeros(pattern.shape, values.dtype)
    return dense.at[jnp.asarray(pattern.rows), jnp.asarray(pattern.cols)].set(values)
