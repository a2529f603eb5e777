"""Output times just after a breakpoint where a source jumps (a PWL step, a pulse edge of zero
rise): the breakpoint's state holds the sources' values before the jump, so the algebraic
unknowns (a source-driven node, a source current) leave it out of their interpolant; the
differential ones (a capacitor's voltage) are continuous there.

Before, a cubic through the breakpoint's 0 V and the 1 V after it overshot: v(in) read 1.118 at
1.0004 ms and 0.752 at 1.0009 ms for a 1 V step at 1 ms (ngspice: 1 at its every point after).
"""
import jax
import jax.numpy as jnp
import numpy as np

import simgraph as sg
import solvers
from scenarios.circuits import simulate_circuit
from test_transient import Node

STEP = """* PWL step into RC
V1 in 0 PWL(0 0 1m 0 1m 1 3m 1)
R1 in out 1k
C1 out 0 1u
.tran 10u 3m
.end
"""


def test_source_driven_node_is_exact_past_the_first_step_after_a_jump():
    times = np.linspace(0.0, 3e-3, 30001)
    run = simulate_circuit(STEP, times=times)
    assert run.converged
    after = times > 1e-3  # within the restart step after the breakpoint too
    np.testing.assert_allclose(run.voltage("in")[after], 1.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(run.voltage("in")[times <= 1e-3], 0.0, rtol=0, atol=1e-12)
    ohm = -(1.0 - run.voltage("out")) / 1e3  # the current the source drives through R1
    np.testing.assert_allclose(run.source_current("V1")[after], ohm[after], rtol=1e-3)
    later = times > 1.0004e-3  # past the restart step (0.28 us), where points interpolate
    np.testing.assert_allclose(run.source_current("V1")[later], ohm[later], rtol=1e-6)
    exact_out = np.where(times > 1e-3, 1.0 - np.exp(-(times - 1e-3) / 1e-3), 0.0)
    assert np.max(np.abs(run.voltage("out") - exact_out)) < 1e-5  # default reltol 1e-3


class Step(sg.ReffableTreeNode):
    """A voltage source jumping from 0 to ``v1`` at 1 ms (a breakpoint); ``i`` its current."""

    a: Node
    clock: solvers.Clock
    v1: jax.Array
    i: jax.Array = sg.unknown(default=0.0)

    def residual(self):
        return self.a.v - jnp.where(self.clock.t > 1e-3, self.v1, 0.0)

    def contributions(self):
        return ((self.a, self.i),)

    def next_breakpoint(self, t):
        return jnp.where(t < 1e-3, 1e-3, jnp.inf)


class RC(sg.ReffableTreeNode):
    source: Step
    a: Node  # the source's node
    r: jax.Array
    c: jax.Array
    out: Node

    def contributions(self):
        i = (self.a.v - self.out.v) / self.r
        return ((self.a, i), (self.out, -i))

    def charge(self):
        return ((self.out, self.c * self.out.v),)


def test_the_output_gradient_uses_the_same_interpolant():
    """The replay that carries the derivative interpolates as the run does: the source's
    current after the jump, -(v1 - v_out) / r, and its derivative in v1 match."""
    times = np.array([0.0, 1.0005e-3, 1.001e-3, 1.2e-3, 2e-3])  # the run starts at 0
    cfg = solvers.Integrator(rtol=1e-8, atol=1e-12)

    def current(v1):
        a = Node()
        graph = RC(Step(a, solvers.Clock(), v1), a, 1e3, 1e-6, Node())
        return solvers.simulate(graph, times, integrator=cfg).value(graph.source)[1:, 0]

    i = np.asarray(current(1.0))
    decay = np.exp(-(times[1:] - 1e-3) / 1e-3)
    np.testing.assert_allclose(i, -decay / 1e3, rtol=1e-5)  # v_out = 1 - decay
    d_i = np.asarray(jax.jacfwd(current)(1.0))
    np.testing.assert_allclose(d_i, -decay / 1e3, rtol=1e-5)  # linear in v1
