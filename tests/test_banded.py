"""`BandedLU`: exact solves of banded systems in any unknown order, and where it is chosen."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import solvers
from solvers import BandedLU, SparseLU, SparsityPattern
from solvers.linear._banded import UNROLL_LIMIT, band_order, bandwidths
from solvers.linear._sparse import SparseOperator
from solvers.linear._sparse_auto import SparseAuto
from sparse_cases import linear_fn


def _banded_matrix(n, lower, upper, seed, density=0.8):
    """A random matrix with ``lower``/``upper`` bands, shuffled by a random permutation
    (so the solver has to find the band), and its permutation-free dense copy."""
    rng = np.random.default_rng(seed)
    a = np.zeros((n, n))
    for i in range(n):
        for j in range(max(0, i - lower), min(n, i + upper + 1)):
            if i == j or rng.random() < density:
                a[i, j] = rng.normal()
    perm = rng.permutation(n)
    return a[perm][:, perm]


def _operator(solver, a):
    rows, cols = np.nonzero(a)
    fn = linear_fn(rows, cols, a.shape[0])
    return solver.linearize(fn, jnp.zeros(a.shape[0]), jnp.asarray(a[rows, cols]))[1]


# Both elimination loops: unrolled up to UNROLL_LIMIT (32) unknowns, a scan unrolled by 4
# above it. The unrolled loop's compile grows with n (about 10 s at n = 30 on 2 cores), so it
# is drawn from small systems, the scan from just past the limit (every remainder mod 4).
SIZES = st.one_of(st.integers(1, 12), st.integers(UNROLL_LIMIT + 1, UNROLL_LIMIT + 8))


@settings(max_examples=10, deadline=None)
@given(n=SIZES, lower=st.integers(0, 3), upper=st.integers(0, 3), seed=st.integers(0, 10_000))
def test_solves_and_transposed_solves_match_dense(n, lower, upper, seed):
    a = _banded_matrix(n, lower, upper, seed)
    if np.linalg.cond(a) > 1e8:
        return
    solver = BandedLU(SparsityPattern.from_dense(a != 0))
    b = np.random.default_rng(seed).normal(size=n)
    rows, cols = np.nonzero(a)
    fn = linear_fn(rows, cols, n)

    def solves(values, b):  # linearize and solve in one compiled program
        op = solver.linearize(fn, jnp.zeros(n), values)[1]
        return solver.solve(op, b), solver.solve_transpose(op, b)

    x, y = jax.jit(solves)(jnp.asarray(a[rows, cols]), jnp.asarray(b))
    tol = 1e-12 * np.linalg.cond(a)
    np.testing.assert_allclose(a @ np.asarray(x), b, atol=tol)
    np.testing.assert_allclose(a.T @ np.asarray(y), b, atol=tol)


def test_pivoting_handles_zero_diagonals_and_vmap():
    # A voltage-source row: zero diagonal, solvable only with a row exchange.
    a = np.array([[0.0, 1.0, 0.0, 0.0], [1.0, 2.0, -1.0, 0.0],
                  [0.0, -1.0, 3.0, -1.0], [0.0, 0.0, -1.0, 4.0]])
    solver = BandedLU(SparsityPattern.from_dense(a != 0))
    op = _operator(solver, a)
    scales = jnp.asarray([1.0, 2.0, -0.5])
    bs = jnp.asarray(np.random.default_rng(1).normal(size=(3, 4)))
    xs = jax.vmap(solver.solve)(SparseOperator(scales[:, None] * op.data[None, :]), bs)
    for k in range(3):
        np.testing.assert_allclose(xs[k], np.linalg.solve(float(scales[k]) * a, bs[k]),
                                   rtol=1e-12)


def test_singular_systems_give_nan():
    a = np.array([[1.0, 2.0, 0.0], [2.0, 4.0, 0.0], [0.0, 1.0, 3.0]])
    solver = BandedLU(SparsityPattern.from_dense(a != 0))
    assert np.all(np.isnan(solver.solve(_operator(solver, a), jnp.ones(3))))


def test_reverse_cuthill_mckee_finds_a_shuffled_tridiagonal_band():
    a = _banded_matrix(50, 1, 1, seed=3, density=1.0)
    pattern = SparsityPattern.from_dense(a != 0)
    assert bandwidths(pattern, np.arange(50)) != (1, 1)
    assert bandwidths(pattern) == (1, 1)
    assert sorted(band_order(pattern).tolist()) == list(range(50))


def test_non_square_patterns_are_rejected():
    with pytest.raises(solvers.SparsityError, match="square"):
        BandedLU(SparsityPattern.from_dense(np.ones((2, 3))))


def test_gradients_through_a_banded_newton_match_dense():
    def residual(x, p):  # a nonlinear chain: tridiagonal Jacobian
        return jnp.concatenate([x[:1] - p, x[1:] - x[:-1] + 0.1 * x[1:] ** 3 - 0.2])

    n = 12
    pattern = SparsityPattern.from_dense(np.eye(n) + np.eye(n, k=-1))

    def total(p, linear_solver):
        sol = solvers.solve_flat(residual, jnp.zeros(n), p,
                                 solver=solvers.Newton(linear_solver=linear_solver))
        return jnp.sum(sol.x ** 2)

    grad_banded = jax.grad(total)(0.7, BandedLU(pattern))
    grad_dense = jax.grad(total)(0.7, solvers.DenseLU())
    np.testing.assert_allclose(grad_banded, grad_dense, rtol=1e-10)


def test_chosen_for_ladder_batches_and_not_for_grids_or_dense_systems():
    from scenarios.circuits import build_circuit, diode_ladder_netlist
    from scenarios.circuits._generate import grid_netlist

    ladder = solvers.System.build(build_circuit(diode_ladder_netlist(10, tight=False)))
    assert isinstance(solvers.default_method(ladder, batch_size=100).linear_solver, BandedLU)
    assert isinstance(solvers.default_method(ladder).linear_solver, solvers.DenseLU)
    long_ladder = solvers.System.build(build_circuit(diode_ladder_netlist(60, tight=False)))
    chosen = solvers.default_method(long_ladder, batch_size=100).linear_solver
    assert isinstance(chosen, BandedLU)  # AutoLinearSolver's choice, bound to the pattern
    assert chosen == solvers.AutoLinearSolver(batch_size=100).select(long_ladder.sparsity_pattern())
    grid = solvers.System.build(build_circuit(grid_netlist(6)))
    chosen = solvers.default_method(grid, batch_size=100).linear_solver
    assert isinstance(chosen, SparseLU)
    dense = SparsityPattern.from_dense(np.ones((8, 8)))
    assert isinstance(SparseAuto(dense).choice, SparseLU)
    with pytest.raises(ValueError, match="band_ratio"):
        SparseAuto(dense, band_ratio=-1.0)
