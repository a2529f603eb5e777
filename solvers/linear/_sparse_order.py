"""Host-side symbolic analysis for the static-pivoting sparse LU (numpy/scipy, run once).

Three steps, all on the sparsity pattern only:

1. `match_rows`: a row permutation with a structurally nonzero diagonal, keeping existing
   diagonal entries where possible (MNA matrices have zero diagonals for the currents of
   voltage sources; a maximum matching moves a nonzero onto each such diagonal).
2. `nested_dissection`: a fill-reducing symmetric ordering of the symmetrised pattern. Its
   elimination tree is short and bushy, so many pivots can be eliminated at once.
3. `elimination_tree`: the symbolic Cholesky-style fill of the symmetrised pattern, the tree
   and each pivot's level (height above the leaves): pivots of one level are independent.
"""

from __future__ import annotations

import numpy as np

from ._scipy import csgraph, sparse as sp
from ._sparsity import SparsityError, SparsityPattern, greedy_coloring


def match_rows(pattern: SparsityPattern) -> tuple[np.ndarray, bool]:
    """Row permutation ``perm`` so that every ``(perm[i], i)`` is in the pattern.

    Returns ``(perm, structurally_singular)``. Among full matchings, the one keeping the
    most existing diagonal entries is chosen (they are usually the best static pivots).
    If no full matching exists the matrix is singular for all values: unmatched rows are
    paired arbitrarily (the factorization then meets a zero pivot and reports it).
    """
    n = _square(pattern)
    r, c = pattern.rows, pattern.cols
    if np.unique(r[r == c]).size == n:
        return np.arange(n), False
    weights = np.where(r == c, 1.0, 2.0)
    w = sp.csr_matrix((weights, (r, c)), shape=(n, n))
    try:
        _, col_of_row = csgraph.min_weight_full_bipartite_matching(w)
        perm = np.empty(n, np.int64)
        perm[col_of_row] = np.arange(n)
        return perm, False
    except ValueError:
        pass
    col_of_row = csgraph.maximum_bipartite_matching(pattern.to_scipy(), perm_type="column")
    free_cols = np.setdiff1d(np.arange(n), col_of_row[col_of_row >= 0])
    col_of_row = col_of_row.copy()
    col_of_row[col_of_row < 0] = free_cols
    perm = np.empty(n, np.int64)
    perm[col_of_row] = np.arange(n)
    return perm, True


def pair_zero_diagonals(pattern: SparsityPattern) -> np.ndarray | None:
    """A partner for each structurally zero diagonal, or None if some has none.

    Returns ``partner`` (-1 where the diagonal is present) such that ``p = partner[k]`` has
    its own diagonal and both ``(k, p)`` and ``(p, k)`` are in the pattern, each p used once.
    Eliminating p just before k fills ``(k, k)`` with ``-a_kp a_pk / a_pp``: the Schur
    complement of saddle-point systems (MNA voltage sources, pipe-flow/head networks).
    Pairs grow as a forest from partners that touch a single zero diagonal (a pipe to a
    fixed head, a node with one source), so each eliminated group stays "grounded" and the
    filled pivots cannot cancel, unlike a row matching's pivots or pairs along a cycle.
    """
    n = _square(pattern)
    r, c = pattern.rows.astype(np.int64), pattern.cols.astype(np.int64)
    has_diag = np.zeros(n, bool)
    has_diag[r[r == c]] = True
    zero, cand = np.flatnonzero(~has_diag), np.flatnonzero(has_diag)
    if zero.size == 0:
        return None
    a = pattern.to_scipy()
    both = a.multiply(a.T).tocsr()  # (k, p) and (p, k) both present
    z_to_p = both[zero][:, cand].tocsr()  # zero-diagonal node -> candidate partners
    p_to_z = z_to_p.T.tocsr()
    pair = _grow_forest(z_to_p, p_to_z)
    if np.any(pair < 0):  # components with no grounding partner: any matching will do
        free = np.setdiff1d(np.arange(cand.size), pair[pair >= 0])
        rest = np.flatnonzero(pair < 0)
        sub = z_to_p[rest][:, free].tocsr()
        match = csgraph.maximum_bipartite_matching(sub, perm_type="column")
        if np.any(match < 0):
            return None
        pair[rest] = free[match]
    partner = np.full(n, -1, np.int64)
    partner[zero] = cand[pair]
    return partner


