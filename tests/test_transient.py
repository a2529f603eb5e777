"""solvers.simulate: the storage protocol (charge), the clock, breakpoints, the integrator's
accuracy against a closed form, batching, result codes and gradients (vs finite differences)."""
import json
import os
import pathlib
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simgraph as sg
import solvers

ROOT = pathlib.Path(__file__).resolve().parents[1]

TAU, TD, TR = 1e-3, 1e-4, 1e-5


class Node(sg.ReffableTreeNode):
    v: jax.Array = sg.unknown(default=0.0)

    def residual(self):
        return jnp.zeros((), jnp.result_type(self.v))


class Resistor(sg.ReffableTreeNode):
    a: Node
    b: Node
    r: jax.Array

    def contributions(self):
        i = (self.a.v - self.b.v) / self.r
        return ((self.a, i), (self.b, -i))


class Capacitor(sg.ReffableTreeNode):
    a: Node
    c: jax.Array

    def charge(self):
        return ((self.a, self.c * self.a.v),)


class Ramp(sg.ReffableTreeNode):
    """A voltage source rising from 0 to ``v1`` over [TD, TD + TR]; corners are breakpoints."""

    a: Node
    clock: solvers.Clock
    v1: jax.Array
    i: jax.Array = sg.unknown(default=0.0)

    def residual(self):
        return self.a.v - self.v1 * jnp.clip((self.clock.t - TD) / TR, 0.0, 1.0)

    def contributions(self):
        return ((self.a, self.i),)

    def next_breakpoint(self, t):
        corners = jnp.asarray([TD, TD + TR])
        return jnp.min(jnp.where(corners > t, corners, jnp.inf))


class Circuit(sg.ReffableTreeNode):
    source: Ramp
    resistor: Resistor
    capacitor: Capacitor


def rc(r=1e3, c=1e-6, v1=1.0):
    a, out = Node(), Node()
    return Circuit(Ramp(a, solvers.Clock(), v1), Resistor(a, out, r), Capacitor(out, c))


def exact(t, tau=TAU):
    def ramp(t):
        u = np.maximum(t - TD, 0.0)
        return (u - tau * -np.expm1(-u / tau)) / TR
    return ramp(t) - ramp(t - TR)


T = np.linspace(0.0, 3e-3, 31)
CFG = solvers.Integrator(rtol=1e-7, atol=1e-10)


def test_rc_matches_closed_form_and_lands_on_breakpoints():
    graph = rc()
    sol = solvers.simulate(graph, T, integrator=CFG)
    assert int(sol.result) == int(solvers.TRANSIENT_RESULTS.successful)
    v = np.asarray(sol.value(graph.capacitor.a))[:, 0]
    np.testing.assert_allclose(v, exact(T), atol=1e-5)
    steps = np.asarray(sol.steps_t)[: int(sol.n_steps) + 1]
    assert np.any(steps == TD) and np.any(steps == TD + TR)
    assert np.all(np.diff(steps) > 0)
    orders = np.asarray(sol.steps_order)[: int(sol.n_steps)]
    assert set(orders.tolist()) == {1, 2}  # backward Euler after breakpoints, trapezoidal between


def test_backward_euler_only_when_asked():
    sol = solvers.simulate(rc(), T, integrator=solvers.Integrator(rtol=1e-5, atol=1e-9, order=1))
    assert set(np.asarray(sol.steps_order)[: int(sol.n_steps)].tolist()) == {1}
    np.testing.assert_allclose(np.asarray(sol.x)[:, 2], exact(T), atol=1e-3)


def test_given_start_relaxes_to_the_source():
    graph = rc()
    graph.capacitor.a.v = 0.5  # a charged capacitor, no DC solve: it discharges into the source
    sol = solvers.simulate(graph, T, integrator=CFG, initial="given")
    v = np.asarray(sol.x)[:, 2]
    assert v[0] == 0.5
    np.testing.assert_allclose(v, exact(T) + 0.5 * np.exp(-T / TAU), atol=1e-5)


