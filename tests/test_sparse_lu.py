"""SparseLU (level-scheduled, static pivots) against dense solves: random, circuit (MNA) and
pipe-network matrices, transposes, jit and vmap, supersets, singular detection, gradients;
the host LU (SuperLU) survives random and singular matrices."""

import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from solvers.linear._sparse import SparseLU, SparseOperator
from solvers.linear._sparse_plan import MAX_STAGES, build_plan
from solvers.linear._sparsity import SparsityError, SparsityPattern, compressed_index
from sparse_cases import linear_fn, mna_matrix, pipe_network_matrix, random_matrix

CASES = {
    "random": lambda: random_matrix(60, 0.05, seed=1),
    "random_dense_ish": lambda: random_matrix(25, 0.3, seed=2),
    "mna": lambda: mna_matrix(40, 3, seed=3),
    "mna_tree": lambda: mna_matrix(50, 1, seed=4, extra_edges=0),
    "pipes": lambda: pipe_network_matrix(5, seed=5),
}


def _linearized(solver, rows, cols, n, vals):
    """The solver's operator for a matrix, linearized in one compiled call (run eagerly, each
    operation of the plan compiles on its own: ten times the work of these tests)."""
    fn = linear_fn(rows, cols, n)
    return jax.jit(lambda v: solver.linearize(fn, jnp.zeros(n, v.dtype), v)[1])(vals)


def _setup(case, **options):
    rows, cols, vals, dense = CASES[case]()
    n = dense.shape[0]
    solver = SparseLU(rows, cols, (n, n), **options)
    return solver, _linearized(solver, rows, cols, n, jnp.asarray(vals)), dense


