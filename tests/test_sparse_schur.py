"""The host LU's Schur-complement path (``solvers.linear._schur``) and its reused ordering."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvers.linear._auto import host_solver
from solvers.linear._schur import eliminated, schur_plan
from solvers.linear._sparse import SparseHostLU, SparseOperator
from solvers.linear._sparsity import SparsityError, SparsityPattern
from sparse_cases import linear_fn, mna_matrix, pipe_network_matrix, random_matrix


def _schur_solver(rows, cols, n):
    return SparseHostLU(rows, cols, (n, n), permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.1,
                        schur=True)


def _solves(solver, rows, cols, vals, n, b):
    op = solver.linearize(linear_fn(rows, cols, n), jnp.zeros(n), jnp.asarray(vals))[1]
    run = jax.jit(lambda op, b: (solver.solve(op, b), solver.solve_transpose(op, b)))
    return run(op, jnp.asarray(b))


def _assert_solves(dense, x, y, b):
    np.testing.assert_allclose(x, np.linalg.solve(dense, b), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(y, np.linalg.solve(dense.T, b), rtol=1e-9, atol=1e-11)


def test_schur_solve_matches_dense_including_transpose_and_vmap():
    rows, cols, vals, dense = pipe_network_matrix(6, seed=3)
    n = dense.shape[0]
    solver = _schur_solver(rows, cols, n)
    b = np.random.default_rng(0).normal(size=n)
    for _ in range(2):  # the second call reuses the cached ordering of the complement
        _assert_solves(dense, *_solves(solver, rows, cols, vals, n, b), b)
    op = solver.linearize(linear_fn(rows, cols, n), jnp.zeros(n), jnp.asarray(vals))[1]
    scales = jnp.asarray([1.0, 3.0])
    xs = jax.vmap(lambda s: solver.solve(SparseOperator(s * op.data), jnp.asarray(b)))(scales)
    for k, s in enumerate([1.0, 3.0]):
        np.testing.assert_allclose(xs[k], np.linalg.solve(s * dense, b), rtol=1e-9, atol=1e-11)


def test_schur_plan_eliminates_the_flows_and_leaves_a_symmetric_complement():
    rows, cols, _, dense = pipe_network_matrix(5, seed=1)
    n = dense.shape[0]
    plan = schur_plan(SparsityPattern(rows, cols, (n, n)))
    n_pipes = 2 * 5 * 4  # the flows come first in pipe_network_matrix
    assert plan.drop.max() < n_pipes and plan.drop.size >= n_pipes - 2  # not between 2 fixed
    assert plan.symmetric
    s_rows, s_cols = plan.s_pattern
    assert set(zip(s_rows.tolist(), s_cols.tolist())) == set(zip(s_cols.tolist(), s_rows.tolist()))


def test_eliminated_block_stays_diagonal_when_candidates_are_coupled():
    # unknowns 0, 1, 2 have diagonals and touch 3 (no diagonal); 0 and 1 are coupled
    a = np.array([[2.0, 1.0, 0.0, 1.0],
                  [1.0, 2.0, 0.0, 1.0],
                  [0.0, 0.0, 2.0, 1.0],
                  [1.0, 1.0, 1.0, 0.0]])
    rows, cols = np.nonzero(a)
    drop = eliminated(SparsityPattern(rows, cols, (4, 4)))
    np.testing.assert_array_equal(drop, [0, 2])
    solver = _schur_solver(rows, cols, 4)
    b = np.arange(1.0, 5.0)
    _assert_solves(a, *_solves(solver, rows, cols, a[rows, cols], 4, b), b)


def test_zero_or_tiny_block_pivots_fall_back_to_the_whole_factorization():
    rows, cols, vals, dense = pipe_network_matrix(5, seed=2)
    n = dense.shape[0]
    solver = _schur_solver(rows, cols, n)
    b = np.random.default_rng(1).normal(size=n)
    for pivot in (0.0, 1e-300, 1e-12):  # a pipe with (nearly) no resistance
        vals2, dense2 = vals.copy(), dense.copy()
        first = np.flatnonzero((rows == 0) & (cols == 0))[0]
        vals2[first], dense2[0, 0] = pivot, pivot
        _assert_solves(dense2, *_solves(solver, rows, cols, vals2, n, b), b)


def test_singular_saddle_point_gives_nan():
    rows, cols, vals, dense = pipe_network_matrix(4, seed=0)
    n = dense.shape[0]
    vals = np.where(rows == n - 1, 0.0, vals)  # a junction's mass balance is all zeros
    x, y = _solves(_schur_solver(rows, cols, n), rows, cols, vals, n, np.ones(n))
    assert np.all(np.isnan(x)) and np.all(np.isnan(y))


def test_schur_needs_a_pattern_with_zero_diagonals():
    rows, cols, _, dense = random_matrix(20, 0.1, seed=2, dominance=3.0)
    rows, cols = np.concatenate([rows, np.arange(20)]), np.concatenate([cols, np.arange(20)])
    with pytest.raises(SparsityError, match="schur=False"):
        SparseHostLU(rows, cols, (20, 20), schur=True)


def test_host_solver_picks_schur_for_saddle_points_only(monkeypatch):
    from solvers.linear import _klu
    klu = _klu.available()
    monkeypatch.setattr(_klu, "available", lambda: False)  # SuperLU's orderings first
    rows, cols, _, dense = pipe_network_matrix(6, seed=0)
    n = dense.shape[0]
    pipes = host_solver(rows, cols, (n, n))
    assert pipes.schur and pipes.permc_spec == "MMD_AT_PLUS_A"
    idx = np.arange(36).reshape(6, 6)
    a, c = np.concatenate([idx[:, :-1].ravel(), idx[:-1].ravel()]), np.concatenate(
        [idx[:, 1:].ravel(), idx[1:].ravel()])
    grid_rows = np.concatenate([a, c, np.arange(36)])
    grid_cols = np.concatenate([c, a, np.arange(36)])
    grid = host_solver(grid_rows, grid_cols, (36, 36))
    assert not grid.schur and grid.permc_spec == "MMD_AT_PLUS_A"
    monkeypatch.setattr(_klu, "available", lambda: klu)
    assert host_solver(grid_rows, grid_cols, (36, 36)).factorization == (
        "klu" if klu else "superlu")  # little fill: KLU where installed
    assert host_solver(rows, cols, (n, n)).schur  # a saddle point keeps SuperLU's Schur path
    rows, cols, _, mna = mna_matrix(60, 2, seed=12)  # 2 zero diagonals in 62: symmetric
    assert not host_solver(rows, cols, mna.shape).schur


@pytest.mark.parametrize("ordering", ["MMD_AT_PLUS_A", "ND"])
def test_reused_symmetric_ordering_matches_dense_for_new_values(ordering):
    idx = np.arange(49).reshape(7, 7)
    a, c = np.concatenate([idx[:, :-1].ravel(), idx[:-1].ravel()]), np.concatenate(
        [idx[:, 1:].ravel(), idx[1:].ravel()])
    rows = np.concatenate([a, c, np.arange(49)])
    cols = np.concatenate([c, a, np.arange(49)])
    solver = SparseHostLU(rows, cols, (49, 49), permc_spec=ordering, diag_pivot_thresh=0.1)
    rng = np.random.default_rng(4)
    b = rng.normal(size=49)
    for _ in range(3):  # the first call computes the ordering, the others reuse it
        vals = np.where(rows == cols, 4.5, -1.0) + 0.3 * rng.normal(size=rows.size)
        dense = np.zeros((49, 49))
        np.add.at(dense, (rows, cols), vals)
        _assert_solves(dense, *_solves(solver, rows, cols, vals, 49, b), b)


def test_nested_dissection_is_picked_for_large_symmetric_patterns(monkeypatch):
    import solvers.linear._auto as graph

    rows, cols, vals, dense = pipe_network_matrix(6, seed=2)
    n = dense.shape[0]
    monkeypatch.setattr(graph, "ND_MIN", n)
    pipes = host_solver(rows, cols, (n, n))
    assert pipes.schur and pipes.permc_spec == "ND"
    b = np.random.default_rng(5).normal(size=n)
    _assert_solves(dense, *_solves(pipes, rows, cols, vals, n, b), b)
    monkeypatch.setattr(graph, "ND_MIN", n + 1)
    assert host_solver(rows, cols, (n, n)).permc_spec == "MMD_AT_PLUS_A"


def test_unknown_orderings_are_rejected_with_the_choices():
    with pytest.raises(ValueError, match="permc_spec must be one of COLAMD.*ND, got 'AMD'"):
        SparseHostLU(np.arange(3), np.arange(3), (3, 3), permc_spec="AMD")


def test_well_posed_saddle_points_are_solved_without_the_whole_factorization(monkeypatch):
    import solvers.linear._schur as schur

    def whole(*args):
        raise AssertionError("fell back to factoring the whole matrix")

    monkeypatch.setattr(schur, "plain_solve", whole)
    rows, cols, vals, dense = pipe_network_matrix(6, seed=4)
    n = dense.shape[0]
    b = np.random.default_rng(6).normal(size=n)
    _assert_solves(dense, *_solves(_schur_solver(rows, cols, n), rows, cols, vals, n, b), b)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 40), st.floats(0.02, 0.4), st.integers(0, 2**31 - 1))
def test_dissection_helpers_equal_scipys_subgraphs_and_hop_counts(n, density, seed):
    """`_principal` is ``adj[nodes][:, nodes]`` and `_bfs_levels` scipy's unweighted
    shortest paths, on random symmetric graphs (a component from a random start)."""
    import scipy.sparse as sp
    from scipy.sparse import csgraph

    from solvers.linear import _sparse_order

    rng = np.random.default_rng(seed)
    a = sp.random(n, n, density=density, random_state=seed)
    adj = ((a + a.T) != 0).astype(float).tolil()
    adj.setdiag(0)
    adj = adj.tocsr()
    adj.eliminate_zeros()
    nodes = np.sort(rng.choice(n, size=rng.integers(1, n + 1), replace=False))
    sub = _sparse_order._principal(adj, nodes)
    assert (sub != adj[nodes][:, nodes]).nnz == 0 and sub.shape == (nodes.size,) * 2
    _, labels = csgraph.connected_components(sub, directed=False)
    part = np.flatnonzero(labels == labels[0])
    component = _sparse_order._principal(sub, part)
    start = int(rng.integers(part.size))
    hops = csgraph.shortest_path(component, unweighted=True, indices=start, directed=False)
    np.testing.assert_array_equal(_sparse_order._bfs_levels(component, start), hops)