def test_batch_each_member_its_own_steps():
    graph = rc()
    sol = solvers.simulate_batch(graph, {".resistor.r": jnp.array([500.0, 2000.0])}, T,
                                 integrator=CFG)
    v = np.asarray(sol.x)[:, :, 2]
    np.testing.assert_allclose(v[0], exact(T, 0.5e-3), atol=1e-5)
    np.testing.assert_allclose(v[1], exact(T, 2e-3), atol=1e-5)
    assert int(sol.n_steps[0]) != int(sol.n_steps[1])


def test_full_step_buffer_is_reported_not_silent():
    sol = solvers.simulate(rc(), T, integrator=solvers.Integrator(max_steps=5))
    assert int(sol.result) == int(solvers.TRANSIENT_RESULTS.max_steps_reached)
    assert np.isnan(np.asarray(sol.x)[-1]).all()
    with pytest.raises(RuntimeError, match="max_steps_reached"):
        sol.raise_if_failed()


def test_converged_is_one_boolean_array_per_member_eager_or_traced():
    cfg = solvers.Integrator(max_steps=40)
    sol = solvers.simulate_batch(rc(), {".resistor.r": jnp.array([100.0, 5000.0])}, T,
                                 integrator=cfg)  # the fast member runs out of steps
    eager = sol.converged
    traced = jax.jit(lambda s: s.converged)(sol)
    assert isinstance(eager, jax.Array) and eager.dtype == jnp.bool_ and eager.shape == (2,)
    expected = np.asarray(sol.result) == int(solvers.TRANSIENT_RESULTS.successful)
    assert expected.tolist() == [False, True]
    np.testing.assert_array_equal(eager, expected)
    np.testing.assert_array_equal(traced, expected)


@pytest.mark.parametrize("method", ["trapezoidal", "gear"])
def test_gradient_matches_finite_differences(method):
    cfg = solvers.Integrator(rtol=1e-7, atol=1e-10, method=method)

    def loss(r, c):
        sol = solvers.simulate(rc(r, c), T, integrator=cfg)
        return jnp.sum(sol.x[:, 2] ** 2)

    g_r, g_c = jax.grad(loss, argnums=(0, 1))(1e3, 1e-6)
    fd_r = (loss(1e3 + 1e-2, 1e-6) - loss(1e3 - 1e-2, 1e-6)) / 2e-2
    fd_c = (loss(1e3, 1e-6 + 1e-11) - loss(1e3, 1e-6 - 1e-11)) / 2e-11
    np.testing.assert_allclose(float(g_r), float(fd_r), rtol=1e-4)
    np.testing.assert_allclose(float(g_c), float(fd_c), rtol=1e-4)


def test_a_derivative_with_respect_to_the_times_is_refused():
    # The replay differentiates the parameters and the start: a moved output grid or start
    # time got a derivative of 0 (finite differences: ~55 V/s), and the float-resolution
    # test's nextafter then raised JAX's "no differentiation rule".
    def final(shift):
        return solvers.simulate(rc(), T + shift, t0=T[0] + shift).x[-1, 2]

    for derivative in (lambda: jax.grad(final)(0.0), lambda: jax.jvp(final, (0.0,), (1.0,))):
        with pytest.raises(NotImplementedError, match=r"not the times \(t_eval, t0\)"):
            derivative()
    assert np.isfinite(float(final(0.0)))  # the plain run is unchanged


def test_gradient_through_a_batch_matches_finite_differences():
    """The replay that carries the derivative runs under vmap too (it is traced only when
    differentiating)."""
    cfg = solvers.Integrator(rtol=1e-7, atol=1e-10)

    def loss(rs):
        sol = solvers.simulate_batch(rc(), {".resistor.r": rs}, T, integrator=cfg)
        return jnp.sum(sol.x[:, :, 2] ** 2)

    rs = jnp.array([1e3, 2e3])
    grad = jax.grad(loss)(rs)
    fd = [(loss(rs.at[i].add(1e-2)) - loss(rs.at[i].add(-1e-2))) / 2e-2 for i in range(2)]
    np.testing.assert_allclose(np.asarray(grad), np.asarray(fd), rtol=1e-4)


