"""The static elimination schedule of the level-scheduled sparse LU (built on the host).

The factors of ``M = A[R][:, C]`` live in one flat value array: slot 0 is a constant zero,
then for each pivot k (in level order) its diagonal, its L column and its U row. Entries
whose pivot is at level t are contiguous, and each is a fixed sum of products of entries of
lower levels, so level t is computed by one gather, one multiply, one segment sum and one
contiguous block write, for every pivot of the level at once. Triangular solves use the
same levels. Runs of many levels of similar size are padded and stacked into one
``lax.scan`` stage, so the traced program grows with the number of stages, not with n.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from ._sparse_order import (
    color_order, elimination_tree, grouped_order, level_order, match_rows, nested_dissection,
    pair_zero_diagonals, symmetrised_adjacency, upper_structure,
)
from ._sparsity import SparsityPattern

SINGLE_UNROLLED = True
MAX_STAGES = 4  # per phase (factor, forward and backward sweeps): bounds compile time


@dataclasses.dataclass(frozen=True, eq=False)
class Stage:
    """Index arrays for one level (``scanned=False``) or stacked padded levels (True)."""

    arrays: dict
    scanned: bool


@dataclasses.dataclass(frozen=True, eq=False)
class LUPlan:
    """Everything the numeric factorization and solves need; hashable by identity."""

    pattern: SparsityPattern
    row_perm: np.ndarray  # position i of M holds equation row_perm[i]
    col_perm: np.ndarray  # position i of M holds unknown col_perm[i]
    a_slot_rows: np.ndarray  # row of M of each pattern entry (for pivot scaling)
    slot_src: np.ndarray  # pattern entry whose value initializes each slot (nnz: zero)
    diag_slots: np.ndarray  # slot of U(k, k)
    n_values: int  # length of the factor value array (slots + zero + padding)
    vec_pad: int  # padding on each side of solve vectors
    factor_stages: tuple
    down_stages: tuple  # forward sweeps (L, and U^T)
    up_stages: tuple  # backward sweeps (U, and L^T)
    n_levels: int
    n_products: int  # multiply-adds of one numeric factorization
    structurally_singular: bool


def build_plan(pattern: SparsityPattern, leaf_size: int = 8, incomplete: bool = False,
               pivoting: str = "pairs") -> LUPlan:
    """Match, order, factor symbolically and schedule (host work, about one factorization).

    ``incomplete=True`` plans an ILU(0) of the symmetrised pattern instead (no fill, in a
    multicolour order, so the levels are about the number of colours): a preconditioner.
    """
    row_match, singular, order, level, structs = analyse(pattern, leaf_size, incomplete,
                                                         pivoting)
    lay = _Layout(structs)
    row_perm, col_perm = row_match[order], order
    pos_r, pos_c = _inverse(row_perm)[pattern.rows], _inverse(col_perm)[pattern.cols]
    slot_src = np.full(lay.n_slots, pattern.nnz, np.int64)  # pattern entry held by each slot
    slot_src[lay.slot(pos_r, pos_c)] = np.arange(pattern.nnz)
    pivot_start = np.searchsorted(level, np.arange(level.max() + 2 if level.size else 1))
    factor_stages, fpad, n_products = _factor_schedule(lay, pivot_start, incomplete)
    down_stages, up_stages, vec_pad = _sweep_schedule(lay, pivot_start)
    return LUPlan(
        pattern=pattern, row_perm=row_perm, col_perm=col_perm, a_slot_rows=pos_r,
        slot_src=np.concatenate([slot_src, np.full(fpad, pattern.nnz, np.int64)]),
        diag_slots=lay.base[:-1], n_values=lay.n_slots + fpad, vec_pad=vec_pad,
        factor_stages=factor_stages, down_stages=down_stages, up_stages=up_stages,
        n_levels=pivot_start.size - 1, n_products=n_products,
        structurally_singular=singular,
    )


@functools.lru_cache(maxsize=8)
def analyse(pattern: SparsityPattern, leaf_size: int = 8, incomplete: bool = False,
            pivoting: str = "pairs"):
    """Symbolic analysis (cached): ``(row_match, singular, order, level, structs)`` with
    pivots in level order; ``sum(len(s)**2 for s in structs)`` is the product count.

    Zero diagonals are handled by ``pivoting="pairs"`` (eliminate a partner first, see
    `pair_zero_diagonals`; falls back to a matching when some zero diagonal has no
    partner) or ``"matching"`` (a row permutation moving nonzeros onto the diagonal).
    """
    if pivoting not in ("pairs", "matching"):
        raise ValueError(f"pivoting must be 'pairs' or 'matching', got {pivoting!r}.")
    partner = pair_zero_diagonals(pattern) if pivoting == "pairs" else None
    if partner is not None:
        row_match, singular = np.arange(pattern.shape[0]), False
    else:
        row_match, singular = match_rows(pattern)
    adj = symmetrised_adjacency(pattern, row_match)
    if incomplete:
        order = grouped_order(adj, partner, color_order)
        level, structs = upper_structure(adj, order)
    else:
        order = grouped_order(adj, partner, lambda g: nested_dissection(g, leaf_size))
        _, level, structs = elimination_tree(adj, order)
    lperm, level, structs = level_order(level, structs)
    return row_match, singular, order[lperm], level, structs


def _inverse(perm):
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.size)
    return inv


class _Layout:
    """Slots of the factors: slot 0 is zero, then per pivot k: U(k,k), L(:,k), U(k,:).

    ``kk, ss`` list the off-diagonal structure (pivot, row/col) sorted by pivot.
    """

    def __init__(self, structs):
        n = len(structs)
        self.n = n
        self.d = np.array([s.size for s in structs], np.int64)
        self.base = 1 + np.concatenate([[0], np.cumsum(1 + 2 * self.d)])
        self.n_slots = int(self.base[-1])
        self.kk = np.repeat(np.arange(n), self.d)
        self.ss = np.concatenate(structs).astype(np.int64) if n else np.zeros(0, np.int64)
        rank = np.arange(self.kk.size) - np.repeat(np.cumsum(self.d) - self.d, self.d)
        self.lslot = self.base[self.kk] + 1 + rank
        self.uslot = self.lslot + self.d[self.kk]
        self.key = self.kk * n + self.ss

    def slot(self, i, j, missing_ok=False):
        """Slot of entries (i, j); -1 where not stored (an error unless ``missing_ok``)."""
        i, j = np.asarray(i, np.int64), np.asarray(j, np.int64)
        want = np.minimum(i, j) * self.n + np.maximum(i, j)
        pos = np.minimum(np.searchsorted(self.key, want), max(self.key.size - 1, 0))
        found = (self.key[pos] == want) if self.key.size else np.zeros(want.shape, bool)
        off = np.where(i > j, self.lslot[pos], self.uslot[pos]) if self.key.size else -1
        out = np.where(i == j, self.base[np.minimum(i, self.n)], np.where(found, off, -1))
        assert missing_ok or np.all(out >= 0), "entry outside the factor's structure"
        return out


def _factor_products(lay, drop_fill):
    """All products ``L(i,p) U(p,j)`` (as slots) with the slot of their target (i, j),
    sorted by target; ``drop_fill`` skips targets outside the structure (ILU(0))."""
    starts = np.cumsum(lay.d) - lay.d
    tg, ls, us = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for deg in np.unique(lay.d[lay.d > 0]):
        piv = np.flatnonzero(lay.d == deg)
        idx = starts[piv][:, None] + np.arange(deg)[None, :]  # (g, deg) entry indices
        shape = (piv.size, deg, deg)
        i = np.broadcast_to(lay.ss[idx][:, :, None], shape).ravel()
        j = np.broadcast_to(lay.ss[idx][:, None, :], shape).ravel()
        target = lay.slot(i, j, missing_ok=drop_fill)
        keep = target >= 0
        tg.append(target[keep])
        ls.append(np.broadcast_to(lay.lslot[idx][:, :, None], shape).ravel()[keep])
        us.append(np.broadcast_to(lay.uslot[idx][:, None, :], shape).ravel()[keep])
    tgt, pl, pu = (np.concatenate(x) for x in (tg, ls, us))
    order = np.argsort(tgt, kind="stable")
    return tgt[order], pl[order], pu[order]


def _factor_schedule(lay, pivot_start, drop_fill):
    """Stages of the numeric factorization, their padding and the product count."""
    tgt, pl, pu = _factor_products(lay, drop_fill)
    diag_of = np.arange(lay.n_slots)  # for L slots: the slot of their pivot's diagonal
    is_l = np.zeros(lay.n_slots, bool)
    diag_of[lay.lslot] = lay.base[lay.kk]
    is_l[lay.lslot] = True
    slot_start = lay.base[pivot_start]
    levels = []
    for t in range(pivot_start.size - 1):
        o0, o1 = int(slot_start[t]), int(slot_start[t + 1])
        q0, q1 = np.searchsorted(tgt, [o0, o1])
        dl = np.where(is_l[o0:o1], diag_of[o0:o1] - o0, np.arange(o1 - o0))
        levels.append((o0, dict(dl=dl, isl=is_l[o0:o1]),
                       dict(pl=pl[q0:q1], pu=pu[q0:q1], seg=tgt[q0:q1] - o0)))
    pad_values = dict(dl=0, isl=False, pl=0, pu=0, seg=0)
    stages, pad = _stages(levels, pad_values, backward=False)
    return stages, pad, int(tgt.size)


def _sweep_schedule(lay, pivot_start):
    """Stages of the forward and backward sweeps, and the vector padding they need."""
    down, up = _sweep_levels(lay, pivot_start)
    pad_values = dict(diag=int(lay.base[0]), part=0, cl=0, cu=0, seg=0)
    down_stages, dpad = _stages(down, pad_values, backward=False)
    up_stages, upad = _stages(up, pad_values, backward=True)
    vec_pad = max(dpad, upad)
    return (_shift_partners(down_stages, 1 + vec_pad), _shift_partners(up_stages, 1 + vec_pad),
            vec_pad)


def _sweep_levels(lay, pivot_start):
    """Per level: forward pairs (row ss gets L(ss,kk) y[kk]) and backward (row kk)."""
    kk, ss, lslot, uslot = lay.kk, lay.ss, lay.lslot, lay.uslot
    by_row = np.argsort(ss, kind="stable")
    down_rows = ss[by_row]
    down, up = [], []
    for t in range(pivot_start.size - 1):
        p0, p1 = int(pivot_start[t]), int(pivot_start[t + 1])
        rows = dict(diag=lay.base[p0:p1])
        a0, a1 = np.searchsorted(down_rows, [p0, p1])
        e = by_row[a0:a1]
        down.append((p0, rows, dict(part=kk[e], cl=lslot[e], cu=uslot[e], seg=ss[e] - p0)))
        b0, b1 = np.searchsorted(kk, [p0, p1])
        up.append((p0, rows, dict(part=ss[b0:b1], cl=lslot[b0:b1], cu=uslot[b0:b1],
                                  seg=kk[b0:b1] - p0)))
    return down, up[::-1]


def _stages(levels, pad_values, backward):
    """Group consecutive levels into at most `MAX_STAGES` stages; pad and scan each.

    Each stage compiles once whatever its number of levels, so compile time is bounded;
    the grouping minimizes the padded work (dynamic programming over split points).
    Returns ``(stages, pad)`` where pad is the largest width a padded block write may overrun.
    """
    sizes = np.array([_sizes(lv) for lv in levels], np.int64).reshape(-1, 2)
    stages, pad = [], 0
    for i, j in _best_split(sizes, MAX_STAGES):
        if j - i == 1 and SINGLE_UNROLLED:
            stages.append(_single(levels[i]))
        else:
            stage, width = _stack(levels[i:j], pad_values, backward)
            stages.append(stage)
            pad = max(pad, width)
    return tuple(stages), pad


def _best_split(sizes, max_groups, overhead=32):
    """Split points ``[(i, j), ...]`` minimizing sum of ``len * (max w + max q + overhead)``."""
    t = len(sizes)
    if t == 0:
        return []
    cost = np.full((t + 1, t + 1), np.inf)  # cost[i, j] of one group of levels i..j-1
    for i in range(t):
        w = np.maximum.accumulate(sizes[i:, 0])
        q = np.maximum.accumulate(sizes[i:, 1])
        cost[i, i + 1:] = np.arange(1, t - i + 1) * (w + q + overhead)
    bests, args = [cost[0].copy()], [None]  # best[j]: levels 0..j-1 in <= k groups
    for _ in range(1, max_groups):
        prev = bests[-1]
        total = prev[:, None] + cost  # a last group i..j-1 after the best cover of 0..i-1
        i_best = np.argmin(total, axis=0)
        val = total[i_best, np.arange(t + 1)]
        use = val < prev
        bests.append(np.where(use, val, prev))
        args.append(np.where(use, i_best, -1))
    groups, j, k = [], t, max_groups - 1
    while j > 0:
        i = 0 if k == 0 else int(args[k][j])
        if i >= 0:
            groups.append((i, j))
            j = i
        k -= 1
    return groups[::-1]


def _sizes(level):
    _, rows, pairs = level
    return len(next(iter(rows.values()))), len(next(iter(pairs.values())))


def _single(level):
    off, rows, pairs = level
    return Stage(dict(off=np.int64(off), **rows, **pairs), scanned=False)


def _stack(group, pad_values, backward):
    width = max(_sizes(lv)[0] for lv in group)
    npairs = max(max(_sizes(lv)[1] for lv in group), 1)
    out = {k: [] for k in ["off", *group[0][1], *group[0][2]]}
    for off, rows, pairs in group:
        extra = width - _sizes((off, rows, pairs))[0]
        shift = extra if backward else 0
        out["off"].append(off - shift)
        for k, v in rows.items():
            fill = np.full(extra, pad_values[k], v.dtype)
            out[k].append(np.concatenate([fill, v] if backward else [v, fill]))
        for k, v in pairs.items():
            v = v + shift if k == "seg" else v
            out[k].append(np.concatenate([v, np.full(npairs - v.size, pad_values[k], v.dtype)]))
    return Stage({k: np.stack(v) for k, v in out.items()}, scanned=True), width


def _shift_partners(stages, shift):
    """Sweep vectors store pivot k at ``shift + k`` (slot 0 is zero, then padding)."""
    out = []
    for st in stages:
        arr = dict(st.arrays)
        arr["off"] = arr["off"] + shift
        arr["part"] = np.where(arr["cl"] == 0, 0, arr["part"] + shift)
        out.append(Stage(arr, st.scanned))
    return tuple(out)
