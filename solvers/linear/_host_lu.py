"""Host side of `SparseHostLU`: SuperLU factorizations and solves, one system at a time.

Runs inside ``jax.pure_callback`` on NumPy arrays. Two things are computed once per pattern
and cached: the CSC layout of the pattern (`_csc.csc_layout`) and, for the symmetric
minimum-degree ordering, SuperLU's column permutation. SuperLU recomputes its ordering at
every factorization (about a sixth of a factorization of a 2-D grid of 25 000 unknowns);
since the ordering depends on the pattern only, later calls apply the first call's ordering
as a symmetric permutation and factor with ``permc_spec="NATURAL"``, which keeps SuperLU's
preference for diagonal pivots (same fill, same pivots as a fresh ordering).
"""

from __future__ import annotations

import functools
import os
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ._scipy import sparse as sp, sparse_linalg as spla
from . import _klu
from ._csc import csc_layout
from ._sparse_order import nested_dissection, symmetrised_adjacency
from ._sparsity import SparsityPattern

#: Orderings whose permutation is reused as a symmetric permutation of later matrices.
#: (COLAMD is a column ordering for unsymmetric pivoting: SuperLU's NATURAL mode would
#: treat it as symmetric and postorder it differently, so it is recomputed every call.)
#: ``"ND"`` is ours, not SuperLU's: nested dissection of A^T + A (``_sparse_order``).
REUSABLE_ORDERINGS = ("MMD_AT_PLUS_A", "ND")
ORDERINGS = ("COLAMD", "MMD_AT_PLUS_A", "MMD_ATA", "NATURAL", "ND")
#: Nested dissection stops at parts of this many unknowns (ordered by minimum degree):
#: on the 2-D diode grid 32 factors as fast as 8 and orders 3x faster (0.6 s at 25 000).
ND_LEAF = 32
#: SuperLU's complete LU (``splu``) corrupts memory on exactly singular matrices in SciPy
#: 1.15+ (SuperLU 7): a zero pivot column leaves its pivot row unassigned and the later
#: supernode updates run with broken dimensions (``DGEMV parameter 2 had an illegal value``,
#: invalid reads in ``dcolumn_bmod`` under valgrind, then a crash, sometimes much later in an
#: unrelated XLA compile). SuperLU's incomplete LU assigns a pivot row to a zero column and
#: stops cleanly, and with no dropping it is the same factorization (same pivots, same fill,
#: 1.2-1.6x the time on power-flow Jacobians). Relaxed-supernode and panel sizes other than
#: SciPy's defaults corrupt memory even on nonsingular matrices. tests/test_sparse_lu.py checks.
_EXACT_ILU = {"drop_tol": 0.0, "drop_rule": "basic", "fill_factor": 20.0}
_PERM_CACHE: "OrderedDict[tuple, np.ndarray]" = OrderedDict()
_PERM_CACHE_SIZE = 32


@functools.lru_cache(maxsize=32)
def ordering_cost(pattern: SparsityPattern, permc_spec: str) -> tuple[int, int]:
    """``(nnz(L) + nnz(U), multiply-adds)`` of a factorization of the pattern with a symmetric
    ordering (``"MMD_AT_PLUS_A"`` or ``"ND"``), measured by factoring a diagonally dominant
    matrix of that pattern (the diagonal pivots, so the count is the ordering's own fill).
    The ordering is cached as a real factorization's (`factor`), which then reuses it."""
    if permc_spec not in REUSABLE_ORDERINGS:
        raise ValueError(f"ordering_cost takes a symmetric ordering "
                         f"({', '.join(REUSABLE_ORDERINGS)}), got {permc_spec!r}.")
    layout = csc_layout(pattern)
    degree = np.bincount(pattern.rows, minlength=pattern.shape[0]) + 1.0
    values = np.where(pattern.rows == pattern.cols, degree[pattern.rows], -1.0)
    lu = factor(layout.matrix(layout.data(values)), pattern, permc_spec, 0.1).lu
    below = np.diff(lu.L.tocsc().indptr) - 1  # L's unit diagonal is stored
    right = np.diff(lu.U.tocsr().indptr) - 1
    return int(lu.L.nnz + lu.U.nnz), int(np.sum(below * right + below))


