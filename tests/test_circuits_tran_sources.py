"""Transient sources and ``.tran`` cards against ngspice-39: PULSE's 8th parameter NP, EXP with
TD2 < TD1, the minimum step, and the refusals of what ngspice cannot run. Reference numbers
were measured with ``ngspice -b`` (``wrdata``, ``option numdgt=12``) at ngspice's own time
points and are hard-coded, so no ngspice is needed."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import solvers
from scenarios.circuits import (FormatError, Netlist, Resistor, Transient, VoltageSource,
                                Waveform, integrator_for, read_netlist, simulate_circuit)
from scenarios.circuits import _waveforms as wf
from scenarios.circuits._build import build_circuit

PULSE = (0.0, 1.0, 1e-4, 1e-4, 1e-4, 2e-4)  # V1 V2 TD TR TF PW; then PER and NP


def _values(kind, params, times):
    clock = solvers.Clock()
    wave = wf.waveform(kind, params, clock, 1e-5, 2e-3)
    out = []
    for t in times:
        clock.t = t
        out.append(float(wave.value()))
    return wave, out


@pytest.mark.parametrize("per, pulses, points", [
    # NP = 1: one pulse, V1 after TD + PER (the old code pulsed on: 0.475 at 1.1475 ms)
    (1e-3, 1.0, [(1.475e-4, 0.475), (2.975e-4, 1.0), (4.475e-4, 0.525), (1.1475e-3, 0.0),
                 (1.2525e-3, 0.0), (1.4475e-3, 0.0)]),
    (5e-4, 2.0, [(6.475e-4, 0.475), (7.475e-4, 1.0), (1.1475e-3, 0.0), (1.2525e-3, 0.0),
                 (1.6475e-3, 0.0)]),
    # a fraction of a period cuts the pulse at TD + NP PER = 0.85 ms
    (5e-4, 1.5, [(7.975e-4, 1.0), (8.725e-4, 0.0), (1.2525e-3, 0.0), (1.6475e-3, 0.0)]),
    # NP = 0 or negative: unlimited
    (5e-4, 0.0, [(1.1475e-3, 0.475), (1.2525e-3, 1.0), (1.6475e-3, 0.475)]),
    (5e-4, -1.0, [(8.725e-4, 1.0), (1.2525e-3, 1.0), (1.6475e-3, 0.475)]),
])
def test_pulse_stops_after_np_pulses_as_ngspice(per, pulses, points):
    times, ng = zip(*points)
    _, ours = _values("PULSE", PULSE + (per, pulses), times)
    np.testing.assert_allclose(ours, ng, atol=1e-12)


def test_pulse_has_no_corners_after_its_last_pulse():
    """NP = 2, PER = 0.5 ms: the last corner is the end of the pulses, TD + 2 PER = 1.1 ms."""
    wave, _ = _values("PULSE", PULSE + (5e-4, 2.0), [])
    t, seen = 0.0, []
    while np.isfinite(t):
        t = float(wave.next_breakpoint(np.float64(t)))
        seen.append(t)
    np.testing.assert_allclose(seen[:-1], [1e-4, 2e-4, 4e-4, 5e-4, 6e-4, 7e-4, 9e-4, 1e-3,
                                           1.1e-3], rtol=1e-12)


def test_pulse_np_runs_through_a_deck():
    """``PULSE(0 1 0.1m 0.1m 0.1m 0.2m 1m 1)`` on a resistor: one pulse, 0 V at 1.25 ms."""
    deck = ("* np\nV1 in 0 PULSE(0 1 0.1m 0.1m 0.1m 0.2m 1m 1)\nR1 in 0 1k\n"
            ".tran 10u 2m 0 5u\n.end\n")
    run = simulate_circuit(deck, times=[1.475e-4, 2.975e-4, 1.1475e-3, 1.2525e-3, 1.5e-3])
    assert run.converged
    np.testing.assert_allclose(run.voltage("in"), [0.475, 1.0, 0.0, 0.0, 0.0], atol=1e-9)


def test_exp_with_td2_before_td1_holds_v1_until_td1_as_ngspice():
    """``EXP(0 1 0.5m 0.1m 0.2m 0.1m)``: V1 up to TD1 = 0.5 ms, then rise and fall together
    (the old code fell from TD2: -0.632 at 0.3 ms)."""
    points = [(3.014e-4, 0.0), (5.014e-4, -0.937002638), (5.514e-4, -0.568320828),
              (6.514e-4, -0.209073549), (1.0014e-3, -0.00631347412),
              (1.5014e-3, -4.2539854e-05)]
    times, ng = zip(*points)
    wave, ours = _values("EXP", (0.0, 1.0, 5e-4, 1e-4, 2e-4, 1e-4), times)
    np.testing.assert_allclose(ours, ng, atol=1e-8)
    assert float(wave.next_breakpoint(np.float64(0.0))) == 5e-4


STIFF = ("* stiff two time constants\nV1 in 0 PULSE(0 1 0 1n 1n 1 2)\nR1 in a 1\nC1 a 0 1n\n"
         "R2 a b 1meg\nC2 b 0 1u\n.tran 10m 5 0 1m\n.end\n")


def test_minimum_step_is_ngspices_delmin():
    """delmin = 1e-11 tmax (ngspice-39 traninit.c): 1e-14 s here, where the old 1e-11 of the
    run (5e-11 s) stopped at the pulse's 1 ns fall at t = 1 s (step_too_small)."""
    deck = read_netlist(STIFF)
    tran = deck.analyses[0]
    system = solvers.System.build(build_circuit(deck, transient=tran))
    assert integrator_for(deck, system, tran).hmin == pytest.approx(1e-14, rel=1e-12)
    run = simulate_circuit(deck)
    assert run.converged, run.message()
    at = [int(np.flatnonzero(run.time == t)[0]) for t in (2.0, 4.0, 5.0)]
    ng_b = [0.232544247764, 0.2640157471059, 0.7292462755668]  # ngspice's points t = 2, 4, 5
    np.testing.assert_allclose(run.voltage("b")[at], ng_b, atol=1e-6)


