"""Sparse matrices for the sparse solver tests: random, circuit (MNA) and pipe-network ones.

Each generator returns ``(rows, cols, values, n)`` (numpy, duplicates allowed and summed),
and `linear_fn` turns a pattern into ``F(x, values) = A x`` so a solver's ``linearize``
reproduces A exactly.
"""

import jax
import numpy as np
import scipy.sparse as sp


def linear_fn(rows, cols, n):
    """``F(x, values) = A x`` for pattern-aligned values (A's Jacobian is A)."""
    rows, cols = np.asarray(rows), np.asarray(cols)

    def fn(x, values):
        return jax.ops.segment_sum(values * x[cols], rows, num_segments=n)

    return fn


def coo(rows, cols, values, n):
    """Merge duplicates: ``(rows, cols, values)`` sorted row-major, and the dense matrix."""
    a = sp.coo_matrix((values, (rows, cols)), shape=(n, n)).tocsr()
    a.sum_duplicates()
    a.sort_indices()
    r = np.repeat(np.arange(n), np.diff(a.indptr))
    return r, a.indices.copy(), a.data.copy(), a.toarray()


def random_matrix(n, density, seed, dominance=1.5):
    """Random nonsymmetric pattern plus diagonal, diagonally dominant by ``dominance``."""
    rng = np.random.default_rng(seed)
    a = sp.random(n, n, density=density, random_state=rng, format="coo")
    vals = rng.normal(size=a.nnz)
    rowsum = np.bincount(a.row, np.abs(vals), minlength=n)
    r = np.concatenate([a.row, np.arange(n)])
    c = np.concatenate([a.col, np.arange(n)])
    d = dominance * (rowsum + 1.0) * rng.choice([-1.0, 1.0], size=n)
    return coo(r, c, np.concatenate([vals, d]), n)


def mna_matrix(n_nodes, n_sources, seed, extra_edges=2):
    """Resistor network (a random tree plus ``extra_edges * n`` chords), a small
    conductance to ground per node, and ``n_sources`` voltage sources (zero diagonals)."""
    rng = np.random.default_rng(seed)
    parent = np.array([rng.integers(0, k) for k in range(1, n_nodes)])
    a = np.concatenate([np.arange(1, n_nodes), rng.integers(0, n_nodes, extra_edges * n_nodes)])
    b = np.concatenate([parent, rng.integers(0, n_nodes, extra_edges * n_nodes)])
    keep = a != b
    a, b = a[keep], b[keep]
    g = rng.uniform(0.1, 10.0, a.size)
    src = rng.choice(n_nodes, n_sources, replace=False)
    s = n_nodes + np.arange(n_sources)
    n = n_nodes + n_sources
    rows = np.concatenate([a, b, a, b, np.arange(n_nodes), src, s])
    cols = np.concatenate([a, b, b, a, np.arange(n_nodes), s, src])
    vals = np.concatenate([g, g, -g, -g, rng.uniform(1e-3, 1e-2, n_nodes),
                           np.ones(n_sources), np.ones(n_sources)])
    return coo(rows, cols, vals, n)


def pipe_network_matrix(k, seed, n_fixed=2):
    """Saddle-point Jacobian of a k x k looped pipe grid: flows Q (one row each:
    ``H_i - H_j - d Q``) then junction heads H (mass balance, zero diagonal). ``n_fixed``
    junctions have a fixed head (their pipes' rows lose that head: a grounding)."""
    rng = np.random.default_rng(seed)
    idx = np.arange(k * k).reshape(k, k)
    i = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel()])
    j = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel()])
    fixed = rng.choice(k * k, n_fixed, replace=False)
    heads = np.setdiff1d(np.arange(k * k), fixed)
    hpos = np.full(k * k, -1)
    hpos[heads] = np.arange(heads.size)
    n_pipes = i.size
    n = n_pipes + heads.size
    p = np.arange(n_pipes)
    rows, cols, vals = [p], [p], [-rng.uniform(0.5, 50.0, n_pipes)]
    for node, sign in [(i, 1.0), (j, -1.0)]:
        ok = hpos[node] >= 0
        h = n_pipes + hpos[node[ok]]
        rows += [p[ok], h]
        cols += [h, p[ok]]
        vals += [np.full(ok.sum(), sign), np.full(ok.sum(), -sign)]
    return coo(np.concatenate(rows), np.concatenate(cols), np.concatenate(vals), n)