def test_outputs_a_failed_run_did_not_reach_have_nan_derivatives_unless_masked():
    # They carried a zero derivative: a loss over them was NaN while its gradient looked fine.
    cfg = solvers.Integrator(rtol=1e-6, atol=1e-9, max_steps=100)  # stops before 3 ms

    def outputs(r):
        return solvers.simulate(rc(r), T, integrator=cfg).x[:, 2]

    # the outputs and their forward-mode tangents from one program (jvp), used again (the
    # compiled program reused) for the differences below
    with_tangents = lambda r: jax.jvp(outputs, (r,), (1.0,))  # noqa: E731
    values, tangent = (np.asarray(a) for a in with_tangents(1e3))
    reached = ~np.isnan(values)
    assert 3 < reached.sum() < len(T)
    assert np.all(np.isnan(tangent[~reached])) and np.all(np.isfinite(tangent[reached]))
    assert np.isnan(float(jax.grad(lambda r: outputs(r).sum())(1e3)))
    masked = lambda r: jnp.where(jnp.asarray(reached), outputs(r), 0.0).sum()  # noqa: E731
    masked_value = lambda r: jnp.where(reached, with_tangents(r)[0], 0.0).sum()  # noqa: E731
    fd = (masked_value(1e3 + 1e-2) - masked_value(1e3 - 1e-2)) / 2e-2
    np.testing.assert_allclose(float(jax.grad(masked)(1e3)), float(fd), rtol=1e-4)
    assert float(fd) != 0.0


def test_charge_must_return_pairs():
    class Bad(sg.ReffableTreeNode):
        a: Node

        def charge(self):
            return self.a.v

    a, b = Node(), Node()
    graph = Circuit(Ramp(a, solvers.Clock(), 1.0), Resistor(a, b, 1.0), Bad(b))
    with pytest.raises(solvers.ModelError, match="pairs"):
        solvers.simulate(graph, T)


def test_new_values_of_one_structure_do_not_recompile():
    from solvers import _simulate

    solvers.simulate(rc(), T, integrator=CFG)
    before = _simulate._run._cache_size()
    sol = solvers.simulate(rc(r=2e3, c=2e-6, v1=3.0), T, integrator=CFG)
    assert _simulate._run._cache_size() == before
    np.testing.assert_allclose(np.asarray(sol.x)[:, 2], 3.0 * exact(T, 4e-3), atol=3e-5)


GEAR = solvers.Integrator(rtol=1e-7, atol=1e-10, method="gear")


def test_gear_matches_closed_form_on_variable_steps():
    """BDF2 with its variable coefficients: a constant-coefficient BDF2 on these steps (ratios
    from 0.002 to 2) misses the closed form by orders of magnitude or stalls."""
    sol = solvers.simulate(rc(), T, integrator=GEAR)
    assert int(sol.result) == int(solvers.TRANSIENT_RESULTS.successful)
    np.testing.assert_allclose(np.asarray(sol.x)[:, 2], exact(T), atol=2e-5)
    steps = np.asarray(sol.steps_t)[: int(sol.n_steps) + 1]
    ratios = np.diff(steps)[1:] / np.diff(steps)[:-1]
    assert ratios.min() < 0.5 and ratios.max() > 1.5  # the steps do vary
    orders = np.asarray(sol.steps_order)[: int(sol.n_steps)]
    assert set(orders.tolist()) == {1, 2}  # backward Euler after breakpoints, BDF2 between


@pytest.mark.parametrize("method", ["trapezoidal", "gear"])
def test_fixed_steps_converge_with_order_two(method):
    """At a fixed step (hmax, error test off) halving h / tau cuts the error about 4x: a
    discharge through a 0 V source with tau = 1 ms and 2 ms, h = 40 us."""
    graph = rc(v1=0.0)
    graph.capacitor.a.v = 0.5
    cfg = solvers.Integrator(hmax=4e-5, lte_factor=1e12, method=method)
    taus = np.array([1e-3, 2e-3])
    sol = solvers.simulate_batch(graph, {".resistor.r": jnp.asarray(taus / 1e-6)}, T,
                                 integrator=cfg, initial="given")
    errors = [np.max(np.abs(np.asarray(sol.x)[k, :, 2] - 0.5 * np.exp(-T / tau)))
              for k, tau in enumerate(taus)]
    assert 3.2 < errors[0] / errors[1] < 5.0, errors