def symmetric_with_diagonal(rows, cols, n: int) -> bool:
    """Whether a pattern is (nearly) structurally symmetric (90% of its entries mirrored)
    with (nearly) all its diagonal (at most 5% missing): the patterns that minimum degree on
    A^T + A with diagonal pivoting suits."""
    if n == 0:
        return True
    rows, cols = np.asarray(rows, np.int64), np.asarray(cols, np.int64)
    keys = np.unique(rows * n + cols)
    mirrored = np.isin((keys % n) * n + keys // n, keys).sum()
    missing = n - np.unique(rows[rows == cols]).size
    return bool(mirrored >= 0.9 * keys.size and missing <= 0.05 * n)


class Factor:
    """A SuperLU factorization of ``A``, possibly of a symmetric permutation of it."""

    def __init__(self, lu, perm):
        self.lu, self.perm = lu, perm

    def solve(self, b: np.ndarray, transpose: bool = False) -> np.ndarray:
        trans = "T" if transpose else "N"
        if self.perm is None:
            return self.lu.solve(b, trans=trans)
        x = np.empty_like(b)
        x[self.perm] = self.lu.solve(b[self.perm], trans=trans)
        return x

    @property
    def fill(self) -> int:
        """Nonzeros of L plus U."""
        return int(self.lu.L.nnz + self.lu.U.nnz)


def factor(csc: sp.csc_matrix, key, permc_spec: str, thresh: float) -> Factor:
    """SuperLU's LU of ``csc``; with a reusable ordering, the first call for ``key`` (a hashable of
    the pattern) caches SuperLU's column permutation and later calls apply it. Raises
    ``RuntimeError`` for an exactly singular matrix, as SciPy's SuperLU does."""
    cache_key = (key, permc_spec)
    cached = _PERM_CACHE.get(cache_key) if permc_spec in REUSABLE_ORDERINGS else None
    if cached is None and permc_spec == "ND":
        cached = _remember(cache_key, _permutation(csc, _nested_dissection(csc)))
    with np.errstate(all="ignore"):
        if cached is None:
            lu = superlu(csc, permc_spec, thresh)
            if permc_spec in REUSABLE_ORDERINGS:
                _remember(cache_key, _permutation(csc, np.argsort(lu.perm_c)))
            return Factor(lu, None)
        perm, data_order, indices, indptr = cached
        permuted = sp.csc_matrix((csc.data[data_order], indices, indptr), shape=csc.shape)
        return Factor(superlu(permuted, "NATURAL", thresh), perm)


def superlu(matrix, permc_spec: str = "COLAMD", diag_pivot_thresh: float = 1.0):
    """SuperLU's LU factorization of a square SciPy sparse matrix, safe on singular input.

    Returns SciPy's ``SuperLU`` object (``.solve(b)``, ``.L``, ``.U``, ``.perm_c``). It runs
    as SuperLU's incomplete LU with nothing dropped (see `_EXACT_ILU`): ``splu`` and
    ``spsolve`` corrupt memory on exactly singular matrices. Raises ``RuntimeError`` for an
    exactly singular matrix, ``ValueError`` for anything that is not a square sparse matrix
    or an unknown option."""
    if not sp.issparse(matrix) or matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"superlu takes a square SciPy sparse matrix, got "
                         f"{type(matrix).__name__} of shape {getattr(matrix, 'shape', None)}; "
                         "build one with scipy.sparse.csc_matrix((values, (rows, cols)), shape).")
    superlu_orderings = tuple(o for o in ORDERINGS if o != "ND")
    if permc_spec not in superlu_orderings:
        raise ValueError(f"unknown permc_spec {permc_spec!r}; choose one of "
                         f"{', '.join(superlu_orderings)}.")
    if not 0.0 <= diag_pivot_thresh <= 1.0:
        raise ValueError(f"diag_pivot_thresh must lie in [0, 1], got {diag_pivot_thresh}.")
    with np.errstate(all="ignore"):
        return spla.spilu(sp.csc_matrix(matrix), permc_spec=permc_spec,
                          diag_pivot_thresh=diag_pivot_thresh, **_EXACT_ILU)


def _remember(key, value: tuple) -> tuple:
    _PERM_CACHE[key] = value
    _PERM_CACHE.move_to_end(key)
    while len(_PERM_CACHE) > _PERM_CACHE_SIZE:
        _PERM_CACHE.popitem(last=False)
    return value


def _nested_dissection(csc: sp.csc_matrix) -> np.ndarray:
    """Nested-dissection order of ``A^T + A`` (new position -> unknown)."""
    n = csc.shape[0]
    cols = np.repeat(np.arange(n), np.diff(csc.indptr))
    pattern = SparsityPattern(csc.indices, cols, csc.shape)
    return nested_dissection(symmetrised_adjacency(pattern, np.arange(n)), ND_LEAF)