def test_a_failed_deck_run_says_what_a_deck_can_change():
    """The library's messages suggest Integrator settings (hmin, max_steps); a deck's say
    tmax, reltol, tstop (a 1 ns edge with the smallest step raised to 1e-9 s fails)."""
    deck = read_netlist("* edge\nV1 in 0 PULSE(0 1 1u 1n 1n 1 2)\nR1 in a 1\nC1 a 0 1n\n"
                        ".tran 1u 5u\n.end\n")
    tran = deck.analyses[0]
    system = solvers.System.build(build_circuit(deck, transient=tran))
    cfg = integrator_for(deck, system, tran)
    run = simulate_circuit(deck, integrator=dataclasses.replace(cfg, hmin=1e-9, h0=1e-8))
    text = run.message()
    assert text.startswith("step_too_small: after t = 1e-06 s") and "Lower tmax" in text
    assert "hmin" not in text and "Integrator" not in text
    assert run.to_json()["result"] == text
    short = simulate_circuit(deck, integrator=dataclasses.replace(cfg, max_steps=3))
    assert "all its 3 steps" in short.message() and "reltol" in short.message()


@pytest.mark.parametrize("params, name", [
    ("0 1 0 -1u 1u 1u 10u", "TR"), ("0 1 0 1u -1u 1u 10u", "TF"),
    ("0 1 0 1u 1u -1u 10u", "PW"), ("0 1 0 1u 1u 1u -10u", "PER")])