@pytest.mark.parametrize("case", sorted(CASES))
def test_solve_and_transpose_match_dense(case):
    solver, op, dense = _setup(case)
    b = np.random.default_rng(0).normal(size=dense.shape[0])
    np.testing.assert_allclose(solver.to_dense(op), dense, rtol=1e-14)
    x = jax.jit(solver.solve)(op, jnp.asarray(b))
    np.testing.assert_allclose(x, np.linalg.solve(dense, b), rtol=1e-9, atol=1e-11)
    y = jax.jit(solver.solve_transpose)(op, jnp.asarray(b))
    np.testing.assert_allclose(y, np.linalg.solve(dense.T, b), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(solver.matvec(op, jnp.asarray(b)), dense @ b, rtol=1e-12)
    np.testing.assert_allclose(solver.rmatvec(op, jnp.asarray(b)), dense.T @ b, rtol=1e-12)


@pytest.mark.parametrize("pivoting", ["pairs", "matching"])
def test_zero_diagonals_of_circuits_are_handled(pivoting):
    rows, cols, vals, dense = mna_matrix(30, 4, seed=7)
    assert np.sum(np.diag(dense) == 0) == 4
    n = dense.shape[0]
    solver = SparseLU(rows, cols, (n, n), pivoting=pivoting)
    op = _linearized(solver, rows, cols, n, jnp.asarray(vals))
    b = np.arange(n, dtype=float)
    np.testing.assert_allclose(jax.jit(solver.solve)(op, jnp.asarray(b)), np.linalg.solve(dense, b),
                               rtol=1e-9)


def test_pipe_loops_need_paired_pivots_not_a_matching():
    """A row matching puts +-1 incidence entries on the diagonal; around loops they cancel
    to an exact zero pivot. Pairing each head with a pipe grown from the fixed heads does
    not (the flow/head Jacobian of water networks)."""
    solver, op, dense = _setup("pipes")
    b = np.ones(dense.shape[0])
    np.testing.assert_allclose(solver.solve(op, jnp.asarray(b)), np.linalg.solve(dense, b),
                               rtol=1e-9)
    assert not solver.plan.structurally_singular


@pytest.mark.parametrize("case", ["mna", "pipes", "random"])
def test_vmap_over_matrices_and_rhs_with_jit(case):
    solver, op, dense = _setup(case)
    n = dense.shape[0]
    rng = np.random.default_rng(1)
    scales = rng.uniform(0.5, 2.0, size=(300, 1))
    data = jnp.asarray(scales) * op.data[None, :]  # each member: scale * A
    bs = rng.normal(size=(300, n))
    xs = jax.jit(jax.vmap(solver.solve))(SparseOperator(data), jnp.asarray(bs))
    expect = np.linalg.solve(dense, bs.T).T / scales
    np.testing.assert_allclose(xs, expect, rtol=1e-9, atol=1e-11)
    ys = jax.jit(jax.vmap(solver.solve_transpose, in_axes=(None, 0)))(op, jnp.asarray(bs))
    np.testing.assert_allclose(ys, np.linalg.solve(dense.T, bs.T).T, rtol=1e-9, atol=1e-11)


def test_nested_vmap():
    solver, op, dense = _setup("mna")
    n = dense.shape[0]
    s = jnp.asarray([[1.0, 2.0, 3.0], [0.5, 4.0, 8.0]])
    b = jnp.asarray(np.random.default_rng(2).normal(size=n))
    xs = jax.jit(jax.vmap(jax.vmap(lambda k: solver.solve(SparseOperator(k * op.data), b))))(s)
    base = np.linalg.solve(dense, np.asarray(b))
    np.testing.assert_allclose(xs, base[None, None, :] / np.asarray(s)[:, :, None], rtol=1e-9)


def test_superset_pattern_with_explicit_zeros():
    rows, cols, vals, dense = random_matrix(30, 0.08, seed=8)
    n = dense.shape[0]
    rng = np.random.default_rng(3)
    extra_r, extra_c = rng.integers(0, n, 40), rng.integers(0, n, 40)
    rows2 = np.concatenate([rows, extra_r])
    cols2 = np.concatenate([cols, extra_c])
    vals2 = np.concatenate([vals, np.zeros(40)])
    solver = SparseLU(rows2, cols2, (n, n))
    op = _linearized(solver, rows2, cols2, n, jnp.asarray(vals2))
    b = rng.normal(size=n)
    np.testing.assert_allclose(jax.jit(solver.solve)(op, jnp.asarray(b)), np.linalg.solve(dense, b),
                               rtol=1e-9)


def _solve_with(dense, b, **options):
    rows, cols = np.nonzero(np.ones_like(dense))
    n = dense.shape[0]
    solver = SparseLU(rows, cols, (n, n), **options)
    op = _linearized(solver, rows, cols, n, jnp.asarray(dense[rows, cols]))
    return np.asarray(jax.jit(solver.solve)(op, jnp.asarray(b)))


def test_singular_matrices_give_nan():
    a = np.array([[1.0, 2.0, 0.0], [2.0, 4.0, 0.0], [0.0, 1.0, 3.0]])
    assert np.all(np.isnan(_solve_with(a, np.ones(3))))
    assert np.all(np.isnan(_solve_with(np.zeros((3, 3)), np.ones(3))))
    ok = np.array([[4.0, 1.0, 0.0], [1.0, 4.0, 1.0], [0.0, 1.0, 4.0]])
    assert np.all(np.isfinite(_solve_with(ok, np.ones(3))))


def test_structurally_singular_pattern_gives_nan_not_an_error():
    rows, cols = np.array([0, 1, 2, 2]), np.array([0, 0, 1, 2])  # column 1 vs 2 rows: no match
    n = 3
    solver = SparseLU(rows, cols, (n, n))
    assert solver.plan.structurally_singular
    _, op = solver.linearize(linear_fn(rows, cols, n), jnp.zeros(n), jnp.ones(4))
    assert np.all(np.isnan(solver.solve(op, jnp.ones(n))))


def test_singular_member_of_a_batch_is_flagged_alone():
    solver, op, dense = _setup("mna")
    data = jnp.stack([op.data, 0.0 * op.data, 2.0 * op.data])
    b = jnp.ones(dense.shape[0])
    xs = np.asarray(jax.jit(jax.vmap(solver.solve, in_axes=(0, None)))(SparseOperator(data), b))
    assert np.all(np.isfinite(xs[[0, 2]])) and np.all(np.isnan(xs[1]))


def test_gradients_flow_to_the_matrix_and_rhs():
    solver, op, dense = _setup("mna")
    n, p = dense.shape[0], solver.pattern
    rng = np.random.default_rng(4)
    b, w = jnp.asarray(rng.normal(size=n)), jnp.asarray(rng.normal(size=n))
    idx = jnp.asarray(compressed_index(p))

    def sparse_loss(values, b):
        data = jnp.zeros(op.data.shape).at[idx].set(values) if solver.compressed else values
        return jnp.dot(w, solver.solve(SparseOperator(data), b))

    def dense_loss(values, b):
        return jnp.dot(w, jnp.linalg.solve(jnp.zeros(p.shape).at[p.rows, p.cols].set(values), b))

    values = solver.values(op)
    got = jax.jit(jax.grad(sparse_loss, argnums=(0, 1)))(values, b)
    want = jax.grad(dense_loss, argnums=(0, 1))(values, b)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-8, atol=1e-12)
    dirs = (values * jnp.asarray(rng.normal(size=values.size)), w)  # forward mode too
    np.testing.assert_allclose(jax.jit(lambda v, b: jax.jvp(sparse_loss, (v, b), dirs)[1])(
                                   values, b),
                               jax.jvp(dense_loss, (values, b), dirs)[1], rtol=1e-8)