def _permutation(csc: sp.csc_matrix, perm: np.ndarray) -> tuple:
    """``(perm, data_order, indices, indptr)``: ``P A P^T`` (``[i, j] = A[perm[i], perm[j]]``)
    of any matrix with ``csc``'s (canonical) structure has CSC data ``A.data[data_order]``."""
    positions = sp.csc_matrix((np.arange(1, csc.nnz + 1, dtype=np.float64), csc.indices,
                               csc.indptr), shape=csc.shape)
    permuted = positions[perm][:, perm].tocsc()
    permuted.sort_indices()
    data_order = permuted.data.astype(np.int64) - 1
    return perm, data_order, permuted.indices.astype(np.int32), permuted.indptr.astype(np.int32)


def batch_solve(solve_one, values: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Apply ``solve_one(values_i, b_i)`` over the broadcast batch axes; a non-finite
    solution becomes all NaN (the library's signal for a singular Jacobian)."""
    values2, b2, batch = _flat_batch(values, b)
    out = np.empty(b2.shape, np.result_type(values2.dtype, b2.dtype))
    for i in range(b2.shape[0]):
        out[i] = _finite_or_nan(solve_one(values2[i % values2.shape[0]], b2[i]))
    return out.reshape(batch + b2.shape[-1:]).astype(np.asarray(b).dtype)


def _flat_batch(values, b) -> tuple[np.ndarray, np.ndarray, tuple]:
    """``(values (1 or B, nnz), b (B, n), batch shape)``: the batch axes flattened; values
    shared by every member (broadcast) stay one row."""
    values, b = np.asarray(values), np.asarray(b)
    batch = np.broadcast_shapes(values.shape[:-1], b.shape[:-1])
    shared = int(np.prod(values.shape[:-1], dtype=np.int64)) == 1
    values2 = values.reshape(1, -1) if shared else \
        np.broadcast_to(values, batch + values.shape[-1:]).reshape(-1, values.shape[-1])
    return values2, np.broadcast_to(b, batch + b.shape[-1:]).reshape(-1, b.shape[-1]), batch


def _finite_or_nan(x: np.ndarray) -> np.ndarray:
    return x if np.all(np.isfinite(x)) else np.full_like(x, np.nan)


def plain_solve(pattern: SparsityPattern, permc_spec: str, thresh: float, transpose: bool,
                values: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Factor the whole matrix and solve (NaN if SuperLU finds it exactly singular)."""
    layout = csc_layout(pattern)
    csc = layout.matrix(layout.data(values))
    try:
        return factor(csc, pattern, permc_spec, thresh).solve(b, transpose)
    except RuntimeError:  # "Factor is exactly singular"
        return np.full(b.shape[-1], np.nan)


def klu_factor(pattern: SparsityPattern, values: np.ndarray) -> "_klu.KLUFactor":
    """KLU's LU of the matrix with ``pattern`` and pattern-order ``values`` (the analysis is
    cached per pattern). Raises ``RuntimeError`` for an exactly singular matrix."""
    return _klu.KLUFactor(klu_analysis(pattern), csc_layout(pattern).data(values))


def klu_analysis(pattern: SparsityPattern) -> "_klu._Symbolic":
    """KLU's analysis of the pattern's CSC structure (cached per pattern)."""
    layout = csc_layout(pattern)
    return _klu.symbolic(pattern, layout.indptr, layout.indices, pattern.shape[0])


def klu_batch_solve(pattern: SparsityPattern, transpose: bool, values: np.ndarray,
                    b: np.ndarray) -> np.ndarray:
    """`batch_solve` with KLU (NaN for an exactly singular member): members in blocks of
    ``KLU_BLOCK``, the first of a block factored with pivoting and the others refactored
    with its pivot order (one that `refined_solve` rejects is factored afresh), blocks
    spread over the cores (KLU runs without the GIL). Which members share pivots depends on
    the batch only, so results do not depend on the machine or on earlier calls. Shared
    values (one matrix, many right-hand sides) are factored once."""
    values2, b2, batch = _flat_batch(values, b)
    solve = functools.partial(_klu_block, csc_layout(pattern), klu_analysis(pattern), transpose)
    out = np.empty(b2.shape, np.result_type(values2.dtype, b2.dtype))
    if values2.shape[0] == 1:
        solve(values2, b2, out, refactor=False)
    else:
        blocks = [slice(s, s + KLU_BLOCK) for s in range(0, b2.shape[0], KLU_BLOCK)]
        run = lambda k: solve(values2[k], b2[k], out[k], refactor=True)
        workers = min(len(blocks), _cores())
        if workers > 1:
            list(_thread_pool(workers).map(run, blocks))
        else:
            for block in blocks:
                run(block)
    return out.reshape(batch + b2.shape[-1:]).astype(np.asarray(b).dtype)


#: Members of a batch that share one pivot order (see `klu_batch_solve`): on
#: case_ACTIVSg2000 a refactorization takes 1.3 ms against 3.3 ms for a factorization.
KLU_BLOCK = 8
#: Iterative refinement stops below this backward error (a few ulps) ...
REFINE_TARGET = 4 * np.finfo(np.float64).eps
#: ... and a solve whose backward error stays above this is rejected (the caller factors
#: afresh: a pivoting LU meets it on any matrix it can factor).
ACCEPT_BACKWARD_ERROR = 1e3 * np.finfo(np.float64).eps
REFINE_STEPS = 2


def refined_solve(solve, matvec, norm: float, b: np.ndarray) -> "np.ndarray | None":
    """``solve(b)`` with up to `REFINE_STEPS` steps of iterative refinement on the matrix
    ``A`` (``matvec``: ``v -> A v``; ``norm``: its infinity norm); None if its normwise
    backward error stays above `ACCEPT_BACKWARD_ERROR` (a factorization that does not suit
    ``A``)."""
    x = solve(b)
    b_max = np.max(np.abs(b), initial=0.0)
    for step in range(REFINE_STEPS + 1):
        r = b - matvec(x)
        scale = norm * np.max(np.abs(x), initial=0.0) + b_max
        berr = np.max(np.abs(r), initial=0.0) / scale if scale > 0 else 0.0
        if not np.isfinite(berr) or berr <= REFINE_TARGET or step == REFINE_STEPS:
            break
        x = x + solve(r)
    return x if np.isfinite(berr) and berr <= ACCEPT_BACKWARD_ERROR else None


def _klu_block(layout, analysis, transpose, values, b, out, refactor: bool) -> None:
    """Solve one block of members (pattern-order ``values`` rows, right-hand sides ``b``)
    into ``out``; without ``refactor``, one matrix for every right-hand side."""
    current = None
    for i in range(b.shape[0]):
        if current is not None and not refactor:
            out[i] = _finite_or_nan(current.solve(b[i], transpose))
            continue
        data = np.asarray(layout.data(values[i % values.shape[0]]), np.float64)
        current, x = _klu_member(layout, analysis, transpose, current, data, b[i])
        out[i] = _finite_or_nan(x)


def _klu_member(layout, analysis, transpose, current, data, b) -> tuple:
    """``(factor, x)`` for the matrix of CSC ``data``: ``current`` if it is the pivoting LU
    of that very matrix, else its pivot order refactored if it suits it (checked by
    `refined_solve`), else a fresh factorization (None and NaN where exactly singular)."""
    x = None
    if current is not None and current.pivoted and current.holds(data):
        x = current.solve(b, transpose)  # as a fresh factorization would give
    elif current is not None and current.refactor(data):
        matvec, norm = layout.operator(data, transpose)
        x = refined_solve(lambda r, f=current: f.solve(r, transpose), matvec, norm, b)
    if x is None:
        try:
            current = _klu.KLUFactor(analysis, data)
            x = current.solve(b, transpose)
        except RuntimeError:  # exactly singular
            current, x = None, np.full(b.shape[-1], np.nan)
    return current, x


class KLUSequence:
    """KLU solves of a sequence of matrices of one pattern (the Newton steps of one solve):
    the first factored with pivoting, each later one refactored with the last pivot order
    where its backward error accepts it (`refined_solve`), else factored afresh; an exactly
    singular matrix gives NaN. The pivots come from this sequence alone, so the results do
    not depend on earlier sequences. ``solve(values, b)``: pattern-order ``values``."""

    def __init__(self, pattern: SparsityPattern, transpose: bool = False):
        self.layout, self.analysis = csc_layout(pattern), klu_analysis(pattern)
        self.pattern, self.transpose, self.current = pattern, transpose, None

    def solve(self, values: np.ndarray, b: np.ndarray) -> np.ndarray:
        values, nnz, n = np.asarray(values, np.float64), self.pattern.nnz, self.pattern.shape[0]
        if values.shape != (nnz,) or np.shape(b) != (n,):
            raise ValueError(
                f"KLUSequence.solve takes one matrix: values of shape ({nnz},) in the "
                f"pattern's order and b of shape ({n},); got {values.shape} and {np.shape(b)}")
        b = np.asarray(b)
        self.current, x = _klu_member(self.layout, self.analysis, self.transpose, self.current,
                                      self.layout.data(values), np.asarray(b, np.float64))
        return _finite_or_nan(x).astype(b.dtype, copy=False)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@functools.lru_cache(maxsize=4)
def _thread_pool(workers: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="simgraph-klu")
