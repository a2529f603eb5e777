"""Linear solvers as configuration: bound to the system's pattern by the solve, one chooser
(`AutoLinearSolver`), and linear solves that say why they failed."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import solvers
from solvers.linear import _auto
from solvers import (RESULTS, AutoLinearSolver, BandedLU, SparseHostLU, SparseKrylov, SparseLU,
                     SparsityError, SparsityPattern)
from sparse_cases import linear_fn, mna_matrix
from system_models import resistor_chain

B = jnp.array([1.0, 2.0])
#: Well conditioned, but SparseLU's static diagonal pivot 1e-13 breaks down (growth 1e13).
STATIC_BREAKDOWN = np.array([[1e-13, 1.0], [1.0, 1.0]])
SINGULAR = np.array([[1.0, 1.0], [1.0, 1.0]])
FULL = SparsityPattern.from_dense(np.ones((2, 2)))


def affine(x, a):
    return a @ x - B


def test_newton_takes_an_unbound_sparse_lu_and_the_solve_binds_it_to_the_graph():
    circuit = resistor_chain(150)  # above the dense limit: a real sparse system
    sol = solvers.solve(circuit, solvers.Newton(linear_solver=SparseLU()))
    ref = solvers.solve(circuit, solvers.Newton(linear_solver=solvers.DenseLU()))
    assert bool(sol.converged)
    np.testing.assert_allclose(sol.x, ref.x, rtol=1e-10, atol=1e-12)
    batch = solvers.solve_batch(circuit, {"CurrentSource.i": jnp.array([1.0, 2.0])},
                                solvers.Newton(linear_solver=BandedLU()))
    assert bool(batch.converged.all())
    np.testing.assert_allclose(batch.x[1], 2 * batch.x[0], rtol=1e-10, atol=1e-12)


def test_binding_gives_the_solver_built_with_the_pattern():
    rows, cols, _, dense = mna_matrix(12, 2, seed=3)
    n = dense.shape[0]
    pattern = SparsityPattern(rows, cols, (n, n))
    for config, built in [(SparseLU(refine=2), SparseLU(pattern, refine=2)),
                          (SparseHostLU(permc_spec="MMD_AT_PLUS_A"),
                           SparseHostLU(pattern, permc_spec="MMD_AT_PLUS_A")),
                          (SparseKrylov(rtol=1e-9), SparseKrylov(pattern, rtol=1e-9)),
                          (BandedLU(), BandedLU(pattern))]:
        assert config.needs_sparsity and not built.needs_sparsity
        bound = config.bind(pattern)
        assert bound == built and hash(bound) == hash(built) and bound != config
        assert bound.bind(FULL) is bound  # a bound solver keeps its pattern
        with pytest.raises(SparsityError, match="sparsity="):
            config.linearize(linear_fn(rows, cols, n), jnp.zeros(n), jnp.ones(len(rows)))
    with pytest.raises(SparsityError, match="square"):
        SparseLU().bind(SparsityPattern([0, 1], [0, 1], (3, 2)))


def test_flat_solves_take_the_pattern_or_explain_what_is_missing():
    newton = solvers.Newton(linear_solver=SparseLU())
    with pytest.raises(SparsityError, match="sparsity=solvers.SparsityPattern"):
        solvers.solve_flat(affine, jnp.zeros(2), jnp.eye(2), solver=newton)
    sol = solvers.solve_flat(affine, jnp.zeros(2), 2 * jnp.eye(2), solver=newton,
                             sparsity=FULL)
    np.testing.assert_allclose(sol.x, B / 2)
    sols = solvers.solve_flat_batch(affine, jnp.zeros(2), jnp.stack([jnp.eye(2)] * 3),
                                    solver=solvers.Default(linear_solver=SparseLU()),
                                    sparsity=FULL)
    np.testing.assert_allclose(sols.x, np.broadcast_to(B, (3, 2)))


@pytest.mark.parametrize("matrix, expected", [
    (STATIC_BREAKDOWN, RESULTS.linear_solve_failed), (SINGULAR, RESULTS.singular_jacobian)])
def test_a_static_pivot_breakdown_is_not_reported_as_singular(matrix, expected):
    solver = SparseLU(FULL, refine=0)
    linear = jax.jit(lambda a: solver.solve_with_result(  # one compile, not one per operation
        solver.linearize(affine, jnp.zeros(2), a)[1], B))(jnp.asarray(matrix))
    assert int(linear.result) == expected and not np.isfinite(linear.value).any()
    newton = solvers.Newton(linear_solver=SparseLU(refine=0))
    sol = solvers.solve_flat(affine, jnp.zeros(2), jnp.asarray(matrix), solver=newton,
                             sparsity=FULL)
    assert int(sol.result) == expected


def test_result_codes_survive_vmap_and_the_fine_case_succeeds():
    solver = SparseLU(FULL, refine=0)
    mats = jnp.asarray(np.stack([STATIC_BREAKDOWN, SINGULAR, np.eye(2)]))

    def one(a):
        _, op = solver.linearize(affine, jnp.zeros(2), a)
        return solver.solve_with_result(op, B)

    linear = jax.jit(jax.vmap(one))(mats)
    assert linear.result.tolist() == [RESULTS.linear_solve_failed, RESULTS.singular_jacobian,
                                      RESULTS.successful]
    np.testing.assert_allclose(linear.value[2], B)
    dense = solvers.DenseLU()
    _, op = dense.linearize(affine, jnp.zeros(2), jnp.asarray(SINGULAR))
    assert int(dense.solve_with_result(op, B).result) == RESULTS.singular_jacobian


def test_a_krylov_solve_that_does_not_converge_is_a_failed_linear_solve():
    solver = SparseKrylov(FULL, preconditioner=None, maxiter=1, restart=1, rtol=1e-14)
    a = jnp.array([[1.0, 3.0], [-2.0, 1.0]])
    _, op = solver.linearize(affine, jnp.zeros(2), a)
    assert int(solver.solve_with_result(op, B).result) == RESULTS.linear_solve_failed


def test_the_chooser_picks_by_size_pattern_batch_and_platform(monkeypatch):
    chain = solvers.System.build(resistor_chain(150))
    pattern = chain.sparsity_pattern()
    assert isinstance(AutoLinearSolver().select(FULL), solvers.DenseLU)
    assert isinstance(AutoLinearSolver().bind(None), solvers.DenseLU)
    assert isinstance(AutoLinearSolver().select(pattern), SparseHostLU)  # one CPU solve
    assert isinstance(AutoLinearSolver(batch_size=1000).select(pattern), BandedLU)  # a chain
    assert isinstance(AutoLinearSolver(batch_size=1000, band_ratio=0).select(pattern), SparseLU)
    assert solvers.default_method(chain).linear_solver == AutoLinearSolver().select(pattern)
    # on an accelerator no host callback: the in-JAX LU, even for one solve
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert isinstance(AutoLinearSolver().select(pattern), BandedLU)
    assert isinstance(AutoLinearSolver(band_ratio=0).select(pattern), SparseLU)
    small = AutoLinearSolver(max_products=1, band_ratio=0)
    assert isinstance(small.select(pattern), solvers.SparseDenseLU)  # fits the device
    monkeypatch.setattr(_auto, "_device_memory", lambda: 10 ** 5)
    small = AutoLinearSolver(max_products=2, band_ratio=0)
    assert isinstance(small.select(pattern), SparseKrylov)  # does not fit: matrix-free


def test_an_auto_linear_solver_in_a_method_becomes_its_choice():
    circuit = resistor_chain(150)
    sol = solvers.solve(circuit, solvers.Newton(linear_solver=AutoLinearSolver()))
    assert bool(sol.converged)
    flat = solvers.solve_flat(affine, jnp.zeros(2), 2 * jnp.eye(2),
                              solver=solvers.Newton(linear_solver=AutoLinearSolver()))
    np.testing.assert_allclose(flat.x, B / 2)
    with pytest.raises(ValueError, match="band_ratio"):
        AutoLinearSolver(band_ratio=-1.0)