def test_plan_is_shallow_for_ladders_and_bounded_in_stages():
    n = 2001
    main = np.arange(n)
    rows = np.concatenate([main, main[1:], main[:-1]])
    cols = np.concatenate([main, main[:-1], main[1:]])
    plan = build_plan(SparsityPattern(rows, cols, (n, n)))
    assert plan.n_levels <= 3 * np.log2(n)  # nested dissection of a path
    assert plan.n_products <= 6 * n  # little fill
    for stages in (plan.factor_stages, plan.down_stages, plan.up_stages):
        assert len(stages) <= MAX_STAGES  # the traced program does not grow with n


def test_non_square_pattern_is_refused_with_advice():
    with pytest.raises(SparsityError, match="square"):
        SparseLU([0, 1], [0, 1], (3, 2))
    with pytest.raises(ValueError, match="pivoting"):
        SparseLU([0], [0], (1, 1), pivoting="partial")


def test_solvers_hash_by_pattern_and_options():
    a = SparseLU([0, 1], [0, 1], (2, 2))
    assert a == SparseLU(np.array([1, 0]), np.array([1, 0]), (2, 2)) and hash(a) == hash(
        SparseLU([0, 1], [0, 1], (2, 2)))
    assert a != SparseLU([0, 1], [0, 1], (2, 2), refine=2)
    with pytest.raises(AttributeError, match="immutable"):
        a.refine = 3


def test_float32_solve():
    rows, cols, vals, dense = mna_matrix(20, 2, seed=9)
    n = dense.shape[0]
    solver = SparseLU(rows, cols, (n, n))
    op = _linearized(solver, rows, cols, n, jnp.asarray(vals, jnp.float32))
    b = np.ones(n, np.float32)
    x = jax.jit(solver.solve)(op, jnp.asarray(b))
    assert x.dtype == jnp.float32
    np.testing.assert_allclose(x, np.linalg.solve(dense, b), rtol=2e-4)


# SuperLU's complete LU corrupts memory on exactly singular matrices (and with non-default
# supernode sizes), which crashes the interpreter, possibly much later and elsewhere (in an
# XLA compile); before it does, BLAS reports the broken dimensions ("illegal value"). Factor
# random matrices, some singular, in a child process: with ``splu`` seed 1 prints 17 reports.
_FACTOR_RANDOM = """
import sys
import numpy as np, scipy.sparse as sp
from solvers.linear._host_lu import factor, superlu
rng = np.random.default_rng(int(sys.argv[1]))
for trial in range(150):
    n = int(rng.integers(1, 300))
    a = sp.random(n, n, density=min(1.0, rng.uniform(1.0, 8.0) / n), random_state=rng.integers(1e9))
    a = a + a.T * (rng.random() < 0.5)
    if rng.random() < 0.8:
        a = a + sp.diags(rng.uniform(0.1, 2, n) * (rng.random(n) < 0.95))
    for spec in ("COLAMD", "MMD_AT_PLUS_A", "NATURAL"):
        for thresh in (0.0, 0.1, 1.0):
            try:
                factor(sp.csc_matrix(a), ("fuzz", trial), spec, thresh).solve(np.ones(n))
                superlu(a, spec, thresh).solve(np.ones(n))
            except RuntimeError:
                pass  # exactly singular
"""


