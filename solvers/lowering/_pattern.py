"""The Jacobian's structural pattern, and the structural-singularity check built on it.

The pattern comes from data flow in the traced element methods (which of the unknown inputs
each output depends on), mapped to x through the graph's index arrays: a superset of the
nonzeros for any values, exact up to the granularity of whole arrays.
"""

from __future__ import annotations

import jax
from jax.extend.core import Literal
import numpy as np

from . import _groups, _kinds
from ._model_errors import StructurallySingularError, listing


def dependencies(closed) -> list[int]:
    """For each output of a closed jaxpr: a bitset (int) of the inputs it depends on.

    Higher-order primitives (pjit, cond, while, custom_jvp, ...) are treated as black boxes:
    each of their outputs depends on all of their inputs, which keeps the result a superset.
    """
    jaxpr = closed.jaxpr
    deps = {v: 1 << i for i, v in enumerate(jaxpr.invars)}
    for eqn in jaxpr.eqns:
        acc = 0
        for v in eqn.invars:
            if not isinstance(v, Literal):
                acc |= deps.get(v, 0)
        for v in eqn.outvars:
            deps[v] = acc
    return [0 if isinstance(v, Literal) else deps.get(v, 0) for v in jaxpr.outvars]


def bits(mask: int) -> list[int]:
    """Indices of the set bits of ``mask``."""
    out, i = [], 0
    while mask:
        if mask & 1:
            out.append(i)
        mask >>= 1
        i += 1
    return out


def outer(rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All (row, col) pairs per element: rows (c, r) x cols (c, u) -> flat arrays."""
    c, r = rows.shape
    u = cols.shape[1]
    return (np.broadcast_to(rows[:, :, None], (c, r, u)).reshape(-1),
            np.broadcast_to(cols[:, None, :], (c, r, u)).reshape(-1))


def unique(rows: list, cols: list, m: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted, de-duplicated pattern (row-major), via a CSR build (much faster than np.unique)."""
    from scipy.sparse import csr_matrix

    if not rows:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    r, c = np.concatenate(rows), np.concatenate(cols)
    a = csr_matrix((np.ones(len(r), np.int32), (r, c)), shape=(m, n))
    a.sum_duplicates()
    a.sort_indices()
    return np.repeat(np.arange(m, dtype=np.int64), np.diff(a.indptr)), a.indices.astype(np.int64)


def grouped(an, grouped_eval) -> tuple[np.ndarray, np.ndarray]:
    """Pattern of a grouped evaluation: one data-flow trace per group, mapped to all members."""
    rows, cols = [], []
    for g in grouped_eval.groups:
        outs = grouped_eval.outputs[id(g)]
        if not outs:
            continue
        data = _groups.abstract_data(an, g, batched=False)
        inputs = [(j, col) for j, slot in enumerate(g.slots) if slot.alias == j
                  for col in range(len(an.kinds[slot.kind].columns))]
        deps = dependencies(jax.make_jaxpr(grouped_eval.fns[id(g)])(data))
        for out, mask in zip(outs, deps):
            used = []
            for i in bits(mask):
                j, col = inputs[i]
                kind = an.kinds[g.slots[j].kind]
                if kind.columns[col].unknown:
                    used.append(kind.xidx[col][g.slots[j].rows])
            if used:
                r, c = outer(out.rows, np.concatenate(used, axis=1))
                rows.append(r)
                cols.append(c)
    return unique(rows, cols, grouped_eval.eq.m, an.n)


def check_structure(an, eq, rows: np.ndarray, cols: np.ndarray) -> None:
    """Raise if no matching pairs min(m, n) equations with distinct unknowns, naming the nodes."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_bipartite_matching

    m, n = eq.m, an.n
    if m == 0 or n == 0:
        return
    a = csr_matrix((np.ones(len(rows), np.int8), (rows, cols)), shape=(m, n))
    row_match = maximum_bipartite_matching(a, perm_type="column")
    rank = int((row_match >= 0).sum())
    if rank >= min(m, n):
        return
    col_match = np.full(n, -1, np.int64)
    col_match[row_match[row_match >= 0]] = np.flatnonzero(row_match >= 0)
    parts = []
    if m <= n and (row_match < 0).any():
        over_r, over_c = _alternating(a, col_match, np.flatnonzero(row_match < 0))
        parts.append(_describe(an, eq, over_r, over_c, "equations"))
    if n <= m and (col_match < 0).any():
        under_c, under_r = _alternating(a.tocsc(), row_match, np.flatnonzero(col_match < 0))
        parts.append(_describe(an, eq, under_r, under_c, "unknowns"))
    raise StructurallySingularError(
        f"the system is structurally singular: at most {rank} of its {min(m, n)} equations can "
        f"be paired with distinct unknowns, so the Jacobian is singular for any values. "
        + " ".join(parts) + " Typical causes: a node with nothing connected to it, a part of the "
        "network with no reference (ground, reservoir, slack bus), or an unknown that no equation "
        "uses. Connect or remove those nodes, or fix their equations."
    )


def _alternating(a, partner: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lines reachable from unmatched ``start`` lines by alternating paths (Dulmage-Mendelsohn)."""
    seen_lines, seen_other = set(start.tolist()), set()
    queue = list(start.tolist())
    while queue:
        line = queue.pop()
        for other in a.indices[a.indptr[line]:a.indptr[line + 1]].tolist():
            if other in seen_other:
                continue
            seen_other.add(other)
            nxt = int(partner[other])
            if nxt >= 0 and nxt not in seen_lines:
                seen_lines.add(nxt)
                queue.append(nxt)
    return np.asarray(sorted(seen_lines), np.int64), np.asarray(sorted(seen_other), np.int64)


def _describe(an, eq, eq_rows, x_cols, many: str) -> str:
    row_owner = np.repeat(np.arange(an.n_nodes), eq.size)
    col_owner = np.repeat(np.arange(an.n_nodes), an.x_size)
    rnodes = [_kinds.node_path(an, k) for k in np.unique(row_owner[eq_rows]).tolist()]
    cnodes = [_kinds.node_path(an, k) for k in np.unique(col_owner[x_cols]).tolist()]
    if many == "equations":
        if not len(x_cols):
            return f"The {len(eq_rows)} equation(s) of {listing(rnodes)} depend on no unknown."
        return (f"The {len(eq_rows)} equations of {listing(rnodes)} involve only the "
                f"{len(x_cols)} unknowns of {listing(cnodes)}.")
    if not len(eq_rows):
        return f"The {len(x_cols)} unknown(s) of {listing(cnodes)} appear in no equation."
    return (f"The {len(x_cols)} unknowns of {listing(cnodes)} appear only in the "
            f"{len(eq_rows)} equations of {listing(rnodes)}.")
