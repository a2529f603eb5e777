"""How a ``.tran`` starts (``uic``, ``.ic``) and the waveform defaults, against numbers measured
with ngspice-39 (``ngspice -b`` with ``wrdata``; hard-coded here so that no ngspice is needed).
Our runs are sampled on ngspice's own time points, so its interpolation adds no error."""
from __future__ import annotations

import numpy as np
import pytest

import solvers
from scenarios.circuits import CircuitError, simulate_circuit
from scenarios.circuits import _waveforms as wf

RC = "* rc\nV1 in 0 DC 1\nR1 in out 1k\nC1 out 0 1u\n{extra}\n.tran 0.1m {tstop} {uic}\n.end\n"


def test_uic_without_ic_starts_every_node_at_zero():
    """``.tran ... uic`` and no ``.ic``: no operating point, C1 charges from 0 V."""
    t = [3e-7, 1e-4, 5.5e-4, 1.15e-3, 3e-3]
    ng_out = [2.99910027e-04, 9.51683226e-02, 4.23111914e-01, 6.83454120e-01, 9.50254626e-01]
    run = simulate_circuit(RC.format(extra="", tstop="3m", uic="uic"), times=[0.0, *t])
    assert run.converged
    assert run.voltage("out")[0] == 0.0
    np.testing.assert_allclose(run.voltage("out")[1:], ng_out, atol=1e-4)
    # after the first step (within it, output blends the t = 0 state, where v(in) = 0)
    np.testing.assert_allclose(run.voltage("in")[2:], 1.0, atol=1e-12)
    np.testing.assert_allclose(run.source_current("V1")[2], -9.04831677e-04, rtol=1e-3)


def test_ic_without_uic_carries_the_inductor_current_of_the_operating_point():
    """The operating point with ``.ic v(c)=0`` held has I(L1) = 1 A; the run keeps it."""
    deck = ("* ic\nV1 in 0 DC 1\nR1 in a 1\nL1 a 0 1m\nR3 in c 1k\nC1 c 0 1u\n.ic v(c)=0\n"
            ".tran 10u 1m\n.end\n")
    t = [0.0, 8e-7, 1.228e-4, 3.228e-4, 1e-3]
    ng_c = [0.0, 7.99670100e-04, 1.15560291e-01, 2.75883218e-01, 6.32123580e-01]
    run = simulate_circuit(deck, times=t)
    assert run.converged
    np.testing.assert_allclose(run.inductor_currents["L1"], 1.0, atol=1e-9)
    np.testing.assert_allclose(run.voltage("c"), ng_c, atol=1e-4)


def test_ic_on_a_node_a_source_fixes_runs_as_ngspice():
    """``.ic v(in)=1`` where V1 fixes ``in``: ngspice runs it (no internal source, no loop);
    the operating point has v(out) = 1 V and I(V1) = 0, and nothing moves."""
    run = simulate_circuit(RC.format(extra=".ic v(in)=1", tstop="1m", uic=""))
    assert run.converged
    np.testing.assert_allclose(run.voltage("out"), 1.0, atol=1e-9)
    np.testing.assert_allclose(run.voltage("in"), 1.0, atol=1e-9)
    # at t = 0, 1e10 S times the rounding of v(in) (~1e-16 V) shows in I(V1); then exact
    np.testing.assert_allclose(run.source_current("V1")[0], 0.0, atol=1e-5)
    np.testing.assert_allclose(run.source_current("V1")[1:], 0.0, atol=1e-12)


def test_ic_that_a_short_contradicts_names_the_card_and_the_fixes():
    """L1 shorts ``out`` to ground at DC: ngspice starts with 5e9 A in L1 and diverges; we
    refuse, naming the .ic card, the node and the ways out."""
    deck = RC.format(extra="L1 out 0 1m\n.ic v(out)=0.5", tstop="1m", uic="")
    with pytest.raises(CircuitError, match=r"\.ic v\(out\)=0\.5.*fixed at 0 V.*uic"):
        simulate_circuit(deck)


def test_exp_delays_default_to_tstep_as_ngspice():
    """``EXP(0 1)`` with tstep 0.1m: TD1 = 0.1m, TAU1 = TAU2 = 0.1m, TD2 = TD1 + 0.1m (ngspice
    -39's vsrcload.c; values measured at ngspice's time points)."""
    clock = solvers.Clock()
    for params in [(0.0, 1.0), (0.0, 1.0, 0.0, 0.0, 0.0, 0.0)]:
        exp = wf.waveform("EXP", params, clock, 1e-4, 4e-3)
        for t, ng in [(1e-4, 0.0), (1.001e-4, 9.99500167e-04), (1.995e-4, 6.30276555e-01),
                      (2.005e-4, 6.28967844e-01), (2.095e-4, 5.74833328e-01)]:
            clock.t = t
            assert float(exp.value()) == pytest.approx(ng, abs=1e-8), (params, t)


def test_pwl_at_a_repeated_time_takes_the_first_value_as_ngspice():
    """``PWL(0 0 1m 1 1m 2 3m 0)``: ngspice gives 1 at t = 1m exactly, 2 just after."""
    clock = solvers.Clock()
    pwl = wf.waveform("PWL", (0.0, 0.0, 1e-3, 1.0, 1e-3, 2.0, 3e-3, 0.0), clock, 1e-4, 4e-3)
    for t, ng in [(0.0, 0.0), (9.995e-4, 9.995e-01), (1e-3, 1.0), (1.0001e-3, 1.9999),
                  (2.0001e-3, 9.999e-01), (3e-3, 0.0), (4e-3, 0.0)]:
        clock.t = t
        assert float(pwl.value()) == pytest.approx(ng, abs=1e-12), t