def test_superlu_solves_and_refuses_bad_input_with_advice():
    import scipy.sparse as sp
    from solvers import superlu

    rows, cols, vals, dense = mna_matrix(20, 2, seed=3)
    matrix = sp.csr_matrix((vals, (rows, cols)), shape=dense.shape)
    before = matrix.copy()
    b = np.arange(dense.shape[0], dtype=np.float64)
    np.testing.assert_allclose(superlu(matrix).solve(b), np.linalg.solve(dense, b), rtol=1e-10)
    assert (matrix != before).nnz == 0  # the user's matrix is left alone
    with pytest.raises(RuntimeError, match="singular"):
        superlu(sp.csc_matrix(np.array([[2.0, -2.0], [-2.0, 2.0]])))
    with pytest.raises(ValueError, match="square SciPy sparse matrix.*csc_matrix"):
        superlu(dense)
    with pytest.raises(ValueError, match="square"):
        superlu(sp.csc_matrix((3, 2)))
    with pytest.raises(ValueError, match="unknown permc_spec 'ND'; choose one of COLAMD"):
        superlu(matrix, permc_spec="ND")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        superlu(matrix, diag_pivot_thresh=2.0)


@pytest.mark.parametrize("seed", [1, 2])
def test_host_lu_survives_random_and_singular_matrices(seed):
    run = subprocess.run([sys.executable, "-c", _FACTOR_RANDOM, str(seed)], capture_output=True,
                         text=True, timeout=300, cwd=Path(__file__).resolve().parents[1])
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])
    assert "illegal value" not in run.stdout + run.stderr, (run.stdout + run.stderr)[-2000:]


def test_klu_agrees_with_superlu_on_random_and_singular_matrices():
    """KLU (where installed) solves what SuperLU solves, in both orientations, and gives NaN
    (never a crash or a garbage answer) for an exactly singular matrix."""
    import scipy.sparse as sp
    from solvers.linear import _klu
    from solvers.linear._host_lu import klu_batch_solve
    if not _klu.available():
        pytest.skip("KLU (the optional klujax package) is not installed")
    rng = np.random.default_rng(5)
    singular = 0
    for trial in range(120):
        n = int(rng.integers(1, 120))
        a = sp.random(n, n, density=min(1.0, rng.uniform(1.0, 6.0) / n),
                      random_state=int(rng.integers(1e9)))
        if rng.random() < 0.8:
            a = a + sp.diags(rng.uniform(0.1, 2, n) * (rng.random(n) < 0.95))
        dense = a.toarray()
        rows, cols = np.nonzero(np.ones_like(dense) * (rng.random((n, n)) < 0.02) + (dense != 0))
        pattern = SparsityPattern(rows, cols, (n, n))  # with explicit zeros
        values = dense[pattern.rows, pattern.cols]
        b = rng.normal(size=n)
        for transpose in (False, True):
            x = klu_batch_solve(pattern, transpose, values, b)  # one member
            matrix = dense.T if transpose else dense
            if np.linalg.matrix_rank(dense) < n:
                singular += 1
                assert np.all(np.isnan(x)) or np.allclose(matrix @ x, b, atol=1e-6)
            elif np.linalg.cond(dense) < 1e8:
                np.testing.assert_allclose(matrix @ x, b, atol=1e-8 * (1 + np.abs(b).max()))
    assert singular > 10  # the fuzz reached singular matrices


def _random_batch(rng, n, members):
    """Members of one pattern (a diagonal, a cyclic shift and random entries) with
    diagonally dominant values."""
    import scipy.sparse as sp
    shift = sp.csr_matrix((np.ones(n), (np.arange(n), (np.arange(n) + 1) % n)), shape=(n, n))
    base = sp.random(n, n, density=3.0 / n, random_state=int(rng.integers(1e9))) \
        + sp.eye(n) + shift
    rows, cols = base.nonzero()
    values = rng.uniform(-1.0, 1.0, (members, rows.size))
    values[:, rows == cols] += rng.uniform(1.0, 3.0, (members, 1))
    return SparsityPattern(rows, cols, (n, n)), values, rng.normal(size=(members, n))


