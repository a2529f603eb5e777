"""``.tran`` decks at their edges: values ngspice refuses, analyses that ``run circuit`` would
have dropped without a word, and a float32 run stopped by the time's resolution. Each error
names file:line, what is wrong and what to do."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import numpy as np
import pytest

import solvers
from scenarios import _cli
from scenarios._cli_report import SweepSpec
from scenarios.circuits import (FormatError, Netlist, Resistor, Transient, build_circuit,
                                integrator_for, read_netlist, run, simulate_circuit)

RC = "* rc\nV1 in 0 PULSE(0 1 0.1m 1u 1u 1m 4m)\nR1 in out 1k\nC1 out 0 1u\n{cards}\n.end\n"


def _deck(tmp_path: Path, cards: str) -> Path:
    path = tmp_path / "deck.cir"
    path.write_text(RC.format(cards=cards))
    return path


def _cli_error(capsys, argv: list[str]) -> str:
    code = _cli.main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_sweep_of_a_tran_deck_is_refused_at_the_tran_line(capsys, tmp_path):
    """--sweep ran a DC sweep of a .tran deck and dropped the transient without a word."""
    path = _deck(tmp_path, ".tran 10u 2m")
    err = _cli_error(capsys, ["run", "circuit", "--input", str(path), "--sweep", "V1=0:1:3"])
    assert err.startswith(f"error: {path}:5: --sweep V1=... sweeps the DC solution"), err
    assert "drop --sweep" in err.lower() and "remove the .tran card" in err
    with pytest.raises(FormatError, match=r"deck\.cir:5: --sweep V1"):
        run(path, SweepSpec("V1", np.linspace(0.0, 1.0, 3)))


def test_dc_and_tran_in_one_deck_are_refused_at_the_dc_line(capsys, tmp_path):
    """The .tran ran and the .dc was dropped without a word."""
    path = _deck(tmp_path, ".tran 10u 2m\n.dc V1 0 1 0.5")
    err = _cli_error(capsys, ["run", "circuit", "--input", str(path)])
    assert err.startswith(f"error: {path}:6: this deck has both .dc and .tran (line 5)"), err
    assert "remove one of the cards" in err.lower()


@pytest.mark.parametrize("card, problem", [
    (".tran 10u 2m 0 -1u", "tmax -1e-06 must be >= 0"),      # was the default, silently
    (".tran -10u 2m", "tstep -1e-05 must be > 0"),
    (".tran 10u -2m", "tstop -0.002 must be > 0"),
    (".tran 10u 2m 3m", "tstart 0.003 must satisfy 0 <= tstart < tstop"),
    (".tran 10u 2m -1m", "tstart -0.001 must satisfy 0 <= tstart < tstop"),
    (".tran 10u 2m\n.tran 1u 1m", "a second .tran card (the first is on line 5)"),
])
def test_bad_tran_values_name_the_line_and_what_to_do(tmp_path, card, problem):
    path = _deck(tmp_path, card)
    with pytest.raises(FormatError) as info:
        read_netlist(path)
    line = 5 + card.count("\n")
    assert str(info.value).startswith(f"{path}:{line}: "), str(info.value)
    assert problem in str(info.value) and info.value.hint, str(info.value)


def test_tmax_zero_or_omitted_takes_ngspices_default_and_a_positive_one_is_kept():
    default = min(10e-6, 2e-3 / 50)
    for card, limit in ((".tran 10u 2m", default), (".tran 10u 2m 0 0", default),
                        (".tran 10u 2m 0 1u", 1e-6)):
        tran = read_netlist(RC.format(cards=card)).analyses[0]
        assert tran.step_limit() == pytest.approx(limit), card


def test_a_transient_given_from_python_is_checked_too():
    """Netlist(...) and simulate_circuit(..., tran=...) took tmax < 0 as the default."""
    with pytest.raises(ValueError, match=r"\.analyses\[0\]: \.tran tmax -1 must be >= 0"):
        Netlist("t", (Resistor("R1", "a", "0", 1.0),), analyses=(Transient(1e-6, 1e-3, 0.0, -1.0),))
    deck = read_netlist(RC.format(cards=".tran 10u 2m"))
    with pytest.raises(ValueError, match=r"tmax -1 must be >= 0"):
        simulate_circuit(deck, Transient(1e-6, 1e-3, 0.0, -1.0))


def test_a_float32_deck_stopped_by_the_times_resolution_says_so():
    """A 1 MHz sine from t = 0.5 s needs steps near float32's spacing there (6e-8 s); the
    message blamed the smallest step (1e-12 s) and said to lower tmax, which cannot help.
    It named the first output time (1 s) and its spacing, not where the run stopped."""
    deck = ("* sine at 0.5 s\nV1 in 0 SIN(0 1 1meg 0.5)\nR1 in out 1k\nC1 out 0 1n\n"
            ".tran 1u 1.00001 1 0.1\n.end\n")
    with jax.enable_x64(False):
        result = simulate_circuit(deck)
    assert int(result.solution.result) == int(solvers.TRANSIENT_RESULTS.time_resolution)
    stop = float(result.solution.t_stop)
    assert 0.5 < stop < 0.51, stop
    text = result.message()
    assert text.startswith(f"time_resolution: after t = {stop:.6g} s the step fell below the "
                           "resolution of the time there (float32: times 5.96e-08 s apart; "
                           "the smallest step, 1e-11 of the .tran step limit, as ngspice's "
                           "delmin, is 1e-12 s)"), text
    assert 'jax.config.update("jax_enable_x64", True)' in text and "Lower tmax" not in text


def test_a_deck_message_names_the_smallest_step_that_was_used():
    """The message said the smallest step was 1e-11 of the .tran step limit though an
    integrator given from Python had set another."""
    deck = ("* sine at 0.5 s\nV1 in 0 SIN(0 1 1meg 0.5)\nR1 in out 1k\nC1 out 0 1n\n"
            ".tran 1u 1.00001 1 0.1\n.end\n")
    with jax.enable_x64(False):
        netlist = read_netlist(deck)
        tran = netlist.analyses[0]
        system = solvers.System.build(build_circuit(netlist, transient=tran))
        cfg = dataclasses.replace(integrator_for(netlist, system, tran), hmin=1e-11)
        result = simulate_circuit(netlist, integrator=cfg)
    assert int(result.solution.result) == int(solvers.TRANSIENT_RESULTS.time_resolution)
    text = result.message()
    assert ("the smallest step, given with the integrator, not a deck's 1e-11 of the .tran "
            "step limit, is 1e-11 s)") in text, text


def test_a_tran_command_in_a_control_block_is_refused_not_skipped(tmp_path):
    """ngspice runs 'tran 10u 2m' in .control; the reader skipped the block and run circuit
    computed the operating point instead, without a word."""
    path = _deck(tmp_path, ".control\ntran 10u 2m ; the transient\nplot v(out)\n.endc")
    with pytest.raises(FormatError) as info:
        read_netlist(path)
    assert str(info.value).startswith(f"{path}:6: 'tran 10u 2m' in the .control block (line 5)")
    assert "'.tran 10u 2m'" in str(info.value)
    read_netlist(RC.format(cards=".tran 10u 2m\n.control\nrun\nplot v(out)\n.endc"))  # still fine