def test_negative_pulse_durations_are_refused_with_the_line(params, name):
    """ngspice-39 aborts on a negative TR ("breakpoint in the past") and runs nonsense with a
    negative TF, PW or PER; we ran them all silently."""
    deck = f"* neg\nR1 in out 1k\nV1 in 0 PULSE({params})\nC1 out 0 1u\n.tran 10u 1m\n.end\n"
    with pytest.raises(FormatError, match=rf"<string>:3: V1: PULSE {name} \(parameter \d\) "
                                          r"must be >= 0"):
        read_netlist(deck)
    bad = VoltageSource("V1", "in", "0", wave=Waveform("PULSE", (0, 1, 0, 1e-6, 1e-6, 1e-6,
                                                                 -1e-5)))
    with pytest.raises(ValueError, match=r"\.elements\[0\]\.wave: PULSE PER"):
        Netlist("t", (bad, Resistor("R1", "in", "0", 1.0)))


def test_empty_pwl_says_what_it_needs():
    with pytest.raises(FormatError, match=r"<string>:2: V1: PWL needs \(time value\) pairs"):
        read_netlist("* p\nV1 in 0 PWL()\nR1 in 0 1k\n.tran 1u 10u\n.end\n")


def test_an_output_grid_too_large_to_hold_is_refused():
    """``.tran 1p 1`` asked numpy for 1e12 points (7 TiB, a raw MemoryError)."""
    with pytest.raises(FormatError, match=r"<string>:3: \.tran: output every tstep 1e-12 s .* "
                                          r"1e\+12 intervals.*raise tstep to at least 1e-07 s"):
        read_netlist("* big\nR1 in 0 1k\n.tran 1p 1\nV1 in 0 DC 1\n.end\n")
    with pytest.raises(ValueError, match=r"Transient\(tstep=1e-12\): .*raise tstep"):
        Transient(1e-12, 1.0).times()
    with pytest.raises(ValueError, match=r"\.analyses\[0\]: \.tran output every"):
        Netlist("t", (Resistor("R1", "a", "0", 1.0),), analyses=(Transient(1e-12, 1.0),))
    assert len(Transient(1e-7, 1.0).times()) == 10_000_001  # the limit itself is served
    with pytest.raises(ValueError, match="at least 3.34e-07 s"):
        Transient(1e-9, 3.333333).times()
    assert len(Transient(3.34e-7, 3.333333).times()) < 10_000_001


def test_a_pulse_corner_an_ulp_short_of_tstop_ends_the_run():
    """tstop = 5 periods: the pulse's last corner, computed from the 5th period's start,
    lies an ulp short of tstop; the step after it (0.1 of the ulp left) was below delmin and
    the run ended step_too_small with a NaN last point."""
    deck = ("* periodic\nV1 in 0 PULSE(0 1 0 10n 10n 0.49u 1u)\nR1 in out 1k\nC1 out 0 100p\n"
            ".tran 20n 5u\n.end\n")
    run = simulate_circuit(deck)
    assert run.converged, run.message()
    assert np.all(np.isfinite(run.voltage("out")))
    # tau = 0.1 us, each half period is 5 tau: out ends near 0 after the last fall
    assert abs(run.voltage("out")[-1]) < 1e-2


def test_breakpoints_closer_than_the_smallest_step_are_no_failure():
    """hmin = 0.1 us, steps up to 0.5 us: the step after a corner (0.1 of the last step or of
    the gap to the next corner) fell below hmin and the run stopped step_too_small at the
    first corner, though no step had failed (ngspice keeps that step at 2 delmin, as now)."""
    deck = read_netlist("* close\nV1 in 0 PWL(0 0 1u 1 1.5u 0 2u 1)\nR1 in out 1k\n"
                        "C1 out 0 1u\n.tran 0.5u 4u 0 0.5u\n.end\n")
    tran = deck.analyses[0]
    cfg = integrator_for(deck, solvers.System.build(build_circuit(deck, transient=tran)), tran)
    run = simulate_circuit(deck, integrator=dataclasses.replace(cfg, hmin=1e-7))
    assert run.converged, run.message()
    np.testing.assert_allclose(run.voltage("in"), [0, 0.5, 1, 0, 1, 1, 1, 1, 1], atol=1e-12)
