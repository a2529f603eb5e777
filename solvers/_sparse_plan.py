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

import numpy as np

from ._sparse_order import (
    elimination_tree, level_order, match_rows, nested_dissection, symmetrised_adjacency,
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


def build_plan(pattern: SparsityPattern, leaf_size: int = 8) -> LUPlan:
    """Match, order, factor symbolically and schedule; cost about that of one factorization."""
    row_match, singular = match_rows(pattern)
    adj = symmetrised_adjacency(pattern, row_match)
    order = nested_dissection(adj, leaf_size)
    _, level, structs = elimination_tree(adj, order)
    lperm, level, structs = level_order(level, structs)
    final = order[lperm]
    n = pattern.shape[0]
    d = np.array([s.size for s in structs], np.int64)
    base = 1 + np.concatenate([[0], np.cumsum(1 + 2 * d)])  # base[k]: slot of U(k, k)
    kk = np.repeat(np.arange(n), d)
    ss = np.concatenate(structs) if n else np.zeros(0, np.int64)
    rank = np.arange(kk.size) - np.repeat(np.cumsum(d) - d, d)
    lslot = base[kk] + 1 + rank
    uslot = base[kk] + 1 + d[kk] + rank
    lookup = _SlotLookup(n, kk, ss, lslot, uslot, base)

    row_perm, col_perm = row_match[final], final
    pos_r, pos_c = _inverse(row_perm)[pattern.rows], _inverse(col_perm)[pattern.cols]
    a_slot = lookup(pos_r, pos_c)
    n_slots = int(base[n])
    slot_src = np.full(n_slots, pattern.nnz, np.int64)  # pattern entry held by each slot
    slot_src[a_slot] = np.arange(pattern.nnz)
    diag_of = np.arange(n_slots)  # for L slots: the slot of their pivot's diagonal
    is_l = np.zeros(n_slots, bool)
    diag_of[lslot] = base[kk]
    is_l[lslot] = True

    tgt, pl, pu = _factor_products(ss, d, lslot, uslot, lookup)
    pivot_start = np.searchsorted(level, np.arange(level.max() + 2 if n else 1))
    slot_start = base[pivot_start]
    factor_levels = []
    for t in range(pivot_start.size - 1):
        o0, o1 = int(slot_start[t]), int(slot_start[t + 1])
        q0, q1 = np.searchsorted(tgt, [o0, o1])
        local = np.arange(o1 - o0)
        dl = np.where(is_l[o0:o1], diag_of[o0:o1] - o0, local)
        rows = dict(dl=dl, isl=is_l[o0:o1])
        pairs = dict(pl=pl[q0:q1], pu=pu[q0:q1], seg=tgt[q0:q1] - o0)
        factor_levels.append((o0, rows, pairs))
    factor_pad = dict(dl=0, isl=False, pl=0, pu=0, seg=0)
    factor_stages, fpad = _stages(factor_levels, factor_pad, backward=False)

    down, up = _sweep_levels(n, kk, ss, lslot, uslot, base, pivot_start)
    sweep_pad = dict(diag=int(base[0]), part=0, cl=0, cu=0, seg=0)
    down_stages, dpad = _stages(down, sweep_pad, backward=False)
    up_stages, upad = _stages(up, sweep_pad, backward=True)
    vec_pad = max(dpad, upad)
    down_stages = _shift_partners(down_stages, 1 + vec_pad)
    up_stages = _shift_partners(up_stages, 1 + vec_pad)
    return LUPlan(
        pattern=pattern, row_perm=row_perm, col_perm=col_perm, a_slot_rows=pos_r,
        slot_src=np.concatenate([slot_src, np.full(fpad, pattern.nnz, np.int64)]),
        diag_slots=base[:n], n_values=n_slots + fpad, vec_pad=vec_pad,
        factor_stages=factor_stages, down_stages=down_stages, up_stages=up_stages,
        n_levels=pivot_start.size - 1, n_products=int(tgt.size),
        structurally_singular=singular,
    )


def _inverse(perm):
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.size)
    return inv


class _SlotLookup:
    """Vectorized slot of entry (i, j) of the filled matrix (it must be in the fill)."""

    def __init__(self, n, kk, ss, lslot, uslot, base):
        self.n, self.key, self.lslot, self.uslot, self.base = n, kk * n + ss, lslot, uslot, base

    def __call__(self, i, j):
        i, j = np.asarray(i, np.int64), np.asarray(j, np.int64)
        want = np.minimum(i, j) * self.n + np.maximum(i, j)
        if self.key.size == 0:
            assert np.all(i == j), "entry outside the fill pattern"
            return self.base[i]
        pos = np.minimum(np.searchsorted(self.key, want), self.key.size - 1)
        assert np.all((i == j) | (self.key[pos] == want)), "entry outside the fill pattern"
        off = np.where(i > j, self.lslot[pos], self.uslot[pos])
        return np.where(i == j, self.base[np.minimum(i, self.n)], off)


def _factor_products(ss, d, lslot, uslot, lookup):
    """All products ``L(i,p) U(p,j)`` (as slots) and the slot of their target (i, j)."""
    starts = np.cumsum(d) - d
    tg, ls, us = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for deg in np.unique(d[d > 0]):
        piv = np.flatnonzero(d == deg)
        idx = starts[piv][:, None] + np.arange(deg)[None, :]  # (g, deg) entry indices
        rows = ss[idx]
        i = np.broadcast_to(rows[:, :, None], (piv.size, deg, deg)).ravel()
        j = np.broadcast_to(rows[:, None, :], (piv.size, deg, deg)).ravel()
        tg.append(lookup(i, j))
        ls.append(np.broadcast_to(lslot[idx][:, :, None], (piv.size, deg, deg)).ravel())
        us.append(np.broadcast_to(uslot[idx][:, None, :], (piv.size, deg, deg)).ravel())
    tgt, pl, pu = (np.concatenate(x) for x in (tg, ls, us))
    order = np.argsort(tgt, kind="stable")
    return tgt[order], pl[order], pu[order]


def _sweep_levels(n, kk, ss, lslot, uslot, base, pivot_start):
    """Per level: forward pairs (row ss gets L(ss,kk) y[kk]) and backward (row kk)."""
    by_row = np.argsort(ss, kind="stable")
    down_rows, up_rows = ss[by_row], kk
    down, up = [], []
    for t in range(pivot_start.size - 1):
        p0, p1 = int(pivot_start[t]), int(pivot_start[t + 1])
        rows = dict(diag=base[p0:p1])
        a0, a1 = np.searchsorted(down_rows, [p0, p1])
        e = by_row[a0:a1]
        down.append((p0, rows, dict(part=kk[e], cl=lslot[e], cu=uslot[e], seg=ss[e] - p0)))
        b0, b1 = np.searchsorted(up_rows, [p0, p1])
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
