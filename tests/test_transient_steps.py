"""Step control at the limits of the time's resolution: a float32 run from t = 1 s, where a
step is a few ulps of t, ends (the old loop could reject the same step forever); and
``t_stop``, the time where each member's run stopped."""
from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simgraph as sg
import solvers
from test_transient import T, Capacitor, Node, Resistor, rc

T0 = 1.0  # s: in float32 an ulp of t is 1.2e-7 s, near the steps at the ramp below


class Ramp(sg.ReffableTreeNode):
    """0 V, then a ramp to 1 V over ``rise`` seconds from T0 + 0.1 ms; its corners declared
    as breakpoints unless ``declared`` is False (a jump the integrator must find itself)."""

    a: Node
    clock: solvers.Clock
    i: jax.Array = sg.unknown(default=0.0)
    rise: float = sg.static(default=1e-5)
    declared: bool = sg.static(default=True)

    def residual(self):
        return self.a.v - jnp.clip((self.clock.t - (T0 + 1e-4)) / self.rise, 0.0, 1.0)

    def contributions(self):
        return ((self.a, self.i),)

    def next_breakpoint(self, t):
        if not self.declared:
            return jnp.asarray(jnp.inf, jnp.result_type(t))
        corners = jnp.asarray([T0 + 1e-4, T0 + 1e-4 + self.rise], jnp.result_type(t))
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
                    solvers.TRANSIENT_RESULTS.time_resolution), sol.message()
    if code == solvers.TRANSIENT_RESULTS.successful:
        x = t.astype(float) - T0 - 1e-4
        ramp = lambda s: np.maximum(s, 0) - 1e-3 * -np.expm1(-np.maximum(s, 0) / 1e-3)  # noqa: E731
        np.testing.assert_allclose(np.asarray(sol.value(out))[:, 0],
                                   (ramp(x) - ramp(x - 1e-5)) / 1e-5, atol=5e-3)


def _jump_run(x64: bool):
    with jax.enable_x64(x64):
        a, out = Node(), Node()
        jump = Ramp(a, solvers.Clock(), rise=1e-9, declared=False)  # 1 ns, undeclared
        graph = RC(jump, Resistor(a, out, 1e3), Capacitor(out, 1e-6))
        t = (T0 + np.linspace(0.0, 3e-3, 7)).astype(np.float64 if x64 else np.float32)
        return solvers.simulate(graph, t, integrator=solvers.Integrator(rtol=1e-4, atol=1e-6,
                                                                        max_steps=2000))


def test_a_float32_run_at_the_times_resolution_says_so_not_hmin():
    """At t = 1 s float32 times are 1.2e-7 s apart, far above the default hmin (3e-14 s
    here): the run stopped with step_too_small, whose message said to lower hmin."""
    sol = _jump_run(False)
    assert int(sol.result) == int(solvers.TRANSIENT_RESULTS.time_resolution), sol.message()
    text = sol.message()
    assert re.match(r"time_resolution at t = 1\.0001\d*: The step fell below the resolution "
                    "of the time", text), text  # the time it stopped at, as t_stop
    assert 'jax.config.update("jax_enable_x64", True)' in text and "lower hmin" not in text
    with pytest.raises(RuntimeError, match="time_resolution"):
        sol.raise_if_failed()
    # t_stop: the last accepted time, at the jump (no later output time reached: NaN)
    stop = np.asarray(sol.t_stop)
    assert stop.dtype == np.float32 and stop == np.asarray(sol.steps_t)[int(sol.n_steps)]
    assert T0 + 9e-5 < float(stop) < T0 + 2e-4 and np.isnan(np.asarray(sol.x)[1:]).all()
    done = _jump_run(True)
    assert int(done.result) == int(solvers.TRANSIENT_RESULTS.successful)
    assert float(done.t_stop) == float(done.t[-1])


@pytest.mark.parametrize("save_steps", [True, False])
def test_t_stop_is_each_members_stop_time_with_or_without_saved_steps(save_steps):
    """The time where a run stopped was known only from ``steps_t`` (which needs
    save_steps) or guessed from the last finite output; ``t_stop`` holds it per member."""
    cfg = solvers.Integrator(max_steps=40, save_steps=save_steps)
    sol = solvers.simulate_batch(rc(), {".resistor.r": jnp.array([100.0, 5000.0])}, T,
                                 integrator=cfg)  # the fast member runs out of steps
    stop = np.asarray(sol.t_stop)
    assert stop.shape == (2,) and stop[1] == T[-1]
    assert int(sol.result[0]) == int(solvers.TRANSIENT_RESULTS.max_steps_reached)
    last = np.flatnonzero(np.isfinite(np.asarray(sol.x)[0, :, 0]))[-1]
    assert T[last] <= stop[0] < T[last + 1]
    if save_steps:
        np.testing.assert_array_equal(stop[0], np.asarray(sol.steps_t)[0, 40])
    one = solvers.simulate(rc(r=100.0), T, integrator=cfg)
    assert one.t_stop.shape == () and float(one.t_stop) == stop[0]
    assert float(jax.jit(lambda s: s.t_stop)(one)) == stop[0]  # a pytree leaf


def test_a_failure_above_the_resolution_keeps_step_too_small():
    """An hmin well above the spacing of t (and a step that cannot succeed) still blames hmin."""
    with jax.enable_x64(True):
        a, out = Node(), Node()
        jump = Ramp(a, solvers.Clock(), rise=1e-9, declared=False)  # 1 ns, undeclared
        graph = RC(jump, Resistor(a, out, 1e3), Capacitor(out, 1e-6))
        t = T0 + np.linspace(0.0, 3e-3, 7)
        sol = solvers.simulate(graph, t, integrator=solvers.Integrator(
            rtol=1e-6, atol=1e-9, hmin=1e-6, hmax=1e-4, newton_steps=1, max_steps=2000))
    assert int(sol.result) == int(solvers.TRANSIENT_RESULTS.step_too_small), sol.message()
