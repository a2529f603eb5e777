"""Step control at the limits of the time's resolution: a float32 run from t = 1 s, where a
step is a few ulps of t, ends (the old loop could reject the same step forever)."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import simgraph as sg
import solvers
from test_transient import Capacitor, Node, Resistor

T0 = 1.0  # s: in float32 an ulp of t is 1.2e-7 s, near the steps at the ramp below


class Ramp(sg.ReffableTreeNode):
    """0 V, then a 10 us ramp to 1 V from T0 + 0.1 ms."""

    a: Node
    clock: solvers.Clock
    i: jax.Array = sg.unknown(default=0.0)

    def residual(self):
        return self.a.v - jnp.clip((self.clock.t - (T0 + 1e-4)) / 1e-5, 0.0, 1.0)

    def contributions(self):
        return ((self.a, self.i),)

    def next_breakpoint(self, t):
        corners = jnp.asarray([T0 + 1e-4, T0 + 1.1e-4], jnp.result_type(t))
        return jnp.min(jnp.where(corners > t, corners, jnp.inf))


class RC(sg.ReffableTreeNode):
    ramp: Ramp
    resistor: Resistor
    capacitor: Capacitor


def test_a_step_of_a_few_ulps_of_t_is_rejected_until_it_ends():
    """Near the ramp's end a step that rounds t up onto the corner was stretched to the gap,
    rejected, shrunk back to the same size and stretched again: an endless loop. Now each
    rejection shrinks the step, the coefficients use the step taken (t1 - t), and the run
    ends with an honest code (here, reaching the end with the right waveform)."""
    with jax.enable_x64(False):
        a, out = Node(), Node()
        graph = RC(Ramp(a, solvers.Clock()), Resistor(a, out, 1e3), Capacitor(out, 1e-6))
        t = (T0 + np.linspace(0.0, 3e-3, 7)).astype(np.float32)
        sol = solvers.simulate(graph, t, integrator=solvers.Integrator(rtol=1e-4, atol=1e-6,
                                                                       max_steps=500))
    code = solvers.TRANSIENT_RESULTS(int(sol.result))
    assert code in (solvers.TRANSIENT_RESULTS.successful,
                    solvers.TRANSIENT_RESULTS.step_too_small), sol.message()
    if code == solvers.TRANSIENT_RESULTS.successful:
        x = t.astype(float) - T0 - 1e-4
        ramp = lambda s: np.maximum(s, 0) - 1e-3 * -np.expm1(-np.maximum(s, 0) / 1e-3)  # noqa: E731
        np.testing.assert_allclose(np.asarray(sol.value(out))[:, 0],
                                   (ramp(x) - ramp(x - 1e-5)) / 1e-5, atol=5e-3)
