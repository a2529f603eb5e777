"""`KLUSequence` (a host-stepped Newton solve's linear solves) and KLU's cached analysis."""

import numpy as np
import pytest

from solvers.linear import _host_lu, _klu
from solvers.linear._csc import csc_layout
from solvers.linear._sparsity import SparsityPattern

pytestmark = pytest.mark.skipif(not _klu.available(),
                                reason="KLU (the optional klujax package) is not installed")


def _sequence(rng, n, members):
    """Members of one pattern with diagonally dominant values, each near the last (as the
    Jacobians of successive Newton steps are)."""
    import scipy.sparse as sp
    base = sp.random(n, n, density=3.0 / n, random_state=int(rng.integers(1e9))) + sp.eye(n)
    rows, cols = base.nonzero()
    first = rng.uniform(-1.0, 1.0, rows.size) + np.where(rows == cols, 3.0, 0.0)
    values = first * (1 + 0.01 * rng.normal(size=(members, rows.size)))
    return SparsityPattern(rows, cols, (n, n)), values, rng.normal(size=(members, n))


def _dense(pattern, values):
    a = np.zeros(pattern.shape)
    a[pattern.rows, pattern.cols] = values
    return a


def _counted(monkeypatch) -> list:
    fresh, factor = [], _klu.KLUFactor
    monkeypatch.setattr(_klu, "KLUFactor", type("Counted", (factor,), {
        "__init__": lambda self, *a: (fresh.append(1), factor.__init__(self, *a))[1]}))
    return fresh