def _grow_forest(z_to_p, p_to_z):
    """Pair zero-diagonal nodes breadth-first from partners with one zero neighbour."""
    nz = z_to_p.shape[0]
    pair = np.full(nz, -1, np.int64)
    used = np.zeros(p_to_z.shape[0], bool)
    deg = np.diff(p_to_z.indptr)
    queue = []
    for z in range(nz):
        for p in z_to_p.indices[z_to_p.indptr[z]:z_to_p.indptr[z + 1]]:
            if deg[p] == 1 and not used[p]:
                pair[z], used[p] = p, True
                queue.append(z)
                break
    head = 0
    while head < len(queue):
        z = queue[head]
        head += 1
        for p in z_to_p.indices[z_to_p.indptr[z]:z_to_p.indptr[z + 1]]:
            if used[p]:
                continue
            for k in p_to_z.indices[p_to_z.indptr[p]:p_to_z.indptr[p + 1]]:
                if pair[k] < 0:
                    pair[k], used[p] = p, True
                    queue.append(k)
                    break
    return pair


def grouped_order(adj: sp.csr_matrix, partner: np.ndarray | None, order_fn) -> np.ndarray:
    """Order the graph with each ``(partner[k], k)`` pair contracted to one vertex, then
    expand pairs as partner first: the pair acts as a 2x2 pivot block."""
    if partner is None:
        return order_fn(adj)
    n = adj.shape[0]
    rep = np.arange(n)
    paired = partner >= 0
    rep[np.flatnonzero(paired)] = partner[paired]
    keep = ~paired  # group representatives: everything but the zero-diagonal nodes
    gid = np.cumsum(keep) - 1
    group = gid[rep]
    s = sp.csr_matrix((np.ones(n), (np.arange(n), group)), shape=(n, int(keep.sum())))
    contracted = (s.T @ adj @ s).tocsr()
    contracted.setdiag(0)
    contracted.eliminate_zeros()
    g_order = order_fn(contracted)
    members = np.argsort(group * 2 + paired, kind="stable")  # per group: partner, then k
    starts = np.searchsorted(group[members], g_order)
    sizes = np.bincount(group, minlength=g_order.size)[g_order]
    idx = np.repeat(starts, sizes) + (np.arange(sizes.sum()) - np.repeat(np.cumsum(sizes) - sizes, sizes))
    return members[idx]


def _square(pattern: SparsityPattern) -> int:
    m, n = pattern.shape
    if m != n:
        raise SparsityError(
            f"a sparse LU needs a square Jacobian, got shape {pattern.shape}; use a least-"
            "squares method or check that the system has as many equations as unknowns."
        )
    return n


def symmetrised_adjacency(pattern: SparsityPattern, row_perm: np.ndarray) -> sp.csr_matrix:
    """Adjacency (no diagonal) of ``B + B^T`` with ``B = A[row_perm, :]``."""
    n = pattern.shape[0]
    inv = np.empty(n, np.int64)
    inv[row_perm] = np.arange(n)
    r, c = inv[pattern.rows], pattern.cols.astype(np.int64)
    off = r != c
    rr = np.concatenate([r[off], c[off]])
    cc = np.concatenate([c[off], r[off]])
    adj = sp.csr_matrix((np.ones(rr.size), (rr, cc)), shape=(n, n))  # float64: what csgraph takes
    adj.sum_duplicates()
    adj.sort_indices()
    return adj


