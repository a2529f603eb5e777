"""Derivatives of a transient beyond the grid output's gradient: the accepted states
(``steps_x``) and second derivatives, against central differences on a step sequence that no
parameter moves (fixed steps: ``hmax``, with tolerances that never reject a step)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simgraph as sg
import solvers
from test_transient import Node, rc

T = np.linspace(0.0, 3e-4, 4)
FIXED = solvers.Integrator(rtol=1.0, atol=1.0, hmax=1e-5, max_steps=64)


def _run(p, initial="dc"):
    graph = rc(p[0], p[1])
    if initial == "given":
        graph.capacitor.a.v = p[2]
    return solvers.simulate(graph, T, integrator=FIXED, initial=initial)


def _differences(f, p, h=1e-6):
    p = np.asarray(p, float)
    cols = []
    for i in range(p.size):
        step = np.zeros_like(p)
        step[i] = h * abs(p[i])
        cols.append((np.asarray(f(p + step)) - np.asarray(f(p - step))) / (2 * step[i]))
    return np.stack(cols, axis=-1)


@pytest.mark.parametrize("initial", ["dc", "given"])
def test_accepted_states_carry_their_derivatives(initial):
    # steps_x came from the integrator's own loop, run on frozen parameters: its derivative
    # was a silent 0 (here d v(out) / dR at step 20: -9.5e-8 V/ohm by differences).
    p = np.array([1e3, 1e-6, 0.25])
    sol = _run(p, initial)
    assert bool(sol.converged) and 20 < int(sol.n_steps) < 64
    rows = jnp.asarray([0, 5, 20, int(sol.n_steps), int(sol.n_steps) + 1])
    states = jax.jit(lambda q: _run(q, initial).steps_x[rows, 2])
    expected = _differences(states, p)
    np.testing.assert_allclose(jax.jacrev(states)(jnp.asarray(p)), expected, rtol=1e-6,
                               atol=1e-9 * np.abs(expected).max())
    assert np.abs(expected[2, 0]) > 1e-8  # d v(out) / dR at step 20
    assert np.all(expected[-1] == 0.0)  # a row past the last step is a constant 0


def test_second_derivatives_of_a_transient_are_exact():
    # Reverse mode partially evaluates the replay's scan, which drops custom derivative
    # rules: the outputs then did not move with the parameters, and jax.hessian of
    # sum(v^2) over R and C came out as 0 on its diagonal's R entry (differences: 2.6e-7).
    def loss(q):
        return jnp.sum(_run(q).x[:, 2] ** 2)

    p = np.array([1e3, 1e-6])
    grad = jax.jit(jax.grad(loss))
    expected = _differences(grad, p, h=1e-5)
    hessian = jax.jit(jax.hessian(loss))(jnp.asarray(p))
    np.testing.assert_allclose(hessian, expected, rtol=1e-6, atol=1e-9 * np.abs(expected).max())
    assert abs(expected[0, 0]) > 0


class _NoRoot(sg.ReffableTreeNode):
    """v^2 + k = 0 at a capacitor's node: no operating point for k > 0."""

    a: Node
    k: jax.Array
    i: jax.Array = sg.unknown(default=0.0)

    def residual(self):
        return self.a.v ** 2 + self.k

    def contributions(self):
        return ((self.a, self.i),)


def test_a_failed_operating_point_has_nan_derivatives_unless_masked():
    # The output at t0 and steps_x[0] hold the operating point's last iterate; their
    # derivatives took it for a root: d x(t0) / dk came out -inf, d steps_x[0] / dk 0.
    def run(k):
        a = Node(v=1.0)
        graph = sg.Bundle(_NoRoot(a, k), rc().capacitor)
        graph.items[1].a = a
        return solvers.simulate(graph, T, integrator=FIXED)

    assert int(run(1.0).result) == int(solvers.TRANSIENT_RESULTS.initial_point_failed)
    for output in (lambda s: s.x[0], lambda s: s.steps_x[0]):
        assert np.isnan(float(jax.grad(lambda k: jnp.sum(output(run(k))))(1.0)))
        masked = lambda k: jnp.sum(jnp.where(run(k).converged, output(run(k)), 0.0))  # noqa
        assert float(jax.grad(masked)(1.0)) == 0.0
