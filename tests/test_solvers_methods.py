"""Method features: least squares, model step limiting, source stepping, Newton-Krylov, jaxopt."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize

import solvers
from solvers import RESULTS

T = jnp.linspace(0.0, 3.0, 20)
Y = 2.5 * jnp.exp(-1.3 * T) + 0.01 * jnp.sin(7.0 * T)  # not exactly on the model


def decay(x, p):
    return x[0] * jnp.exp(-x[1] * p["t"]) - p["y"]


@pytest.mark.parametrize("method", [solvers.LevenbergMarquardt(), solvers.Default()],
                         ids=lambda m: type(m).__name__)
def test_least_squares_matches_scipy(method):
    p = {"t": T, "y": Y}
    sol = solvers.solve_flat(decay, jnp.array([1.0, 0.5]), p, solver=method)
    ref = scipy.optimize.least_squares(lambda x: np.asarray(decay(jnp.asarray(x), p)),
                                       [1.0, 0.5], xtol=1e-15, ftol=1e-15, gtol=1e-15)
    # the best fit of inconsistent equations: a stationary point that is not a root
    assert RESULTS(int(sol.result)) is RESULTS.local_minimum and not bool(sol.converged)
    np.testing.assert_allclose(sol.x, ref.x, rtol=1e-7)
    assert float(sol.residual_norm) > 1e-3


def test_least_squares_solution_refuses_differentiation():
    f = lambda y: solvers.solve_flat(decay, jnp.array([1.0, 0.5]), {"t": T, "y": y}).x[0]
    with pytest.raises(NotImplementedError, match="least-squares"):
        jax.grad(f)(Y)


def diode(v, p):
    """One diode in series with a resistor across a source: KCL at the diode node."""
    return 1e-14 * jnp.expm1(v / 0.025) + (v - p["vs"]) / 1e3


def junction_limit(v, dv, p):
    """SPICE-like limiting: never move the junction voltage by more than 0.1 V."""
    return jnp.min(jnp.minimum(1.0, 0.1 / jnp.maximum(jnp.abs(dv), 1e-30)))


def test_step_limit_hook_makes_plain_newton_converge():
    plain = solvers.Newton(line_search=False, max_steps=40)
    p = {"vs": jnp.asarray(5.0)}
    without = solvers.solve_flat(diode, jnp.zeros(1), p, solver=plain)
    limited = solvers.solve_flat(diode, jnp.zeros(1), p, solver=plain, step_limit=junction_limit)
    assert not bool(without.converged)
    assert RESULTS(int(limited.result)) is RESULTS.successful
    assert 0.6 < float(limited.x[0]) < 0.75
    np.testing.assert_allclose(diode(limited.x, p), 0.0, atol=1e-10)


def pipe_ring(x, p):
    """Junctions in a ring through a reservoir (head ``level``), Hazen-Williams pipes between:
    n heads, then n + 1 flows; each junction draws ``demand`` (mass balance, then head laws)."""
    n = (x.shape[0] - 1) // 2
    h, q = x[:n], x[n:]
    ring = jnp.concatenate([jnp.array([p["level"]]), h, jnp.array([p["level"]])])
    pipes = ring[:-1] - ring[1:] - p["r"] * q * jnp.abs(q) ** 0.852
    return jnp.concatenate([q[:-1] - q[1:] - p["demand"], pipes])


def test_watchdog_takes_the_full_steps_a_monotone_line_search_stalls_on():
    # From a far start the first Newton step overshoots the flows and raises ||F|| 100-fold;
    # full Newton then converges fast. Backtracking on ||F|| takes tiny steps instead.
    n = 20
    x0 = jnp.concatenate([jnp.full(n, 40.0), jnp.full(n + 1, 0.1)])
    p = {"r": jnp.linspace(1.0, 10.0, n + 1), "demand": 5.0, "level": 50.0}
    monotone = solvers.solve_flat(pipe_ring, x0, p, solver=solvers.Newton())
    watched = solvers.solve_flat(pipe_ring, x0, p, solver=solvers.Newton(watchdog=4))
    default = solvers.solve_flat(pipe_ring, x0, p, solver=solvers.Default())
    assert RESULTS(int(monotone.result)) is RESULTS.max_steps_reached
    for sol in (watched, default):
        assert RESULTS(int(sol.result)) is RESULTS.successful
        assert int(sol.iterations) <= 10
        np.testing.assert_allclose(pipe_ring(sol.x, p), 0.0, atol=1e-9)


def test_watchdog_returns_to_its_best_point_when_full_steps_fail():
    # Full steps from 0 V overflow the diode's exponential: each returns to the best point,
    # backtracks from there, and the run still converges; a failed run keeps its best point.
    p = {"vs": jnp.asarray(5.0)}
    sol = solvers.solve_flat(diode, jnp.zeros(1), p, solver=solvers.Newton(watchdog=2))
    assert RESULTS(int(sol.result)) is RESULTS.successful
    np.testing.assert_allclose(diode(sol.x, p), 0.0, atol=1e-10)
    short = solvers.solve_flat(diode, jnp.zeros(1), p, solver=solvers.Newton(watchdog=2, max_steps=3))
    assert float(short.residual_norm) <= float(jnp.max(jnp.abs(diode(jnp.zeros(1), p))))
    np.testing.assert_allclose(jnp.max(jnp.abs(diode(short.x, p))), short.residual_norm)


def test_source_stepping_continuation():
    scaled = lambda p, t: {"vs": p["vs"] * t}
    p = {"vs": jnp.asarray(5.0)}
    sol = solvers.solve_flat(diode, jnp.array([0.3]), p, solver=solvers.Homotopy(),
                             continuation=scaled, step_limit=junction_limit)
    ref = solvers.solve_flat(diode, jnp.zeros(1), p, step_limit=junction_limit)
    assert bool(sol.converged) and bool(ref.converged)
    np.testing.assert_allclose(sol.x, ref.x, rtol=1e-10)


def bratu(x, p):
    """1-D Bratu problem, n = 200 interior points: a large sparse system."""
    n = x.shape[0]
    h = 1.0 / (n + 1)
    padded = jnp.concatenate([jnp.zeros(1), x, jnp.zeros(1)])
    return (padded[:-2] - 2.0 * x + padded[2:]) / h ** 2 + p * jnp.exp(x)


@pytest.mark.parametrize("ls", [solvers.GMRES(), solvers.BiCGStab()],
                         ids=lambda s: type(s).__name__)
def test_newton_krylov_matches_dense(ls):
    x0 = jnp.zeros(200)
    dense = solvers.solve_flat(bratu, x0, 1.0, solver=solvers.Newton())
    krylov = solvers.solve_flat(bratu, x0, 1.0, solver=solvers.Newton(linear_solver=ls))
    assert bool(krylov.converged)
    np.testing.assert_allclose(krylov.x, dense.x, rtol=1e-8, atol=1e-10)
    trust = solvers.solve_flat(bratu, x0, 1.0, solver=solvers.TrustRegion(linear_solver=ls))
    np.testing.assert_allclose(trust.x, dense.x, rtol=1e-8, atol=1e-10)


JAXOPT = [solvers.JaxoptBroyden(), solvers.JaxoptGaussNewton(),
          solvers.JaxoptLevenbergMarquardt()]


@pytest.mark.parametrize("method", JAXOPT, ids=lambda m: type(m).__name__)
def test_jaxopt_backends_solve_batches_and_differentiate(method):
    fn = lambda x, p: x ** 3 + x - p
    p = jnp.array([[0.5], [2.0], [10.0]])
    sol = solvers.solve_flat_batch(fn, jnp.ones(1), p, solver=method)
    assert bool(jnp.all(sol.converged))
    np.testing.assert_allclose(fn(sol.x, p), 0.0, atol=1e-9)
    grad = jax.grad(lambda q: solvers.solve_flat(fn, jnp.ones(1), q, solver=method).x[0])(2.0)
    x = float(sol.x[1, 0])
    np.testing.assert_allclose(grad, 1.0 / (3 * x * x + 1), rtol=1e-8)


@pytest.mark.parametrize("method, expected", [
    (solvers.JaxoptBroyden(max_steps=3), RESULTS.max_steps_reached),
    (solvers.JaxoptGaussNewton(), RESULTS.max_steps_reached),  # undamped: wanders
    (solvers.JaxoptLevenbergMarquardt(), RESULTS.max_steps_reached),  # grad > its tol
    (solvers.JaxoptLevenbergMarquardt(options=(("tol", 1e-6),)), RESULTS.local_minimum),
], ids=lambda m: type(m).__name__)
def test_jaxopt_failures_map_to_honest_codes(method, expected):
    if isinstance(method, solvers.JaxoptBroyden):
        sol = solvers.solve_flat(lambda x, p: x ** 2 - p, jnp.array([50.0]), 2.0, solver=method)
    else:  # x^2 + 1 = 0 has no root: stationary at x = 0
        sol = solvers.solve_flat(lambda x, p: x ** 2 + p, jnp.array([2.0]), 1.0, solver=method)
    assert RESULTS(int(sol.result)) is expected
    assert not bool(sol.converged)


def test_jaxopt_iterate_gone_nan_is_not_a_nonfinite_residual():
    # From x0 = 1 on x^2 + 1 = 0 Broyden's iterate goes NaN while F is finite everywhere: it
    # said nonfinite_residual ("F returned NaN or inf"), which is false.
    sol = solvers.solve_flat(lambda x, p: x ** 2 + p, jnp.array([1.0]), 1.0,
                             solver=solvers.JaxoptBroyden())
    assert RESULTS(int(sol.result)) is RESULTS.local_minimum
    assert np.isfinite(float(sol.residual_norm)) and float(sol.x[0]) == 1.0  # back at x0


def test_jaxopt_nan_member_is_reported():
    sol = solvers.solve_flat_batch(lambda x, p: x ** 2 - p, jnp.ones(1),
                                   jnp.array([[4.0], [jnp.nan]]), solver=solvers.JaxoptBroyden())
    assert [RESULTS(int(c)) for c in sol.result] == [RESULTS.successful,
                                                     RESULTS.nonfinite_input]


@pytest.mark.parametrize("options, message", [
    ({"watchdog": -1}, r"watchdog=\.\.\.\) must be an integer >= 0, got -1"),
    ({"watchdog": 2.5}, r"watchdog=\.\.\.\) must be an integer >= 0, got 2\.5"),
    ({"max_steps": 0}, r"max_steps=\.\.\.\) must be an integer >= 1"),
    ({"max_backtracks": -3}, r"max_backtracks=\.\.\.\) must be an integer >= 0"),
])
def test_newton_rejects_bad_counts_when_built(options, message):
    with pytest.raises(ValueError, match=message):
        solvers.Newton(**options)


@pytest.mark.parametrize("method, options, message", [
    (solvers.TrustRegion, {"max_steps": 0}, r"TrustRegion\(max_steps=\.\.\.\) must be an integer"),
    (solvers.TrustRegion, {"max_shrinks": 1.5}, r"max_shrinks=\.\.\.\) must be an integer >= 0"),
    (solvers.LevenbergMarquardt, {"max_steps": -1}, r"LevenbergMarquardt\(max_steps"),
    (solvers.LevenbergMarquardt, {"max_rejections": True}, r"max_rejections=\.\.\.\) must be"),
    (solvers.Homotopy, {"steps": 0}, r"Homotopy\(steps=\.\.\.\) must be an integer >= 1"),
    (solvers.Homotopy, {"corrector_steps": 2.0}, r"corrector_steps=\.\.\.\) must be"),
])
def test_other_methods_reject_bad_counts_when_built(method, options, message):
    with pytest.raises(ValueError, match=message):
        method(**options)