def nested_dissection(adj: sp.csr_matrix, leaf_size: int = 8) -> np.ndarray:
    """Fill-reducing order: recursive BFS-level vertex separators, separators last.

    Works on any graph (components are ordered separately); separators come from the
    level structure of a pseudo-peripheral node, which suits grids, ladders and networks.
    """
    n = adj.shape[0]
    out: list[np.ndarray] = []
    stack: list[tuple[np.ndarray, bool]] = [(np.arange(n), False)]
    while stack:  # explicit stack: (nodes, emit) where emit means append as-is
        nodes, emit = stack.pop()
        if emit or nodes.size <= leaf_size:
            out.append(nodes if emit else _leaf_order(adj, nodes))
            continue
        parts = _dissect(adj, nodes, leaf_size)
        # Pushed in reverse, so they are ordered: first part, second part, separator.
        for part, is_sep in reversed(parts):
            stack.append((part, is_sep))
    order = np.concatenate(out) if out else np.zeros(0, np.int64)
    assert order.size == n
    return order


def _dissect(adj, nodes, leaf_size):
    """Split ``nodes`` into [(part, False), ..., (separator, True)]."""
    sub = _principal(adj, nodes)
    ncomp, labels = csgraph.connected_components(sub, connection="weak")  # sub is symmetric
    if ncomp > 1:
        comps = [nodes[labels == c] for c in range(ncomp)]
        small = [c for c in comps if c.size <= leaf_size]
        big = [(c, False) for c in comps if c.size > leaf_size]
        if small:
            big.append((_leaf_order(adj, np.concatenate(small)), True))
        return big
    dist = _bfs_levels(sub, _pseudo_peripheral(sub))
    depth = int(dist.max())
    if depth < 2:
        return [(_leaf_order(adj, nodes), True)]
    counts = np.bincount(dist, minlength=depth + 1)
    cum = np.cumsum(counts) / nodes.size
    cand = np.arange(1, depth)
    balanced = cand[(cum[cand - 1] >= 0.3) & (cum[cand] <= 0.7)]
    if balanced.size:
        level = int(balanced[np.argmin(counts[balanced])])
    else:
        level = int(cand[np.argmin(np.abs(cum[cand] - 0.5))])
    in_level = dist == level
    touches_next = _has_neighbour(sub, in_level, dist == level + 1)
    sep = in_level & touches_next
    first = (dist < level) | (in_level & ~touches_next)
    second = dist > level
    return [(nodes[first], False), (nodes[second], False), (nodes[sep], True)]


def _principal(adj: sp.csr_matrix, nodes: np.ndarray) -> sp.csr_matrix:
    """``adj[nodes][:, nodes]`` by direct gathers (SciPy's two fancy indexings cost several
    times more on the many small subgraphs of a dissection)."""
    local = np.full(adj.shape[0], -1, np.int64)
    local[nodes] = np.arange(nodes.size)
    starts, lengths = adj.indptr[nodes], np.diff(adj.indptr)[nodes]
    offsets = np.cumsum(lengths) - lengths
    entries = np.repeat(starts - offsets, lengths) + np.arange(int(lengths.sum()))
    cols = local[adj.indices[entries]]
    keep = cols >= 0
    counts = np.bincount(np.repeat(np.arange(nodes.size), lengths)[keep], minlength=nodes.size)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    return sp.csr_matrix((adj.data[entries][keep], cols[keep], indptr),
                         shape=(nodes.size, nodes.size))


def _has_neighbour(sub, mask_from, mask_to):
    hit = sub @ mask_to.astype(np.int32)
    return mask_from & (hit > 0)


