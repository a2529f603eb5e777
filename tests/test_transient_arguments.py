"""solvers.simulate and Integrator refuse settings they cannot honour, before any run: a
NaN first step looped forever, and times outside the run came back as "successful"."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simgraph as sg
import solvers


class Decay(sg.ReffableTreeNode):
    """dv/dt = -v, from v = 1 (its charge is v)."""

    v: jax.Array = sg.unknown(default=1.0)

    def residual(self):
        return self.v

    def charge(self):
        return ((self, self.v),)


@pytest.mark.parametrize("setting", [
    dict(h0=math.nan), dict(h0=-1e-6), dict(h0=0.0), dict(hmin=math.nan), dict(hmin=-1.0),
    dict(atol=math.nan), dict(atol=-1e-9), dict(atol=[1e-9, math.inf]),
])
def test_integrator_refuses_steps_and_tolerances_it_cannot_use(setting):
    name = next(iter(setting))
    with pytest.raises(ValueError, match=f"Integrator\\({name}="):
        solvers.Integrator(**setting)


def test_integrator_keeps_valid_settings():
    assert solvers.Integrator(h0=1e-6, hmin=1e-12, atol=0.0).h0 == 1e-6
    assert solvers.Integrator(atol=np.asarray([1e-9, 1e-6])).atol == (1e-9, 1e-6)


@pytest.mark.parametrize("t_eval, t0, message", [
    ([0.0, 0.5, math.inf], None, "finite"),
    ([0.0, math.nan], None, "finite"),
    ([0.0, 0.5, 1.0], 0.25, "before the run starts"),
])
def test_simulate_refuses_output_times_it_cannot_serve(t_eval, t0, message):
    with pytest.raises(ValueError, match=message):
        solvers.simulate(Decay(), jnp.asarray(t_eval), t0=t0, initial="given")


def test_simulate_serves_times_from_t0_on():
    sol = solvers.simulate(Decay(), jnp.asarray([0.25, 0.5]), t0=0.0, initial="given",
                           integrator=solvers.Integrator(rtol=1e-6, atol=1e-9))
    np.testing.assert_allclose(np.asarray(sol.x)[:, 0], np.exp([-0.25, -0.5]), rtol=1e-4)


class Driven(sg.ReffableTreeNode):
    """dv/dt = t - v."""

    clock: solvers.Clock
    v: jax.Array = sg.unknown(default=0.0)

    def residual(self):
        return self.v - self.clock.t

    def charge(self):
        return ((self, self.v),)


def test_simulate_batch_refuses_a_sweep_of_the_clock():
    # The integrator sets the clock at every step: the swept values were dropped silently.
    with pytest.raises(ValueError, match="Clock's t is set by the integrator"):
        solvers.simulate_batch(Driven(solvers.Clock()), {".clock.t": jnp.asarray([0.0, 1.0])},
                               jnp.asarray([0.0, 1.0]))


def test_integrator_refuses_a_smallest_step_above_the_largest():
    with pytest.raises(ValueError, match=r"Integrator\(hmin=0.001, hmax=1e-06\).*hmin <= hmax"):
        solvers.Integrator(hmin=1e-3, hmax=1e-6)
    assert solvers.Integrator(hmin=1e-6, hmax=1e-6).hmin == 1e-6


class Relax(sg.ReffableTreeNode):
    """dv/dt = -k v, from v = 1."""

    k: jax.Array = 1.0
    v: jax.Array = sg.unknown(default=1.0)

    def residual(self):
        return self.k * self.v

    def charge(self):
        return ((self, self.v),)


def test_batch_message_names_the_member_to_pick_as_a_solve_does():
    """``message()`` of a batch raised numpy's "only 0-dimensional arrays can be converted",
    ``message(5)`` of two members a bare IndexError."""
    batch = solvers.simulate_batch(Relax(), {"Relax.k": jnp.asarray([1.0, 2.0])},
                                   jnp.asarray([0.0, 0.5]), initial="given")
    with pytest.raises(TypeError, match=r"TransientSolution holds a batch of 2 members: pass a "
                                        r"member's index \(message\(0\)"):
        batch.message()
    with pytest.raises(IndexError, match=r"member 5 is out of range: this TransientSolution "
                                         r"holds 2 member\(s\)"):
        batch.message(5)
    assert batch.message(-1) == "member -1: successful: Reached the end time."
    single = solvers.simulate(Relax(), jnp.asarray([0.0, 0.5]), initial="given")
    assert single.message() == "successful: Reached the end time."
