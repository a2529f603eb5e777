"""Eliminating a diagonal block before the host LU: a Schur complement (EPANET's GGA).

A pipe network's Jacobian is a saddle point: with the flows first,
``J = [[D, B], [C, E]]`` where ``D`` is diagonal (each pipe's head-loss row touches its own
flow and two heads) and the junctions' mass-balance rows have no diagonal at all. A general
sparse LU must pivot off the diagonal there, which undoes a symmetric fill-reducing ordering
(COLAMD's fill grows like 14 to 22 times nnz from 10^4 to 10^5 unknowns). Eliminating ``D``
first leaves, on the remaining unknowns, ``S = E - C D^-1 B``: for a network a weighted graph
Laplacian, structurally symmetric with its diagonal, which SuperLU factors with minimum
degree on A^T + A and diagonal pivots, at a small fraction of the cost. Then

    S y = r_R - C D^-1 r_D,        x_D = D^-1 (r_D - B y).

The step is the exact Newton step, not EPANET's regularised one: every solve is checked by
its backward error on the whole ``J`` (refined up to twice); a zero or non-finite pivot in
``D``, a singular ``S``, or a backward error still above ``1000 eps`` falls back to
factoring the whole ``J`` for that call (NaN if that is exactly singular too).

`schur_plan` chooses the block from the pattern only: unknowns with a structural diagonal
that are coupled to an unknown without one, as many as keep ``J[D, D]`` diagonal.
"""

from __future__ import annotations

import functools
from typing import NamedTuple, Optional

import numpy as np

from ._scipy import sparse as sp
from ._csc import csc_layout
from ._host_lu import factor, plain_solve, refined_solve, symmetric_with_diagonal
from ._sparsity import SparsityPattern

class _Block(NamedTuple):
    """A CSR sub-block: data are ``values[index]``."""
    index: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    shape: tuple

    def matrix(self, values) -> sp.csr_matrix:
        return sp.csr_matrix((values[self.index], self.indices, self.indptr), shape=self.shape)


class SchurPlan(NamedTuple):
    """Which unknowns are eliminated (``drop``, diagonal block D) and which kept, the blocks
    ``B = J[D, R]``, ``C = J[R, D]`` and how ``S = E - C D^-1 B`` is assembled: ``S.data =
    bincount(e_pos, values[e_index]) - bincount(t_pos, values[t_c] values[t_b] / d[t_k])``."""
    drop: np.ndarray
    keep: np.ndarray
    d_index: np.ndarray
    b: _Block
    c: _Block
    e_pos: np.ndarray
    e_index: np.ndarray
    t_pos: np.ndarray
    t_c: np.ndarray
    t_b: np.ndarray
    t_k: np.ndarray
    s_indices: np.ndarray
    s_indptr: np.ndarray
    symmetric: bool  # S's pattern suits minimum degree on A^T + A with diagonal pivots

    @property
    def s_pattern(self) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, cols)`` of ``S``'s structural nonzeros."""
        cols = np.repeat(np.arange(self.keep.size), np.diff(self.s_indptr))
        return self.s_indices.astype(np.int64), cols


def eliminated(pattern: SparsityPattern) -> np.ndarray:
    """The unknowns a Schur plan eliminates: those with a structural diagonal that share a
    row or column entry with an unknown without one, greedily so that no two of them are
    coupled (``J[D, D]`` is then diagonal). Empty when every diagonal is present."""
    n = pattern.shape[0]
    rows, cols = pattern.rows, pattern.cols
    has_diag = np.zeros(n, bool)
    has_diag[rows[rows == cols]] = True
    off = rows != cols
    r, c = rows[off], cols[off]
    touches = np.zeros(n, bool)
    touches[r[~has_diag[c]]] = True
    touches[c[~has_diag[r]]] = True
    chosen = has_diag & touches
    clash = chosen[r] & chosen[c]
    if clash.any():  # rare: keep the first of each coupled pair, in index order
        adj = sp.csr_matrix((np.ones(clash.sum()), (r[clash], c[clash])), shape=(n, n))
        adj = (adj + adj.T).tocsr()
        for i in np.flatnonzero(chosen):
            if chosen[i]:
                nbrs = adj.indices[adj.indptr[i]:adj.indptr[i + 1]]
                chosen[nbrs[nbrs > i]] = False
    return np.flatnonzero(chosen)


@functools.lru_cache(maxsize=16)
def schur_plan(pattern: SparsityPattern) -> Optional[SchurPlan]:
    """The elimination of `eliminated`'s block from a square pattern, or None if empty."""
    n = pattern.shape[0]
    drop = eliminated(pattern)
    if drop.size == 0 or drop.size == n:
        return None
    is_drop = np.zeros(n, bool)
    is_drop[drop] = True
    keep = np.flatnonzero(~is_drop)
    local = np.empty(n, np.int64)
    local[drop], local[keep] = np.arange(drop.size), np.arange(keep.size)
    rows, cols, idx = pattern.rows, pattern.cols, np.arange(pattern.nnz)
    in_d, in_r = is_drop[rows], is_drop[cols]
    d_entries = np.flatnonzero(in_d & (rows == cols))
    d_index = np.empty(drop.size, np.int64)
    d_index[local[rows[d_entries]]] = d_entries
    nd, nr = drop.size, keep.size
    b_sel, c_sel, e_sel = in_d & ~in_r, ~in_d & in_r, ~in_d & ~in_r
    b = _block(local[rows[b_sel]], local[cols[b_sel]], idx[b_sel], (nd, nr))
    c = _block(local[rows[c_sel]], local[cols[c_sel]], idx[c_sel], (nr, nd))
    return _assembly(drop, keep, d_index, b, c, local[rows[e_sel]], local[cols[e_sel]],
                     idx[e_sel])