def test_klu_batch_refactors_and_equals_member_by_member_solves(monkeypatch):
    """A batch shares pivot orders within blocks (refactorizations), falls back to a fresh
    factorization where the shared pivots give a poor solution, flags a singular member
    alone, and gives the same bits whatever the number of threads."""
    from solvers.linear import _host_lu, _klu
    if not _klu.available():
        pytest.skip("KLU (the optional klujax package) is not installed")
    rng = np.random.default_rng(3)
    pattern, values, b = _random_batch(rng, 40, 19)
    values[5] = 0.0  # exactly singular member
    diag = pattern.rows == pattern.cols
    shift = pattern.cols == (pattern.rows + 1) % 40
    values[9] = np.where(diag, 1e-14, np.where(shift, 1.0, 1e-3 * values[9]))  # diagonal
    # pivots are useless for this (well-conditioned) member
    fresh, factor = [], _klu.KLUFactor
    monkeypatch.setattr(_klu, "KLUFactor", type("Counted", (factor,), {
        "__init__": lambda self, *a: (fresh.append(1), factor.__init__(self, *a))[1]}))
    results = {}
    for cores in (1, 2):
        monkeypatch.setattr(_host_lu, "_cores", lambda: cores)
        for transpose in (False, True):
            fresh.clear()
            results[cores, transpose] = _host_lu.klu_batch_solve(pattern, transpose, values, b)
            # blocks 0-7, 8-15, 16-18 start fresh (3); so do the singular member 5 and the
            # one after it (2) and member 9 (the block's diagonal pivots do not suit it, and
            # refinement cannot mend a growth of 1e14): 6 of 19
            assert len(fresh) == 6
    for transpose in (False, True):
        np.testing.assert_array_equal(results[1, transpose], results[2, transpose])
        x = results[1, transpose]
        assert np.all(np.isnan(x[5])) and np.isfinite(np.delete(x, 5, axis=0)).all()
        for i in set(range(19)) - {5}:
            dense = np.zeros((40, 40))
            dense[pattern.rows, pattern.cols] = values[i]
            matrix = dense.T if transpose else dense
            np.testing.assert_allclose(matrix @ x[i], b[i], atol=1e-9)


def test_klu_batch_factors_shared_values_once():
    from solvers.linear import _host_lu, _klu
    if not _klu.available():
        pytest.skip("KLU (the optional klujax package) is not installed")
    rng = np.random.default_rng(4)
    pattern, values, b = _random_batch(rng, 30, 6)
    x = _host_lu.klu_batch_solve(pattern, False, values[:1], b)  # one matrix, six vectors
    for i in range(6):
        one = _host_lu.klu_batch_solve(pattern, False, values[0], b[i])
        np.testing.assert_array_equal(x[i], one)


def test_klu_option_is_checked_and_explained(monkeypatch):
    from solvers import SparseHostLU
    from solvers.linear import _klu
    with pytest.raises(ValueError, match="factorization must be 'superlu' or 'klu', got 'umf'"):
        SparseHostLU(factorization="umf")
    monkeypatch.setattr(_klu, "available", lambda: False)
    with pytest.raises(ValueError, match=r"pip install 'simgraph\[klu\]'"):
        SparseHostLU(factorization="klu")
    monkeypatch.setattr(_klu, "available", lambda: True)
    with pytest.raises(ValueError, match="schur=True factors its Schur complement with SuperLU"):
        SparseHostLU(factorization="klu", schur=True)


def test_without_klujax_the_host_lu_is_superlu():
    """Where klujax cannot be loaded, KLU is unavailable and the chooser keeps SuperLU."""
    code = ("import sys; sys.modules['klujax_cpp'] = None\n"
            "import numpy as np\n"
            "from solvers.linear import _klu\n"
            "from solvers.linear._auto import host_solver\n"
            "n = 50; i = np.arange(n)\n"
            "rows = np.r_[i, i[:-1], i[1:]]; cols = np.r_[i, i[1:], i[:-1]]\n"
            "solver = host_solver(rows, cols, (n, n))\n"
            "print(_klu.available(), solver.factorization, solver.permc_spec)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=Path(__file__).resolve().parents[1])
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["False", "superlu", "MMD_AT_PLUS_A"]
