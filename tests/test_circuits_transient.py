"""Circuit transients (``.tran``) against ngspice-39 references (tests/data/transient, trimmed
from ../shared/validation/transient) and closed forms; waveforms; ``.ic``; the CLI document."""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import solvers
from scenarios.circuits import (FormatError, build_circuit, integrator_for, read_netlist, run,
                                simulate_circuit)
from scenarios.circuits import _waveforms as wf

DATA = Path(__file__).parent / "data" / "transient"


def reference(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())


def on_common_times(ref_t, t):
    """Indices (into the reference, into ours) of the times both grids share."""
    match = np.isclose(np.asarray(ref_t)[:, None], np.asarray(t)[None, :], rtol=0, atol=1e-12)
    i, j = np.nonzero(match)
    assert len(i) >= 50
    return i, j


def check_against(ref: dict, time, voltages: dict, currents: dict, scale: float = 1.0):
    i, j = on_common_times(ref["time"], time)
    for node, values in ref["node_voltages"].items():
        err = np.max(np.abs(np.asarray(voltages[node])[j] - np.asarray(values)[i]))
        assert err <= scale * ref["suggested_checker_atol_V"], (node, err)
    for name, values in ref["source_currents"].items():
        err = np.max(np.abs(np.asarray(currents[name])[j] - np.asarray(values)[i]))
        assert err <= scale * ref["suggested_checker_atol_A_vsource"], (name, err)
    return i, j


@pytest.fixture(scope="module")
def rc_step_report():
    return run(str(DATA / "rc_step.cir"))


def test_cli_runs_tran_and_matches_ngspice(rc_step_report):
    doc = rc_step_report.json
    assert doc["analysis"] == "tran" and rc_step_report.converged
    assert json.loads(json.dumps(doc)) == doc
    # a transient keeps no residual: null, and the table says so (it printed 0.0 before)
    assert doc["residual_norm"] is None and rc_step_report.residual_norm is None
    row = next(line for line in rc_step_report.table().splitlines() if "residual" in line)
    assert row.split()[:2] == ["residual", "n/a"]
    np.testing.assert_allclose(doc["time"], 1e-5 * np.arange(601), rtol=0, atol=1e-15)
    ref = reference("rc_step")
    i, j = check_against(ref, doc["time"], doc["node_voltages"], doc["source_currents"])
    closed = np.asarray(ref["analytic"]["node_voltages"]["out"])[i]
    assert np.max(np.abs(np.asarray(doc["node_voltages"]["out"])[j] - closed)) < 3.4e-7
    from matplotlib.figure import Figure
    rc_step_report.draw(Figure())


def test_transient_table_holds_the_json_waveforms(rc_step_report):
    frame = rc_step_report.tables()["circuit"]
    doc = rc_step_report.json
    assert frame.index.name == "time_s" and frame.index.tolist() == doc["time"]
    assert frame["V(out)"].tolist() == doc["node_voltages"]["out"]
    assert frame["I(V1)"].tolist() == doc["source_currents"]["V1"]


@pytest.mark.parametrize("method", ["trap", "gear"])
def test_rlc_ringing_matches_ngspice_and_closed_form(method):
    ref = reference("rlc_ring")
    deck = (DATA / "rlc_ring.cir").read_text().replace(".end", f".options method={method}\n.end")
    res = simulate_circuit(deck)
    assert res.converged
    i, j = check_against(ref, res.time, res.node_voltages, res.source_currents)
    for node, curve in ref["analytic"]["node_voltages"].items():
        assert np.max(np.abs(res.voltage(node)[j] - np.asarray(curve)[i])) < 1.7e-5
    i_l = np.asarray(res.inductor_currents["L1"])[j]
    np.testing.assert_allclose(i_l, -np.asarray(ref["source_currents"]["V1"])[i], atol=6e-7)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["half_wave", "rc_ladder_50"])
def test_nonlinear_and_ladder_decks_match_ngspice(name):
    res = simulate_circuit(DATA / f"{name}.cir")
    assert res.converged
    check_against(reference(name), res.time, res.node_voltages, res.source_currents)


@pytest.mark.slow
def test_half_wave_steps_are_set_by_tmax_not_by_the_error_control():
    """At ngspice's default tolerances the half-wave deck steps at its tmax (tstop / tmax
    = 5000 steps; ngspice-39 takes 5007): the restarts and rejections add few. Without
    tmax the error control needs about a hundred steps."""
    netlist = read_netlist(DATA / "half_wave.cir")
    loose = {**netlist.options, "reltol": 1e-3, "vntol": 1e-6, "abstol": 1e-12}
    netlist = dataclasses.replace(netlist, options=loose)
    tran = netlist.analyses[0]
    system = solvers.System.build(build_circuit(netlist, transient=tran))
    cfg = integrator_for(netlist, system, tran, max_steps=6000)
    sol = solvers.simulate(system, tran.times(), t0=0.0, integrator=cfg)
    assert 5000 <= int(sol.n_steps) <= 5030 and int(sol.n_rejected) <= 10
    assert int(sol.n_newton) <= 1.3 * int(sol.n_steps)
    free = dataclasses.replace(cfg, hmax=math.inf)
    sol = solvers.simulate(system, tran.times(), t0=0.0, integrator=free)
    assert int(sol.n_steps) + int(sol.n_rejected) <= 200