def test_unknown_method_is_refused():
    with pytest.raises(ValueError, match="gear"):
        solvers.Integrator(method="bdf")


def test_small_dense_lu_pivots_and_solves_both_ways_under_vmap():
    from solvers.linear import _small_lu

    rng = np.random.default_rng(0)
    a = rng.normal(size=(20, 5, 5))
    a[:, 0, 0] = 1e-12  # a tiny leading pivot: rows must be exchanged
    b = rng.normal(size=(20, 5))
    lu, perm = jax.vmap(_small_lu.lu_factor)(jnp.asarray(a))
    x = jax.vmap(_small_lu.lu_solve)(lu, perm, jnp.asarray(b))
    xt = jax.vmap(_small_lu.lu_solve_transpose)(lu, perm, jnp.asarray(b))
    np.testing.assert_allclose(np.einsum("bij,bj->bi", a, np.asarray(x)), b, atol=1e-9)
    np.testing.assert_allclose(np.einsum("bji,bj->bi", a, np.asarray(xt)), b, atol=1e-9)
    singular = _small_lu.lu_solve(*_small_lu.lu_factor(jnp.zeros((3, 3))), jnp.ones(3))
    assert not np.all(np.isfinite(np.asarray(singular)))


def test_small_systems_step_with_the_unrolled_lu():
    from solvers import _simulate
    from solvers.linear import _small_lu

    system = solvers.System.build(rc())
    assert isinstance(_simulate.linear_solver_for(system, CFG, 100), _small_lu.SmallDenseLU)


def test_a_grid_transient_factors_in_jax_not_by_host_callbacks():
    from scenarios.circuits import Capacitor, build_circuit, grid_netlist

    from solvers import _simulate

    base = grid_netlist(12)
    caps = tuple(Capacitor(f"C{n}", n, "0", 1e-12) for n in base.nodes)
    netlist = type(base)(base.title, base.elements + caps, base.models, base.analyses,
                         base.options, base.temperature)
    system = solvers.System.build(build_circuit(netlist))
    assert system.n > 120  # beyond dense LU
    chosen = _simulate.linear_solver_for(system, CFG, None)
    assert type(chosen).__name__ in ("SparseLU", "BandedLU"), chosen
    given = solvers.Integrator(linear_solver=solvers.SparseLU())
    bound = _simulate.linear_solver_for(system, given, None)
    assert bound.pattern.shape == (system.n, system.n)  # a given solver is bound to the pattern


def test_batch_in_chunks_keeps_every_member_in_order():
    taus = np.array([0.5e-3, 1e-3, 2e-3])
    sol = solvers.simulate_batch(rc(), {".resistor.r": jnp.asarray(taus / 1e-6)}, T,
                                 integrator=CFG, chunk_size=2)  # chunks of 2: one padded
    assert np.asarray(sol.x).shape[0] == 3 and np.asarray(sol.n_steps).shape == (3,)
    for k, tau in enumerate(taus):
        np.testing.assert_allclose(np.asarray(sol.x)[k, :, 2], exact(T, tau), atol=1e-5)