def _bfs_levels(sub, start):
    """Hops from ``start`` to each node of the connected, symmetric ``sub``: from the BFS
    tree by pointer jumping (scipy's BFS is a C loop; its shortest path costs 20-40x more
    per call on the small subgraphs of a dissection)."""
    _, parent = csgraph.breadth_first_order(sub, start, directed=True,
                                            return_predecessors=True)
    up = np.where(parent < 0, np.arange(parent.size), parent)
    hops = (parent >= 0).astype(np.int64)
    while True:  # hops[i] = distance from i to its ancestor up[i]
        jump = up[up]
        if np.array_equal(jump, up):
            return hops
        hops, up = hops + hops[up], jump


def _pseudo_peripheral(sub):
    start = int(np.argmin(np.diff(sub.indptr)))
    ecc = -1
    for _ in range(4):
        d = _bfs_levels(sub, start)
        far = int(d.max())
        if far <= ecc:
            break
        ecc = far
        ends = np.flatnonzero(d == far)
        start = int(ends[np.argmin(np.diff(sub.indptr)[ends])])
    return start


def _leaf_order(adj, nodes):
    """Small sets: minimum degree within the set (cheap, short elimination chains)."""
    degree = np.diff(_principal(adj, nodes).indptr)
    return nodes[np.argsort(degree, kind="stable")]


def elimination_tree(adj: sp.csr_matrix, order: np.ndarray):
    """Symbolic factorization of the symmetrised pattern eliminated in ``order``.

    Returns ``(parent, level, structs)`` in the ordered numbering: ``structs[k]`` holds the
    sorted rows ``> k`` of column k of L (the same columns appear in row k of U).
    """
    n = adj.shape[0]
    padj = adj[order][:, order].tocsr()
    padj.sort_indices()
    indptr, indices = padj.indptr, padj.indices
    parent = np.full(n, -1, np.int64)
    level = np.zeros(n, np.int64)
    children: list[list[int]] = [[] for _ in range(n)]
    structs: list[np.ndarray] = [None] * n  # type: ignore[list-item]
    for k in range(n):
        row = indices[indptr[k]:indptr[k + 1]]
        parts = [row[row > k]] + [structs[c] for c in children[k]]
        s = np.unique(np.concatenate(parts)) if len(parts) > 1 else parts[0]
        s = s[s > k]
        structs[k] = s
        if s.size:
            p = int(s[0])
            parent[k] = p
            children[p].append(k)
            level[p] = max(level[p], level[k] + 1)
    return parent, level, structs


def level_order(level: np.ndarray, structs: list[np.ndarray]):
    """Renumber pivots level by level (a topological order of the tree, so same fill).

    Returns ``(perm, level_sorted, structs_sorted)`` with ``perm[new] = old``.
    """
    perm = np.argsort(level, kind="stable")
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.size)
    new_structs = [np.sort(inv[structs[old]]) for old in perm]
    return perm, level[perm], new_structs


def color_order(adj: sp.csr_matrix) -> np.ndarray:
    """Multicolour order: a greedy colouring (largest degree first), colour classes one
    after the other, last colour first so the high-degree vertices come last (less fill
    dropped). Each class is an independent set, so an incomplete factorization (no fill) in
    this order has about as many levels as colours (two for a 5-point grid)."""
    order = np.argsort(-np.diff(adj.indptr), kind="stable")
    colors = greedy_coloring(adj.indptr, adj.indices, order)
    return np.argsort(-colors, kind="stable")


def upper_structure(adj: sp.csr_matrix, order: np.ndarray):
    """Structure without fill in ``order``: ``(level, structs)`` where level is the depth in
    the dependency graph (1 + the deepest earlier neighbour) and ``structs[k]`` the later
    neighbours of k."""
    n = adj.shape[0]
    padj = adj[order][:, order].tocsr()
    padj.sort_indices()
    indptr, indices = padj.indptr, padj.indices
    level = np.zeros(n, np.int64)
    structs = []
    for k in range(n):
        row = indices[indptr[k]:indptr[k + 1]]
        lower = row[row < k]
        if lower.size:
            level[k] = level[lower].max() + 1
        structs.append(row[row > k].astype(np.int64))
    return level, structs