def _block(r, c, index, shape) -> _Block:
    order = np.lexsort((c, r))
    indptr = np.concatenate([[0], np.cumsum(np.bincount(r, minlength=shape[0]))])
    return _Block(index[order], c[order].astype(np.int32), indptr.astype(np.int32), shape)


def _assembly(drop, keep, d_index, b: _Block, c: _Block, e_r, e_c, e_index) -> SchurPlan:
    """Symbolic ``S = E - C D^-1 B``: one product term per (C entry, B entry) pair sharing
    an eliminated unknown, all mapped to positions in ``S``'s CSC data."""
    nr = keep.size
    c_rows = np.repeat(np.arange(nr), np.diff(c.indptr))
    c_k = c.indices.astype(np.int64)
    nb = np.diff(b.indptr)
    rep = nb[c_k]
    pick_c = np.repeat(np.arange(c_k.size), rep)
    within = np.arange(rep.sum()) - np.repeat(np.cumsum(rep) - rep, rep)
    pick_b = b.indptr[c_k[pick_c]] + within
    t_rows, t_cols = c_rows[pick_c], b.indices[pick_b].astype(np.int64)
    keys_e, keys_t = e_c * nr + e_r, t_cols * nr + t_rows
    keys = np.unique(np.concatenate([keys_e, keys_t]))
    s_rows, s_cols = keys % nr, keys // nr
    indptr = np.concatenate([[0], np.cumsum(np.bincount(s_cols, minlength=nr))])
    return SchurPlan(
        drop=drop, keep=keep, d_index=d_index, b=b, c=c,
        e_pos=np.searchsorted(keys, keys_e), e_index=e_index,
        t_pos=np.searchsorted(keys, keys_t), t_c=c.index[pick_c], t_b=b.index[pick_b],
        t_k=c_k[pick_c], s_indices=s_rows.astype(np.int32), s_indptr=indptr.astype(np.int32),
        symmetric=symmetric_with_diagonal(s_rows, s_cols, nr))


def reduced_matrix(plan: SchurPlan, values: np.ndarray, d: np.ndarray) -> sp.csc_matrix:
    """``S = E - C D^-1 B`` for pattern-aligned ``values`` (``d`` = D's diagonal)."""
    size = plan.s_indices.size
    data = np.zeros(size)
    data += np.bincount(plan.e_pos, values[plan.e_index], minlength=size)
    data -= np.bincount(plan.t_pos, values[plan.t_c] * values[plan.t_b] / d[plan.t_k],
                        minlength=size)
    n = plan.keep.size
    return sp.csc_matrix((data, plan.s_indices, plan.s_indptr), shape=(n, n))


def schur_solve(pattern: SparsityPattern, permc_spec: str, thresh: float, transpose: bool,
                values: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``J^-1 b`` (``J^-T b``) through the Schur complement, with the fall-back above."""
    plan = schur_plan(pattern)
    fallback = lambda: plain_solve(pattern, permc_spec, thresh, transpose, values, b)
    if plan is None:
        return fallback()
    d = values[plan.d_index]
    if not np.all(np.isfinite(d) & (d != 0.0)):
        return fallback()
    with np.errstate(all="ignore"):
        s = reduced_matrix(plan, values, d)
        if not np.all(np.isfinite(s.data)):
            return fallback()
        try:
            lu = factor(s, ("schur", pattern), permc_spec, thresh)
        except RuntimeError:  # S singular: let the whole J decide (NaN if singular)
            return fallback()
        x = _refined(plan, pattern, values, d, lu, transpose, b)
    return fallback() if x is None else x


def _refined(plan, pattern, values, d, lu, transpose, b) -> Optional[np.ndarray]:
    """The block solve refined on ``J`` (`refined_solve`); None if it stays inaccurate."""
    layout = csc_layout(pattern)
    matvec, norm = layout.operator(layout.data(values), transpose)
    bm, cm = plan.b.matrix(values), plan.c.matrix(values)
    if transpose:  # J^T = [[D, C^T], [B^T, E^T]]: the same elimination, S^T
        bm, cm = cm.T, bm.T

    def block_solve(r):
        r_d, r_r = r[plan.drop], r[plan.keep]
        y = lu.solve(r_r - cm @ (r_d / d), transpose)
        x = np.empty_like(r)
        x[plan.keep], x[plan.drop] = y, (r_d - bm @ y) / d
        return x

    return refined_solve(block_solve, matvec, norm, b)