def test_initial_condition_holds_node_in_operating_point():
    deck = ("* rc discharge\nV1 in 0 DC 0\nR1 in out 1k\nC1 out 0 1u\n.ic v(out)=1\n"
            ".options reltol=1e-6\n.tran 1e-4 3e-3\n.end\n")
    res = simulate_circuit(deck)
    assert res.converged
    np.testing.assert_allclose(res.voltage("out"), np.exp(-res.time / 1e-3), atol=1e-4)


def ngspice_pulse(t, v1, v2, td, tr, tf, pw, per):
    x = t - td
    if x > per:
        x -= per * math.floor(x / per)
    if x <= 0 or x >= tr + pw + tf:
        return v1
    if x < tr:
        return v1 + (v2 - v1) * x / tr
    if x <= tr + pw:
        return v2
    return v2 + (v1 - v2) * (x - tr - pw) / tf


def test_waveforms_follow_ngspice_and_give_corners():
    clock = solvers.Clock()
    pulse = wf.waveform("PULSE", (0.0, 1.0, 2e-4, 2e-6, 3e-6, 1.5e-3, 3e-3), clock, 1e-5, 6e-3)
    sine = wf.waveform("SIN", (0.5, 2.0, 50.0, 1e-3, 10.0), clock, 1e-5, 6e-3)
    exp = wf.waveform("EXP", (0.0, 1.0, 1e-4, 1e-4, 5e-4, 2e-4), clock, 1e-5, 6e-3)
    pwl = wf.waveform("PWL", (0.0, 0.0, 1e-3, 1.0, 2e-3, -1.0), clock, 1e-5, 6e-3)
    for t in np.linspace(0.0, 6e-3, 25):
        clock.t = t
        assert float(pulse.value()) == pytest.approx(
            ngspice_pulse(t, 0.0, 1.0, 2e-4, 2e-6, 3e-6, 1.5e-3, 3e-3), abs=1e-12)
        want = 0.5 if t <= 1e-3 else 0.5 + 2.0 * math.exp(-(t - 1e-3) * 10) * math.sin(
            2 * math.pi * 50 * (t - 1e-3))
        assert float(sine.value()) == pytest.approx(want, abs=1e-12)
        rise = 0.0 if t <= 1e-4 else 1 - math.exp(-(t - 1e-4) / 1e-4)
        fall = 0.0 if t <= 5e-4 else -(1 - math.exp(-(t - 5e-4) / 2e-4))
        assert float(exp.value()) == pytest.approx(rise + fall, abs=1e-12)
        assert float(pwl.value()) == pytest.approx(np.interp(t, [0, 1e-3, 2e-3], [0, 1, -1]))
    corners = [2e-4, 2.02e-4, 1.702e-3, 1.705e-3, 3.2e-3, 3.202e-3]
    t, seen = 0.0, []
    for _ in corners:
        t = float(pulse.next_breakpoint(jnp.asarray(t)))
        seen.append(t)
    np.testing.assert_allclose(seen, corners, rtol=1e-12)
    assert float(pwl.next_breakpoint(jnp.asarray(1e-3))) == 2e-3
    assert math.isinf(float(pwl.next_breakpoint(jnp.asarray(2e-3))))


def test_tran_card_round_trips_and_defaults():
    deck = read_netlist("* t\nV1 a 0 PULSE(0 1)\nR1 a b 1k\nC1 b 0 1u\nL1 b 0 1m\n"
                        ".ic v(b)=0.5\n.tran 1u 1m 0 2u uic\n.end\n")
    assert read_netlist(deck.to_spice()) == deck
    tran = deck.analyses[0]
    assert (tran.tstep, tran.tstop, tran.tmax, tran.uic) == (1e-6, 1e-3, 2e-6, True)
    assert len(tran.times()) == 1001 and deck.initial_conditions == {"b": 0.5}


@pytest.mark.parametrize("options, method, order", [
    ("", "trapezoidal", 2), (".options method=gear", "gear", 2),
    (".options method=trap maxord=1", "trapezoidal", 1)])
def test_options_method_picks_the_integrator(options, method, order):
    deck = read_netlist(f"* m\nV1 a 0 DC 1\nR1 a b 1k\nC1 b 0 1u\n{options}\n.tran 1u 1m\n.end\n")
    system = solvers.System.build(build_circuit(deck, transient=deck.analyses[0]))
    cfg = integrator_for(deck, system, deck.analyses[0])
    assert (cfg.method, cfg.order) == (method, order)


def test_options_method_unknown_is_an_error():
    text = "* m\nV1 a 0 DC 1\nR1 a b 1k\nC1 b 0 1u\n.options method=euler\n.tran 1u 1m\n.end\n"
    with pytest.raises(FormatError, match=":5: .options method=euler: not an integration"):
        read_netlist(text)  # at its line, not only when the transient starts
    deck = dataclasses.replace(read_netlist(text.replace("euler", "gear")),
                               options={"method": "euler"})  # a Netlist made in code
    with pytest.raises(ValueError, match="method"):
        simulate_circuit(deck)
