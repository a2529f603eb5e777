"""Every validation circuit solves from 0 V with the default method and matches ngspice-39.

Tolerances from issue 5: 1e-9 V on node voltages, 1e-12 A on voltage-source currents (and on
diode currents). Plain Newton from 0 V fails on most of these decks (overflow or a singular
Jacobian), so this also checks the diodes' junction limiting.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from scenarios.circuits import DCSweep, read_netlist, solve_circuit, sweep_circuit

DATA = Path(__file__).parent / "data" / "circuits"
CASES = sorted(p.stem for p in DATA.glob("*.cir"))


def _reference(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())["solution"]


def test_the_validation_set_is_present():
    assert len(CASES) >= 8 and all((DATA / f"{n}.json").exists() for n in CASES)


@pytest.mark.parametrize("name", CASES)
def test_circuit_matches_ngspice(name):
    ref = _reference(name)
    result = solve_circuit(DATA / f"{name}.cir")
    assert result.converged, result.message()
    dv = max(abs(result.voltage(n) - v) for n, v in ref["node_voltages"].items())
    di = max(abs(result.source_current(n) - i) for n, i in ref["vsource_currents"].items())
    dd = max(abs(result.diode_current(n) - i) for n, i in ref["diode_currents"].items())
    assert dv <= 1e-9 and di <= 1e-12 and dd <= 1e-12, (dv, di, dd)
    doc = result.to_json()
    assert set(doc["node_voltages"]) == set(ref["node_voltages"])
    assert set(doc["source_currents"]) == set(ref["vsource_currents"])
    assert doc["converged"] is True and doc["residual_norm"] < 1e-12
    assert 0 < doc["iterations"] <= 50


def test_dc_sweep_is_one_batched_solve_matching_single_solves_and_ngspice():
    """A 50-point sweep of V1 (the last point at the deck's own value, where ngspice's .op
    is the reference) agrees with separate solves of the same circuit."""
    netlist = read_netlist(DATA / "random_rd_8.cir")
    v0 = netlist.element("V1").dc
    values = np.append(DCSweep("V1", 0.1, 4.9, 0.1).points(), v0)
    assert len(values) == 50
    sweep = sweep_circuit(netlist, "V1", values)
    assert sweep.converged and sweep.arrays["node_voltages"].shape == (50, len(netlist.nodes))
    ref = _reference("random_rd_8")
    for node, v in ref["node_voltages"].items():
        assert abs(sweep.voltage(node)[-1] - v) <= 1e-9
    for name, i in ref["vsource_currents"].items():
        assert abs(sweep.source_current(name)[-1] - i) <= 1e-12
    for k in (0, 17, 33):
        elements = [dataclasses.replace(e, dc=values[k]) if e.name == "V1" else e
                    for e in netlist.elements]
        single = solve_circuit(dataclasses.replace(netlist, elements=elements))
        dv = max(abs(single.voltage(n) - sweep.voltage(n)[k]) for n in netlist.nodes)
        assert dv <= 1e-10
    doc = sweep.to_json()
    assert len(doc["sweep"]) == 50 and doc["converged"] is True
    assert set(doc["sweep"][0]) >= {"node_voltages", "source_currents", "converged",
                                    "iterations", "residual_norm"}