def test_sequence_refactors_and_agrees_with_fresh_factorizations(monkeypatch):
    pattern, values, b = _sequence(np.random.default_rng(1), 60, 6)
    fresh = _counted(monkeypatch)
    sequence = _host_lu.KLUSequence(pattern)
    xs = [sequence.solve(v, r) for v, r in zip(values, b)]
    assert len(fresh) == 1  # the later matrices reuse the first one's pivots
    for v, r, x in zip(values, b, xs):
        np.testing.assert_allclose(x, _host_lu.klu_batch_solve(pattern, False, v, r),
                                   rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(_dense(pattern, v) @ x, r, atol=1e-12)


def test_sequence_flags_a_singular_matrix_after_a_good_one_and_recovers(monkeypatch):
    pattern, values, b = _sequence(np.random.default_rng(2), 40, 4)
    values[1] = 0.0  # exactly singular
    values[2][pattern.rows == 3] = 0.0  # a zero row: singular as well
    fresh = _counted(monkeypatch)
    sequence = _host_lu.KLUSequence(pattern)
    xs = [sequence.solve(v, r) for v, r in zip(values, b)]
    assert np.isfinite(xs[0]).all() and np.isfinite(xs[3]).all()
    assert np.isnan(xs[1]).all() and np.isnan(xs[2]).all()
    np.testing.assert_allclose(_dense(pattern, values[3]) @ xs[3], b[3], atol=1e-12)
    assert len(fresh) == 4  # a rejected refactorization is factored afresh


def test_sequence_factors_afresh_where_the_old_pivots_do_not_suit(monkeypatch):
    rng = np.random.default_rng(3)
    pattern, values, b = _sequence(rng, 40, 2)
    diag = pattern.rows == pattern.cols
    values[1] = np.where(diag, 1e-14, values[1])  # tiny diagonal: the old pivots fail
    fresh = _counted(monkeypatch)
    sequence = _host_lu.KLUSequence(pattern)
    xs = [sequence.solve(v, r) for v, r in zip(values, b)]
    dense = _dense(pattern, values[1])
    if np.linalg.matrix_rank(dense) == 40:
        np.testing.assert_allclose(dense @ xs[1], b[1], atol=1e-9)
    assert len(fresh) == 2


def test_cached_analysis_gives_the_answers_of_a_fresh_one():
    pattern, values, b = _sequence(np.random.default_rng(4), 50, 3)
    layout = csc_layout(pattern)
    cached = _host_lu.klu_analysis(pattern)
    assert _klu.symbolic(pattern, layout.indptr, layout.indices, 50) is cached
    for v, r in zip(values, b):
        fresh = _klu._Symbolic(layout.indptr, layout.indices, 50)
        x_cached = _klu.KLUFactor(cached, layout.data(v)).solve(r)
        np.testing.assert_array_equal(x_cached, _klu.KLUFactor(fresh, layout.data(v)).solve(r))


def _case89():
    """case89pegase lowered and the default method's first stage (Newton on the host LU)."""
    from pathlib import Path

    import solvers
    from scenarios.powerflow import DEFAULT_METHOD, build_powerflow, read_case_json
    data = Path(__file__).parent / "data" / "acpf" / "case89pegase.json"
    system = solvers.System.build(build_powerflow(read_case_json(data), "flat").graph)
    return system, DEFAULT_METHOD.stages(system)[0]


def test_host_newton_factors_once_per_solve_and_repeats_itself(monkeypatch):
    from test_host_newton import host as host_newton
    system, newton = _case89()
    if newton.linear_solver.factorization != "klu":
        pytest.skip("the default method does not use KLU here")
    fresh = _counted(monkeypatch)
    first = host_newton(system, newton)
    assert bool(first.converged) and len(fresh) == 1 and int(first.iterations) > 2
    again = host_newton(system, newton)  # the pivots of one solve do not reach the next
    np.testing.assert_array_equal(first.x, again.x)
    assert len(fresh) == 2


def test_host_newton_reports_a_singular_jacobian(monkeypatch):
    import solvers
    from test_host_newton import host as host_newton
    system, newton = _case89()
    real = type(newton.linear_solver).host_sequence

    def failing_second(self):
        solve, calls = real(self), []

        def step(values, b):
            calls.append(1)
            return solve(values, b) if len(calls) < 2 else np.full_like(b, np.nan)
        return step
    monkeypatch.setattr(type(newton.linear_solver), "host_sequence", failing_second)
    out = host_newton(system, newton)
    assert int(out.result) == int(solvers.RESULTS.singular_jacobian)
    assert not bool(out.converged) and int(out.iterations) == 1 and np.isfinite(out.x).all()


def test_wrong_shapes_are_refused_before_klu_reads_them():
    pattern, values, b = _sequence(np.random.default_rng(7), 6, 1)
    sequence = _host_lu.KLUSequence(pattern)
    for bad_values, bad_b in ((values[0], b[0][:5]), (values[0][:-1], b[0]),
                              (np.append(values[0], 1.0), b[0]), (values, b)):
        with pytest.raises(ValueError, match="takes one matrix"):
            sequence.solve(bad_values, bad_b)
    x = sequence.solve(values[0], b[0])  # the sequence still works after the refusals
    np.testing.assert_allclose(_dense(pattern, values[0]) @ x, b[0], atol=1e-12)
    data = csc_layout(pattern).data(values[0])
    factor = _klu.KLUFactor(_host_lu.klu_analysis(pattern), data)
    with pytest.raises(ValueError, match=r"b must have shape \(6,\)"):
        factor.solve(b[0][:5])
    with pytest.raises(ValueError, match="needs .* CSC values"):
        factor.refactor(data[:-1])


def test_batch_members_sharing_a_matrix_are_not_refactored(monkeypatch):
    """Members whose matrix is the one their block's factorization holds (the first Newton
    step from a shared start, a padded batch's repeats) reuse it: one factorization per
    block, no refactorization, the answers of member-by-member solves."""
    pattern, values, b = _sequence(np.random.default_rng(8), 50, 12)
    values[:10] = values[0]
    values[11] = values[10]
    fresh = _counted(monkeypatch)
    refactors, real = [], _klu.KLUFactor.refactor
    monkeypatch.setattr(_klu.KLUFactor, "refactor",
                        lambda self, data: (refactors.append(self.holds(data)),
                                            real(self, data))[1])
    x = _host_lu.klu_batch_solve(pattern, False, values, b)
    assert len(fresh) == 2  # one per block of KLU_BLOCK = 8
    # members 1-9 share the matrix their block factored; 10 is refactored, 11 repeats 10
    assert refactors == [False, True]
    for i in range(12):
        np.testing.assert_allclose(x[i], _host_lu.klu_batch_solve(pattern, False, values[i],
                                                                  b[i]), rtol=1e-12)
