"""`BandedLU` and `SparseLU` judge pivots independently of units (rows or columns scaled by
1e9 and 1e-9 are not singular), still report singular Jacobians, and `SparseLU` reports a
static pivot that breaks down on a regular Jacobian as a failed linear solve, not as a
singular Jacobian."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import solvers
from solvers import RESULTS, BandedLU, SparseLU, SparsityPattern
from sparse_cases import linear_fn


def _tridiagonal(n, seed=0):
    rng = np.random.default_rng(seed)
    return (np.diag(4.0 + rng.random(n)) + np.diag(rng.normal(size=n - 1), 1)
            + np.diag(rng.normal(size=n - 1), -1))


def _units(n, big=1e9):
    """Alternate scales ``big, 1/big, big, ...`` (equations or unknowns in mixed units)."""
    return np.where(np.arange(n) % 2, 1 / big, big)


TRI = _tridiagonal(12)
ONES = np.ones(12)
#: ``(base, row scales, column scales)``: well conditioned once each equation and unknown
#: is in sensible units (the scaled matrix itself has a condition number up to 1e22)
MIXED = {
    "rows": (TRI, _units(12), ONES),
    "columns": (TRI, ONES, _units(12)),
    "both": (TRI, _units(12, 1e6), _units(12, 1e-5)),
    "diagonal": (np.eye(3), np.array([1e-12, 1.0, 1e12]), np.ones(3)),
}
SINGULAR = np.array([[1.0, 2.0, 0.0], [2.0, 4.0, 0.0], [0.0, 1.0, 3.0]])
REDUNDANT = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])


def _linear(solver_type, a, dense_pattern=False, **options):
    """The solver bound to ``a``'s pattern (or the full one) and a jitted
    ``b -> (solve, solve_transpose, solve_with_result)`` on ``a``."""
    n = a.shape[0]
    mask = np.ones_like(a, bool) if dense_pattern else a != 0
    rows, cols = np.nonzero(mask)
    solver = solver_type(SparsityPattern(rows, cols, (n, n)), **options)
    fn = linear_fn(rows, cols, n)

    @jax.jit
    def solves(values, b):
        op = solver.linearize(fn, jnp.zeros(n), values)[1]
        return solver.solve(op, b), solver.solve_transpose(op, b), solver.solve_with_result(op, b)

    return solver, lambda b: solves(jnp.asarray(a[rows, cols]), jnp.asarray(b))


@pytest.mark.parametrize("solver_type", [BandedLU, SparseLU])
@pytest.mark.parametrize("case", sorted(MIXED))
def test_systems_in_mixed_units_are_solved_not_called_singular(solver_type, case):
    base, rows, cols = MIXED[case]
    a = rows[:, None] * base * cols[None, :]
    b = np.random.default_rng(1).normal(size=a.shape[0])
    _, solves = _linear(solver_type, a)
    x, y, coded = solves(b)
    assert int(coded.result) == RESULTS.successful
    np.testing.assert_allclose(x, np.linalg.solve(base, b / rows) / cols, rtol=1e-9)
    np.testing.assert_allclose(y, np.linalg.solve(base.T, b / cols) / rows, rtol=1e-9)


@pytest.mark.parametrize("solver_type", [BandedLU, SparseLU])
@pytest.mark.parametrize("scales", [(1.0, 1.0, 1.0), (1e9, 1e-9, 1.0), (1e-12, 1.0, 1e12)])
def test_singular_jacobians_stay_singular_in_any_units(solver_type, scales):
    a = np.asarray(scales)[:, None] * SINGULAR
    _, solves = _linear(solver_type, a)
    x, _, coded = solves(np.ones(3))
    assert np.isnan(x).all() and int(coded.result) == RESULTS.singular_jacobian


def test_sparse_lu_on_a_dense_pattern_calls_singular_only_what_it_can_tell():
    """Two equal equations: whatever the static order, a pivot's whole column vanishes, so
    J is singular. With ``SINGULAR`` the column under the zero pivot may keep an entry that
    partial pivoting would have used: the static LU cannot tell, and fails either way."""
    _, solves = _linear(SparseLU, 1e9 * REDUNDANT, dense_pattern=True)
    assert int(solves(np.ones(3))[2].result) == RESULTS.singular_jacobian
    _, solves = _linear(SparseLU, SINGULAR, dense_pattern=True)
    x, _, coded = solves(np.ones(3))
    assert np.isnan(x).all()
    assert int(coded.result) in (RESULTS.singular_jacobian, RESULTS.linear_solve_failed)


@pytest.mark.parametrize("pivoting", ["pairs", "matching"])
def test_a_static_pivot_that_vanishes_on_a_permutation_is_a_failed_linear_solve(pivoting):
    """J = a cyclic shift (condition number 1) with a dense pattern: the static diagonal
    pivots are all zero. SparseLU cannot solve it, but J is not singular: it says so
    (``linear_solve_failed``, whose advice is a pivoting solver), and BandedLU solves it."""
    a = np.roll(np.eye(6), 1, axis=0)
    _, solves = _linear(SparseLU, a, dense_pattern=True, pivoting=pivoting)
    x, _, coded = solves(np.ones(6))
    assert np.isnan(x).all() and int(coded.result) == RESULTS.linear_solve_failed
    _, banded = _linear(BandedLU, a, dense_pattern=True)
    x, _, coded = banded(np.arange(6.0))
    assert int(coded.result) == RESULTS.successful
    np.testing.assert_allclose(x, np.linalg.solve(a, np.arange(6.0)))


def test_each_member_of_a_batch_gets_its_own_code():
    n = 3
    rows, cols = np.nonzero(np.ones((n, n)))
    solver = SparseLU(SparsityPattern(rows, cols, (n, n)))
    fn = linear_fn(rows, cols, n)
    mats = [np.roll(np.eye(n), 1, axis=0), 1e-9 * REDUNDANT, np.diag([1e-12, 1.0, 1e12])]

    def one(values):
        return solver.solve_with_result(solver.linearize(fn, jnp.zeros(n), values)[1],
                                        jnp.ones(n))

    values = jnp.asarray(np.stack([m[rows, cols] for m in mats]))
    batch = jax.jit(jax.vmap(one))(values)
    expected = [RESULTS.linear_solve_failed, RESULTS.singular_jacobian, RESULTS.successful]
    assert batch.result.tolist() == expected
    assert [int(jax.jit(one)(v).result) for v in values] == expected
    np.testing.assert_allclose(batch.value[2], [1e12, 1.0, 1e-12])


def test_factored_solves_of_a_system_in_mixed_units():
    a = _units(12)[:, None] * TRI
    n = a.shape[0]
    rows, cols = np.nonzero(a)
    solver = SparseLU(SparsityPattern(rows, cols, (n, n)))
    b = a @ np.ones(n)

    @jax.jit
    def chord(values, b):
        op = solver.linearize(linear_fn(rows, cols, n), jnp.zeros(n), values)[1]
        return solver.solve_factored(solver.factorize(op), b)

    values = jnp.asarray(a[rows, cols])
    out = chord(values, jnp.asarray(b))
    assert int(out.result) == RESULTS.successful
    np.testing.assert_allclose(out.value, np.ones(n), rtol=1e-9)
    outs = jax.vmap(chord)(jnp.stack([values, 2 * values]), jnp.stack([b, b]))
    np.testing.assert_allclose(outs.value, [np.ones(n), 0.5 * np.ones(n)], rtol=1e-9)


def _chain(x, c):
    """A nonlinear chain whose equations are in alternating units (1e9 and 1e-9)."""
    scale = jnp.asarray(_units(x.shape[0]))
    own = x ** 3 + 3.0 * x - c
    link = 0.1 * jnp.diff(x)
    flow = jnp.concatenate([link, jnp.zeros(1)]) - jnp.concatenate([jnp.zeros(1), link])
    return scale * (own - flow)


def test_newton_in_mixed_units_agrees_across_linear_solvers_and_batches():
    n = 12
    pattern = SparsityPattern.from_dense(np.abs(np.subtract.outer(np.arange(n),
                                                                  np.arange(n))) <= 1)
    cs = jnp.stack([jnp.arange(1.0, n + 1) * k for k in (1, 3)])
    dense = solvers.solve_flat(_chain, jnp.zeros(n), cs[0], solver=solvers.Newton())
    assert int(dense.result) == RESULTS.successful
    for linear in (BandedLU(), SparseLU()):
        newton = solvers.Newton(linear_solver=linear)
        one = solvers.solve_flat(_chain, jnp.zeros(n), cs[0], solver=newton, sparsity=pattern)
        assert int(one.result) == RESULTS.successful
        assert int(one.iterations) == int(dense.iterations)
        np.testing.assert_allclose(one.x, dense.x, rtol=1e-10)
        batch = solvers.solve_flat_batch(_chain, jnp.zeros(n), cs, solver=newton,
                                         sparsity=pattern)
        assert batch.result.tolist() == [RESULTS.successful] * 2
        np.testing.assert_allclose(batch.x[0], dense.x, rtol=1e-10)
