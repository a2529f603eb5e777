"""Host SuperLU, preconditioned Krylov and the automatic choice among the sparse solvers."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from solvers.linear import _klu
from solvers.linear._sparse import SparseHostLU, SparseLU, SparseOperator
from solvers.linear._sparse_auto import SparseAuto
from solvers.linear._sparse_krylov import SparseKrylov
from solvers.linear._sparse_lu import factor, triangular_solve
from solvers.linear._sparse_plan import build_plan
from solvers.linear._sparsity import SparsityPattern
from sparse_cases import linear_fn, mna_matrix, pipe_network_matrix, random_matrix


def _op(solver, rows, cols, vals, n):
    """The solver's operator, linearized in one compiled call (eagerly each operation of a
    sparse plan compiles on its own)."""
    fn = linear_fn(rows, cols, n)
    return jax.jit(lambda v: solver.linearize(fn, jnp.zeros(n), v)[1])(jnp.asarray(vals))


BACKENDS = {  # (solver options, test matrix): each Krylov variant on one matrix, for time
    "host_lu-mna": (None, "mna"),
    "host_lu-random": (None, "random"),
    "klu-mna": ("klu", "mna"),
    "klu-random": ("klu", "random"),
    "gmres-ilu0-mna": (dict(method="gmres", preconditioner="ilu0"), "mna"),
    "bicgstab-ilu0-random": (dict(method="bicgstab", preconditioner="ilu0"), "random"),
    "gmres-jacobi-mna": (dict(method="gmres", preconditioner="jacobi"), "mna"),
    "bicgstab-none-random": (dict(method="bicgstab", preconditioner=None), "random"),
}


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_backends_match_dense_including_transpose_and_vmap(name):
    options, case = BACKENDS[name]
    if case == "random":
        rows, cols, vals, dense = random_matrix(40, 0.08, seed=11, dominance=3.0)
    else:
        rows, cols, vals, dense = mna_matrix(30, 2, seed=12)
    n = dense.shape[0]
    if options == "klu":
        needs_klu()
        solver = SparseHostLU(rows, cols, (n, n), factorization="klu")
    elif options is None:
        solver = SparseHostLU(rows, cols, (n, n))
    else:
        solver = SparseKrylov(rows, cols, (n, n), **options)
    op = _op(solver, rows, cols, vals, n)
    rng = np.random.default_rng(0)
    b = rng.normal(size=n)
    bs = rng.normal(size=(3, n))
    data = jnp.stack([op.data, 2.0 * op.data, 0.5 * op.data])

    @jax.jit
    def run(op, b, data, bs):
        return (solver.solve(op, b), solver.solve_transpose(op, b),
                jax.vmap(solver.solve)(SparseOperator(data), bs))

    x, y, xs = run(op, jnp.asarray(b), data, jnp.asarray(bs))
    np.testing.assert_allclose(x, np.linalg.solve(dense, b), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(y, np.linalg.solve(dense.T, b), rtol=1e-7, atol=1e-9)
    for k, s in enumerate([1.0, 2.0, 0.5]):
        np.testing.assert_allclose(xs[k], np.linalg.solve(s * dense, bs[k]), rtol=1e-7,
                                   atol=1e-9)


def needs_klu():
    if not _klu.available():
        pytest.skip("KLU (the optional klujax package) is not installed")


def _klu_solver(r, c, n):
    needs_klu()
    return SparseHostLU(r, c, (n, n), factorization="klu")


@pytest.mark.parametrize("make", [
    lambda r, c, n: SparseHostLU(r, c, (n, n)),
    _klu_solver,
    lambda r, c, n: SparseKrylov(r, c, (n, n), maxiter=20),
], ids=["host_lu", "klu", "krylov"])
def test_backends_flag_singular_systems_with_nan(make):
    a = np.array([[1.0, 2.0, 0.0], [2.0, 4.0, 0.0], [0.0, 1.0, 3.0]])
    rows, cols = np.nonzero(np.ones_like(a))
    solver = make(rows, cols, 3)
    op = _op(solver, rows, cols, a[rows, cols], 3)
    assert np.all(np.isnan(jax.jit(solver.solve)(op, jnp.ones(3))))


def test_ilu0_is_exact_when_the_multicolour_order_makes_no_fill():
    """A star (hub plus leaves, leaves first) has no fill: ILU(0) is the exact LU."""
    n = 30
    hub = n - 1
    rows = np.concatenate([np.arange(n), np.full(n - 1, hub), np.arange(n - 1)])
    cols = np.concatenate([np.arange(n), np.arange(n - 1), np.full(n - 1, hub)])
    rng = np.random.default_rng(3)
    vals = np.concatenate([rng.uniform(5, 6, n) * n, rng.normal(size=2 * (n - 1))])
    pattern = SparsityPattern(rows, cols, (n, n))
    order = np.lexsort((cols, rows))  # values in pattern order
    plan = build_plan(pattern, incomplete=True)
    assert plan.n_levels == 2
    dense = np.zeros((n, n))
    dense[rows, cols] = vals
    b = rng.normal(size=n)

    @jax.jit
    def solve(values, b):
        v0 = jnp.concatenate([values, jnp.zeros(1)])[plan.slot_src]
        return triangular_solve(plan, factor(plan, v0), b, False)

    np.testing.assert_allclose(solve(jnp.asarray(vals[order]), jnp.asarray(b)),
                               np.linalg.solve(dense, b), rtol=1e-10)


def test_ilu0_preconditioned_gmres_on_a_pipe_network():
    rows, cols, vals, dense = pipe_network_matrix(6, seed=13)
    n = dense.shape[0]
    solver = SparseKrylov(rows, cols, (n, n), preconditioner="ilu0", rtol=1e-11)
    op = _op(solver, rows, cols, vals, n)
    b = np.ones(n)
    np.testing.assert_allclose(jax.jit(solver.solve)(op, jnp.asarray(b)),
                               np.linalg.solve(dense, b), rtol=1e-7, atol=1e-9)


def test_auto_picks_level_lu_for_small_fill_and_falls_back_otherwise():
    rows, cols, vals, dense = mna_matrix(60, 2, seed=14)
    n = dense.shape[0]
    assert isinstance(SparseAuto(rows, cols, (n, n)).choice, SparseLU)
    small_budget = SparseAuto(rows, cols, (n, n), max_products=10)
    assert isinstance(small_budget.choice, SparseHostLU)
    batched = SparseAuto(rows, cols, (n, n), max_products=10, batch_size=1000)
    assert isinstance(batched.choice, SparseKrylov)
    op = _op(small_budget, rows, cols, vals, n)
    b = np.ones(n)
    np.testing.assert_allclose(small_budget.solve(op, jnp.asarray(b)),
                               np.linalg.solve(dense, b), rtol=1e-9)
    assert small_budget != batched and "SparseAuto" in repr(batched)
