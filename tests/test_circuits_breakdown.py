"""Diode reverse breakdown (BV, IBV) against ngspice-39 (references: ngspice -b on the same
decks with reltol=1e-9 vntol=1e-12 abstol=1e-15, numdgt=12)."""
from __future__ import annotations

import math

import pytest

from scenarios.circuits import read_netlist, solve_circuit, sweep_circuit
from scenarios.circuits._build import breakdown_voltage, thermal_voltage

MODELS = (".model DZ D(IS=1e-14 N=1 BV=5.1 IBV=1m)\n"
          ".model DZ2 D(IS=2e-15 N=1.5 BV=3.3 IBV=5m RS=2)\n")
REGULATOR = ("* two zeners: the second with N = 1.5, RS, area 2 and m = 3 (IBV scales by m only)\n"
             "V1 in 0 DC 12\nR1 in k 470\nD1 0 k DZ\nD2 0 k2 DZ2 area=2 m=3\nR2 in k2 1k\n"
             + MODELS + ".op\n.end\n")


def test_a_zener_regulator_matches_ngspice():
    result = solve_circuit(REGULATOR)
    assert result.converged
    assert result.voltage("k") == pytest.approx(5.169226429056, abs=1e-9)
    assert result.voltage("k2") == pytest.approx(3.281852906350, abs=1e-9)
    assert result.diode_current("D1") == pytest.approx(-1.45335607892e-02, rel=1e-9)
    assert result.diode_current("D2") == pytest.approx(-8.71814709365e-03, rel=1e-9)


@pytest.mark.parametrize("instance, v_k", [("", 5.059556172362), ("m=2", 5.041627978063)])
def test_a_current_through_the_breakdown_knee_matches_ngspice(instance, v_k):
    result = solve_circuit(f"* 10 mA reverse\nI1 0 k 10m\nD1 0 k DZ {instance}\n"
                           ".model DZ D(IS=1e-14 N=1 BV=5 IBV=1m)\n.op\n.end\n")
    assert result.converged and result.voltage("k") == pytest.approx(v_k, abs=1e-9)


def test_a_sweep_through_forward_reverse_and_breakdown_matches_ngspice():
    deck = ("* sweep\nV1 in 0 DC 0\nR1 in k 470\nD1 0 k DZ\nD2 k2 0 DZ2 area=2 m=3\n"
            "R2 k k2 1k\n" + MODELS + ".dc V1 -12 12 3\n.end\n")
    sweep = sweep_circuit(read_netlist(deck))
    assert sweep.converged  # every member
    reference = {-12.0: -7.37278344788e-01, 3.0: 2.356781710832, 9.0: 5.136590703240,
                 12.0: 5.160628293453}
    for i, v1 in enumerate(sweep.values.tolist()):
        if v1 in reference:
            assert sweep.voltage("k")[i] == pytest.approx(reference[v1], abs=1e-9)


def test_breakdown_voltage_follows_ngspice_diotemp():
    vt = thermal_voltage(27.0)
    # IBV below what IS gives at BV: ngspice keeps BV
    assert breakdown_voltage(5.0, 1e-20, 1e-14, vt, vt) == 5.0
    xbv = breakdown_voltage(5.0, 1e-3, 1e-14, vt, vt, reltol=1e-12)
    assert 1e-14 * (math.exp((5.0 - xbv) / vt) - 1.0 + xbv / vt) == pytest.approx(1e-3, rel=1e-12)


def test_a_diode_with_breakdown_is_a_zener_diode_holding_its_own_voltage():
    # tBrkdwnV depends on IS x area and IBV x m: each diode holds its own; diodes without BV
    # stay plain Diodes (their evaluation and step limit carry no breakdown branch)
    from scenarios.circuits._elements import Diode, ZenerDiode
    diodes = solve_circuit(REGULATOR).graph.diodes
    assert {type(d) for d in diodes.values()} == {ZenerDiode}
    assert 2.0 < float(diodes["D2"].bv) < 3.3 < 4.0 < float(diodes["D1"].bv) < 5.1
    plain = solve_circuit("* t\nV1 1 0 1\nR1 1 2 1k\nD1 2 0 DM\n.model DM D\n.op\n.end\n")
    assert type(plain.graph.diodes["D1"]) is Diode


def test_a_breakdown_that_ngspice_would_place_above_zero_volts_is_refused():
    from scenarios.circuits import CircuitError
    with pytest.raises(CircuitError, match="tBrkdwnV = -0.824 V, not positive.*Raise BV"):
        solve_circuit("* t\nV1 1 0 1\nR1 1 2 1k\nD1 0 2 DZ\n.model DZ D(BV=0.01 IBV=1)\n"
                      ".op\n.end\n")
