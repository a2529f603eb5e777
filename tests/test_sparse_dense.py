"""`SparseDenseLU` (a sparse Jacobian factored densely, for accelerators) and the choice of
it on an accelerator, where SparseLU would take too many products and GMRES stalls. The
platform is mocked: no GPU is needed."""

import dataclasses
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import solvers
from scenarios.circuits import build_circuit, grid_netlist
from scenarios.powerflow import build_powerflow, read_matpower
from solvers import AutoLinearSolver, SparseDenseLU, SparseHostLU, SparseKrylov, SparsityPattern
from solvers.linear import _auto

DATA = Path(__file__).parent / "data"


def _problem(n=30, seed=0):
    rng = np.random.default_rng(seed)
    m = np.where(rng.random((n, n)) < 0.1, rng.normal(size=(n, n)), 0.0)
    m[np.arange(n), np.arange(n)] += 0.5  # nonsymmetric, needs pivoting in places
    m[0, 0] = 0.0  # J[0, 0] = 0.3 x0^2 only
    rows, cols = np.nonzero(m + np.eye(n))
    pattern = SparsityPattern(rows, cols, (n, n))
    fn = lambda x, p: jnp.asarray(m) @ x + 0.1 * x ** 3 - p  # noqa: E731
    return m, pattern, fn, rng.normal(size=n), rng.normal(size=n)


def test_solves_match_numpy_forward_transposed_and_factored():
    m, pattern, fn, x, p = _problem()
    ls = SparseDenseLU().bind(pattern)
    f, op = ls.linearize(fn, jnp.asarray(x), jnp.asarray(p))
    jac = m + np.diag(0.3 * x ** 2)
    np.testing.assert_allclose(ls.to_dense(op), jac, atol=1e-12)
    sol = ls.solve_with_result(op, f)
    assert int(sol.result) == int(solvers.RESULTS.successful)
    np.testing.assert_allclose(sol.value, np.linalg.solve(jac, f), rtol=1e-9)
    np.testing.assert_allclose(ls.solve_transpose(op, f), np.linalg.solve(jac.T, f), rtol=1e-9)
    fac = ls.factorize(op)
    np.testing.assert_allclose(ls.solve_factored(fac, f).value, np.linalg.solve(jac, f),
                               rtol=1e-9)


def test_vmapped_and_singular_members_are_flagged():
    m, pattern, fn, x, p = _problem()
    ls = SparseDenseLU(pattern)
    singular = m.copy()
    singular[:, 3] = 0.0  # a zero column of J where the pattern has entries
    fns = {"regular": fn, "singular": lambda x, p: jnp.asarray(singular) @ x - p}

    def one(fn, x):
        f, op = ls.linearize(fn, x, jnp.asarray(p))
        return ls.solve_with_result(op, f)

    xs = jnp.stack([jnp.asarray(x), 2.0 * jnp.asarray(x)])
    sols = jax.vmap(lambda x: one(fns["regular"], x))(xs)
    assert np.all(np.asarray(sols.result) == int(solvers.RESULTS.successful))
    for i in range(2):
        jac = m + np.diag(0.3 * np.asarray(xs[i]) ** 2)
        f = np.asarray(fn(xs[i], jnp.asarray(p)))
        np.testing.assert_allclose(sols.value[i], np.linalg.solve(jac, f), rtol=1e-9)
    bad = one(fns["singular"], jnp.asarray(x))
    assert int(bad.result) == int(solvers.RESULTS.singular_jacobian)
    assert not np.all(np.isfinite(np.asarray(bad.value)))


def test_newton_with_it_solves_a_power_flow_like_the_default():
    model = build_powerflow(read_matpower(DATA / "acpf" / "case30.m"))
    system = solvers.System.build(model.graph)
    dense = solvers.solve(system, solvers.Newton(linear_solver=SparseDenseLU(), atol=1e-10))
    default = solvers.solve(system, solvers.default_method(system, atol=1e-10))
    assert bool(dense.converged)
    np.testing.assert_allclose(dense.x, default.x, atol=1e-9)


@pytest.mark.parametrize("platform", ["gpu", "tpu"])
def test_accelerator_takes_dense_lu_where_sparse_lu_is_over_budget(monkeypatch, platform):
    """Power-flow Jacobians are over SparseLU's budget, and GMRES stalls on them (139 s on
    case_ACTIVSg2000): on an accelerator the dense LU takes them while they fit."""
    system = solvers.System.build(build_circuit(grid_netlist(12)))
    pattern = system.sparsity_pattern()
    over = AutoLinearSolver(max_products=10.0, band_ratio=0.0)
    monkeypatch.setattr(jax, "default_backend", lambda: platform)
    chosen = over.select(pattern)
    assert isinstance(chosen, SparseDenseLU)
    monkeypatch.setattr(_auto, "_device_memory", lambda: 1000)  # too little memory
    assert isinstance(AutoLinearSolver(max_products=11.0, band_ratio=0.0).select(pattern),
                      SparseKrylov)
    monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
    assert isinstance(over.select(pattern), SparseHostLU)
    monkeypatch.undo()
    sol = solvers.solve(system, solvers.Newton(linear_solver=chosen))
    ref = solvers.solve(system)
    assert bool(sol.converged)
    np.testing.assert_allclose(sol.x, ref.x, atol=1e-9)


def test_factored_solves_refuse_what_does_not_fit():
    m, pattern, fn, x, p = _problem()
    ls = SparseDenseLU(pattern)
    _, op = ls.linearize(fn, jnp.asarray(x), jnp.asarray(p))
    fac = ls.factorize(op)
    with pytest.raises(solvers.SparsityError, match=r"expected b of shape \(30,\)"):
        ls.solve_factored(fac, jnp.ones(31))
    with pytest.raises(TypeError, match="factors that factorize"):
        ls.solve_factored(op, jnp.ones(30))
    with pytest.raises(solvers.SparsityError, match="square"):
        SparseDenseLU(SparsityPattern([0, 1], [0, 2], (2, 3)))


def test_dense_budget_grows_with_batch_and_size(monkeypatch):
    monkeypatch.setattr(_auto, "_device_memory", lambda: _auto.DEVICE_MEMORY_DEFAULT)
    assert _auto.dense_fits_device(3607, 1)
    assert not _auto.dense_fits_device(3607, 10_000)
    assert not _auto.dense_fits_device(100_000, 1)


def test_a_transient_steps_with_it_like_with_the_dense_lu():
    """The transient's chord Newton keeps `factorize`'s LU within a step."""
    from scenarios.circuits import integrator_for, read_netlist

    netlist = read_netlist(DATA / "transient" / "rc_ladder_50.cir")
    tran = netlist.analyses[0]
    system = solvers.System.build(build_circuit(netlist, transient=tran))
    grid = np.asarray(tran.times())
    runs = {}
    for name, ls in (("dense", SparseDenseLU()), ("sparse", solvers.SparseLU())):
        cfg = dataclasses.replace(integrator_for(netlist, system, tran), linear_solver=ls)
        runs[name] = solvers.simulate(system, grid, t0=0.0, integrator=cfg)
    assert bool(runs["dense"].converged)
    np.testing.assert_allclose(np.asarray(runs["dense"].x), np.asarray(runs["sparse"].x),
                               atol=1e-9)
