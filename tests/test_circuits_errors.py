"""Bad circuits: named before any Newton iteration, or a failed result code (never a JAX error)."""
from __future__ import annotations

import pytest

import simgraph as sg
import solvers
from scenarios.circuits import (CircuitError, FloatingNodeError, Netlist, Resistor,
                                VoltageLoopError, VoltageSource, build_circuit, elements,
                                read_netlist, solve_circuit, sweep_circuit)

MODEL = ".model DM D(IS=1e-14 N=1)\n"


def _deck(*cards: str) -> str:
    return "* test deck\n" + "\n".join(cards) + "\n" + MODEL + ".op\n.end\n"


def test_node_fed_only_by_a_current_source_is_floating():
    deck = _deck("V1 1 0 DC 1", "R1 1 0 1k", "I1 1 x DC 1m")
    with pytest.raises(FloatingNodeError, match=r"'x'.*no DC path to ground") as err:
        build_circuit(read_netlist(deck))
    assert err.value.nodes == ("x",)
    assert isinstance(err.value, sg.GraphError)


def test_island_with_a_loop_is_floating_and_named():
    """A resistor triangle with a diode, not tied to ground: structurally non-singular (every
    KCL row has entries), so only the topology check can see it."""
    deck = _deck("V1 1 0 DC 1", "R1 1 0 1k", "Ra a b 1k", "Rb b c 1k", "Dc c a DM",
                 "I1 1 a DC 1m")
    with pytest.raises(FloatingNodeError) as err:
        solve_circuit(deck)
    assert set(err.value.nodes) == {"a", "b", "c"}


def test_systems_structural_check_names_a_floating_node_too():
    """Without the netlist check, lowering the same graph reports the node by key path."""
    ground, node, fed = elements.Ground(), elements.Node(), elements.Node()
    circuit = elements.Circuit(
        ground, elements.Physics(0.025, 1e-12), {"1": node, "x": fed}, {}, {},
        {"R1": elements.Resistor(node, ground, 1e3)}, {},
        {"V1": elements.VoltageSource(node, ground, 1.0)},
        {"I1": elements.CurrentSource(node, fed, 1e-3)})
    with pytest.raises(solvers.ModelError, match=r"nodes\['x'\]"):
        solvers.System.build(circuit)


def test_loop_of_voltage_sources_is_named():
    deck = _deck("V1 1 0 DC 1", "V2 1 0 DC 2", "R1 1 0 1k")
    with pytest.raises(VoltageLoopError, match="'V2' closes a loop") as err:
        build_circuit(read_netlist(deck))
    assert err.value.sources == ("V2",)


def test_circuit_without_dc_solution_fails_with_a_code():
    """With GMIN = 0 a reverse-biased diode passes at most IS: a 1 mA current source pulling
    through it has no solution. The solve reports failure; it raises nothing."""
    deck = _deck("I1 1 0 DC 1m", "D1 1 0 DM", ".options gmin=0")
    result = solve_circuit(deck)
    assert not result.converged
    assert result.result != solvers.RESULTS.successful
    assert result.to_json()["converged"] is False
    assert "iterations" in result.message()


def test_unsupported_models_and_values_say_how_to_fix():
    with pytest.raises(CircuitError, match="need BV > 0 and IBV > 0.*BV=-5"):
        build_circuit(read_netlist("* bv\nV1 1 0 DC 1\nD1 1 0 DZ\n"
                                   ".model DZ D(IS=1e-14 BV=-5)\n.end\n"))
    with pytest.raises(CircuitError, match="R1: resistance.*0 V voltage source"):
        build_circuit(Netlist("* short", [VoltageSource("V1", "1", "0", 1.0),
                                          Resistor("R1", "1", "0", 0.0)]))
    with pytest.raises(CircuitError, match="temperature"):
        build_circuit(read_netlist(_deck("V1 1 0 DC 1", "R1 1 0 1k", ".temp 50")))


def test_unknown_names_are_key_errors_listing_the_known_ones():
    result = solve_circuit(_deck("V1 1 0 DC 1", "R1 1 2 1k", "D1 2 0 DM"))
    assert result.voltage("0") == 0.0 and result.source_current("v1") == result.source_current("V1")
    with pytest.raises(KeyError, match="no node named 'n9'.*1, 2"):
        result.voltage("n9")
    with pytest.raises(KeyError, match="no diode named 'D7'.*D1"):
        result.diode_current("D7")
    with pytest.raises(KeyError, match="no voltage or current source named 'V5'"):
        sweep_circuit(_deck("V1 1 0 DC 1", "R1 1 0 1k"), "V5", [1.0, 2.0])


@pytest.mark.parametrize("cards, line, words", [
    ("V1 1 0 1\nR1 1 2 1k\nD1 2 0 DMOD\n.model DMOD D (is=1e-13 bv=-50)",
     5, ".model DMOD: need BV > 0 and IBV > 0 (finite), got BV=-50"),
    ("V1 1 0 1\nR1 1 2 1k\nD1 2 0 DM\n.model DM D\n.temp 50",
     6, ".temp 50 differs from TNOM 27"),
    ("V1 1 0 1\nR1 1 2 1k\nD1 2 0 DM\n.model DM D\n.options tnom=50",
     6, ".temp 27 differs from TNOM 50: temperature scaling of diode parameters is not "
        "supported. Simulate at TNOM (.temp 50)"),  # the hint said .temp 27
])
def test_run_names_the_card_that_build_circuit_refuses(tmp_path, cards, line, words):
    """The command line's error for a model or temperature that build_circuit refuses names
    the deck's file:line (it said only '.model DMOD: ...')."""
    from scenarios._errors import FormatError
    from scenarios.circuits import run
    deck = tmp_path / "deck.cir"
    deck.write_text("* deck\n" + cards + "\n.op\n.end\n")
    with pytest.raises(FormatError) as info:
        run(str(deck))
    assert str(info.value).startswith(f"{deck}:{line}: {words}")
