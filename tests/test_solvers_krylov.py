"""Matrix-free GMRES / BiCGStab: a stalled Krylov solve is a failed linear solve
(``linear_solve_failed``, NaN), never a zero Newton step that passes the step test, nor a
zero implicit derivative; bad configuration is refused when the solver is built."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import solvers
from solvers import RESULTS

N = 40  # above GMRES' default restart (30): restarted GMRES stalls on an N-cycle
E0 = jnp.zeros(N).at[0].set(1.0)
FAILED = int(RESULTS.linear_solve_failed)


def ring(x, b):
    """``x_{i-1} = b_i`` around a ring: J is a cyclic shift (orthogonal, cond 1)."""
    return jnp.roll(x, 1) - b


def rotation(x, p):
    """J is a 90-degree rotation: every GMRES(1) cycle makes no progress."""
    return jnp.stack([x[1] - 1.0, -x[0] + 2.0])


def test_stalled_gmres_fails_the_newton_step_instead_of_claiming_a_root():
    sol = solvers.solve_flat(ring, jnp.zeros(N), E0,
                             solver=solvers.Newton(linear_solver=solvers.GMRES()))
    assert int(sol.result) == FAILED and not bool(sol.converged)
    assert float(sol.residual_norm) == 1.0  # still at the start, and says so
    full = solvers.solve_flat(ring, jnp.zeros(N), E0,
                              solver=solvers.Newton(linear_solver=solvers.GMRES(restart=N)))
    assert int(full.result) == 0
    np.testing.assert_allclose(full.x, jnp.roll(E0, -1), atol=1e-12)


def test_gmres_restart_one_on_a_rotation_fails_whatever_the_number_of_restarts():
    for ls in (solvers.GMRES(restart=1), solvers.GMRES(restart=1, max_iters=1000)):
        sol = solvers.solve_flat(rotation, jnp.array([5.0, 7.0]), None,
                                 solver=solvers.Newton(linear_solver=ls))
        assert int(sol.result) == FAILED and not bool(sol.converged)
        np.testing.assert_array_equal(sol.x, [5.0, 7.0])


def test_bicgstab_breakdown_is_a_failed_linear_solve_not_a_singular_jacobian():
    # J is orthogonal (far from singular); BiCGStab breaks down on it (r0 . J r0 = 0)
    sol = solvers.solve_flat(rotation, jnp.array([5.0, 7.0]), None,
                             solver=solvers.Newton(linear_solver=solvers.BiCGStab()))
    assert int(sol.result) == FAILED and not bool(sol.converged)


def test_batch_members_fail_or_converge_on_their_own():
    # member 0: F(x0) = -1 is an eigenvector of the shift (one GMRES step); member 1 stalls
    b = jnp.stack([jnp.ones(N), E0])
    sol = solvers.solve_flat_batch(ring, jnp.zeros(N), b,
                                   solver=solvers.Newton(linear_solver=solvers.GMRES()))
    np.testing.assert_array_equal(sol.result, [0, FAILED])
    np.testing.assert_array_equal(sol.converged, [True, False])
    np.testing.assert_allclose(sol.x[0], 1.0, atol=1e-12)  # roll(b, -1)


def test_trust_region_with_a_stalled_krylov_step_does_not_stop_at_the_start():
    # the Newton step is NaN, so the dogleg takes gradient steps (exact here: J^T J = I)
    sol = solvers.solve_flat(rotation, jnp.array([5.0, 7.0]), None,
                             solver=solvers.TrustRegion(linear_solver=solvers.GMRES(restart=1)))
    assert bool(sol.converged)
    np.testing.assert_allclose(sol.x, [2.0, 1.0], atol=1e-10)


def test_trust_region_names_a_failed_krylov_solve_as_newton_does():
    # x^2 + 1 from 0: J = 0 and no gradient, so no dogleg step exists. The Krylov solve's
    # own code is the failure (TrustRegion said singular_jacobian whatever the solver said).
    def no_root(x, p):
        return x * x + 1.0

    for ls, want in ((solvers.GMRES(), RESULTS.linear_solve_failed),
                     (solvers.DenseLU(), RESULTS.singular_jacobian)):
        codes = {RESULTS(int(solvers.solve_flat(no_root, jnp.zeros(1), None,
                                                solver=method(linear_solver=ls)).result))
                 for method in (solvers.Newton, solvers.TrustRegion)}
        assert codes == {want}


def test_linear_solves_give_nan_and_a_code_when_stalled():
    ls = solvers.GMRES(restart=1)
    _, op = ls.linearize(rotation, jnp.array([5.0, 7.0]), None)
    b = jnp.array([1.0, 0.0])
    out = ls.solve_with_result(op, b)
    assert int(out.result) == FAILED and np.all(np.isnan(out.value))
    assert np.all(np.isnan(ls.solve(op, b))) and np.all(np.isnan(ls.solve_transpose(op, b)))
    for good in (solvers.GMRES(), solvers.BiCGStab()):  # 2 x 2, restart 30 -> 2: exact
        _, op = good.linearize(lambda x, p: jnp.stack([3 * x[0] + x[1], x[1]]), b, None)
        out = good.solve_with_result(op, b)
        assert int(out.result) == 0
        np.testing.assert_allclose(out.value, [1 / 3, 0.0], atol=1e-12)


def test_a_krylov_step_that_makes_no_progress_fails_whatever_its_atol():
    # A Krylov atol above the method's: once |F| is below it the solve returns no step, and
    # Newton could never reach its own atol; refused when made.
    with pytest.raises(ValueError, match=r"GMRES\(atol=10\) is looser than Newton\(atol=1e-10\)"):
        solvers.Newton(linear_solver=solvers.GMRES(atol=10.0))
    # |b| = 1 <= atol: GMRES stops at x = 0 at once, which is no solve
    loose = solvers.GMRES(atol=10.0)
    _, op = loose.linearize(lambda x, p: x ** 2 - 2.0, jnp.ones(1), None)
    out = loose.solve_with_result(op, jnp.ones(1))
    assert int(out.result) == FAILED and bool(jnp.all(jnp.isnan(out.value)))


def bratu(x, p):
    h = 1.0 / (x.shape[0] + 1)
    padded = jnp.concatenate([jnp.zeros(1, x.dtype), x, jnp.zeros(1, x.dtype)])
    return (padded[:-2] - 2.0 * x + padded[2:]) / h ** 2 + p * jnp.exp(x)


@pytest.mark.parametrize("ls", [solvers.GMRES(), solvers.BiCGStab()],
                         ids=lambda s: type(s).__name__)
def test_float32_solves_are_judged_at_float32_precision(ls):
    # rtol = 1e-10 is out of float32's reach (residual ~ 2e-5 |b| at cond ~ 1e3): the
    # tolerance is at least 64 eps, so the default solvers still work in float32
    sol = solvers.solve_flat(bratu, jnp.zeros(50, jnp.float32), jnp.float32(1.0),
                             solver=solvers.Newton(linear_solver=ls))
    assert int(sol.result) == 0 and float(sol.residual_norm) < 1e-3
    from solvers.linear._krylov import krylov_rtol
    assert krylov_rtol(1e-10, jnp.float64) == 1e-10
    assert krylov_rtol(1e-10, jnp.float32) == 64 * float(np.finfo(np.float32).eps)


def _x5(ls, b):
    x0 = jnp.roll(E0 + 1.0, -1)  # F(x0) = 1: the Newton step converges in one GMRES step
    return solvers.solve_flat(ring, x0, b, solver=solvers.Newton(linear_solver=ls)).x[5]


def test_implicit_derivative_is_nan_when_the_krylov_solve_for_it_stalls():
    # x = roll(b, -1), so d x[5] / d b = e_6; the forward solve converges, but the tangent
    # and transposed solves (right-hand side e_j) stall with restart 30 < N
    ls = solvers.GMRES()
    assert int(solvers.solve_flat(ring, jnp.roll(E0 + 1.0, -1), E0,
                                  solver=solvers.Newton(linear_solver=ls)).result) == 0
    assert np.all(np.isnan(jax.grad(lambda b: _x5(ls, b))(E0)))
    assert np.all(np.isnan(jax.jacfwd(lambda b: _x5(ls, b))(E0)))
    exact = solvers.GMRES(restart=N)
    np.testing.assert_allclose(jax.grad(lambda b: _x5(exact, b))(E0), jnp.eye(N)[6],
                               atol=1e-12)


@pytest.mark.parametrize("make, error, match", [
    (lambda: solvers.GMRES(restart=0), ValueError, r"restart=0\): restart must be >= 1"),
    (lambda: solvers.GMRES(restart=2.5), TypeError, "restart must be an integer"),
    (lambda: solvers.GMRES(rtol=-1), ValueError, "rtol must be a finite number >= 0"),
    (lambda: solvers.GMRES(atol=float("nan")), ValueError, "atol must be a finite number"),
    (lambda: solvers.GMRES(rtol="1e-8"), TypeError, "rtol must be a real number"),
    (lambda: solvers.BiCGStab(max_iters=0), ValueError, "no iterations can never succeed"),
    (lambda: solvers.BiCGStab(max_iters=-3), ValueError, "max_iters must be >= 1"),
    (lambda: solvers.GMRES(max_iters=True), TypeError, "max_iters must be an integer"),
    (lambda: solvers.BiCGStab(rtol=0.0), ValueError, "rtol > 0"),
    (lambda: solvers.GMRES(fail_factor=0.5), ValueError, "fail_factor must be >= 1"),
    # SparseKrylov shares the checks (restart=0 ended in IndexError inside the solve)
    (lambda: solvers.SparseKrylov([0, 1], [0, 1], (2, 2), restart=0), ValueError,
     r"SparseKrylov\(restart=0\): restart must be >= 1"),
    (lambda: solvers.SparseKrylov([0, 1], [0, 1], (2, 2), maxiter=0), ValueError,
     "maxiter must be >= 1"),
    (lambda: solvers.SparseKrylov([0, 1], [0, 1], (2, 2), rtol=-1.0), ValueError,
     "rtol must be a finite number >= 0"),
], ids=["restart0", "restart-float", "rtol-negative", "atol-nan", "rtol-str", "iters0",
        "iters-negative", "iters-bool", "no-tolerance", "fail-factor", "sparse-restart0",
        "sparse-iters0", "sparse-rtol"])
def test_bad_configuration_is_refused_at_construction(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_valid_configuration_is_normalised_and_hashable():
    assert solvers.GMRES(restart=np.int64(5), rtol=np.float32(1e-3)) == \
        solvers.GMRES(restart=5, rtol=float(np.float32(1e-3)))
    assert type(solvers.GMRES(restart=np.int64(5)).restart) is int
    hash(solvers.BiCGStab(rtol=0.0, atol=1e-12, max_iters=1))