def test_sparse_lu_factors_once_for_several_solves_under_vmap():
    rng = np.random.default_rng(3)
    n = 12
    rows, cols = np.nonzero(np.eye(n) + np.eye(n, k=1) + np.eye(n, k=-3))
    ls = solvers.SparseLU(rows, cols, (n, n))
    vals = rng.uniform(0.5, 1.5, (5, rows.size)) + 4.0 * (rows == cols)
    bs = rng.normal(size=(5, n))

    def both(v, b):
        _, op = ls.linearize(lambda x, _: jnp.zeros(n).at[rows].add(v * x[cols]), b, None)
        fac = ls.factorize(op)
        return ls.solve(op, b), ls.solve_factored(fac, b).value, ls.solve_factored(fac, 2 * b)

    plain, again, twice = jax.jit(jax.vmap(both))(jnp.asarray(vals), jnp.asarray(bs))
    np.testing.assert_allclose(again, plain, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(twice.value, 2 * plain, rtol=1e-12, atol=1e-12)
    assert np.all(np.asarray(twice.result) == 0)


def test_factorize_and_solve_factored_refuse_what_does_not_fit():
    n = 4
    rows, cols = np.nonzero(np.eye(n) + np.eye(n, k=1))
    ls = solvers.SparseLU(rows, cols, (n, n))
    _, op = ls.linearize(lambda x, _: jnp.zeros(n).at[rows].add(3.0 * x[cols]), jnp.ones(n), None)
    with pytest.raises(solvers.SparsityError, match="data of shape"):
        ls.factorize(type(op)(jnp.ones(3)))
    fac = ls.factorize(op)
    with pytest.raises(solvers.SparsityError, match=r"expected b of shape \(4,\)"):
        ls.solve_factored(fac, jnp.ones(n + 1))
    with pytest.raises(TypeError, match="factors that factorize"):
        ls.solve_factored(op, jnp.ones(n))


def test_chord_newton_of_a_sparse_transient_matches_the_dense_one(monkeypatch):
    """With `SparseLU` each step keeps the predictor's LU while the updates shrink fast
    (fewer factorizations than Newton iterations); the waveform and the step count stay
    those of full Newton (dense LU)."""
    factored, factorize = [0], solvers.SparseLU.factorize

    def counted(self, operator):
        jax.debug.callback(lambda: factored.__setitem__(0, factored[0] + 1))
        return factorize(self, operator)
    monkeypatch.setattr(solvers.SparseLU, "factorize", counted)
    cfg = solvers.Integrator(rtol=1e-7, atol=1e-10, linear_solver=solvers.SparseLU())
    chord = solvers.simulate(rc(), T, integrator=cfg)
    jax.effects_barrier()
    steps = int(chord.n_steps) + int(chord.n_rejected)
    assert steps <= factored[0] < int(chord.n_newton)  # one LU a step, reused within it
    full = solvers.simulate(rc(), T, integrator=solvers.Integrator(
        rtol=1e-7, atol=1e-10, linear_solver=solvers.DenseLU()))
    np.testing.assert_allclose(np.asarray(chord.x)[:, 2], exact(T), atol=1e-5)
    np.testing.assert_allclose(np.asarray(chord.x), np.asarray(full.x), atol=1e-8)
    assert abs(int(chord.n_steps) - int(full.n_steps)) <= 2
    batch = solvers.simulate_batch(rc(), {".resistor.r": jnp.asarray([500.0, 1000.0])}, T,
                                   integrator=cfg)
    np.testing.assert_allclose(np.asarray(batch.x)[1], np.asarray(chord.x), atol=1e-8)


SHARDED = """
import json, sys
import jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
sys.path.insert(0, sys.argv[1])
import solvers
from solvers.batch._batch import batch_devices
from test_transient import CFG, T, rc
sol = solvers.simulate_batch(rc(), {".resistor.r": jnp.linspace(500.0, 2000.0, 6)}, T,
                             integrator=CFG, chunk_size=3)
print(json.dumps({"devices": len(batch_devices()), "x": sol.x[:, :, 2].tolist(),
                  "steps": sol.n_steps.tolist(), "result": sol.result.tolist()}))
"""


def test_batch_is_split_over_several_devices_with_the_same_answer():
    """Four host devices: each chunk (3 members, rounded up to 4) is split over them."""
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4",
           "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", SHARDED, str(ROOT / "tests")],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    multi = json.loads(proc.stdout.strip().splitlines()[-1])
    single = solvers.simulate_batch(rc(), {".resistor.r": jnp.linspace(500.0, 2000.0, 6)}, T,
                                    integrator=CFG, chunk_size=3)
    assert multi["devices"] == 4
    assert multi["steps"] == single.n_steps.tolist() and multi["result"] == [0] * 6
    np.testing.assert_allclose(multi["x"], np.asarray(single.x)[:, :, 2], rtol=1e-12, atol=1e-15)
