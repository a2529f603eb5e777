"""Results as pandas tables: the numbers of the JSON to the last digit, the names users know,
Solution.to_frame for any graph, and a clear error without pandas."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import solvers
from scenarios import circuits, powerflow, water
from scenarios._cli import main
from scenarios.thermal._build import read_thermal
from scenarios.thermal._solve import sweep_thermal
from scenarios.truss._build import read_truss
from scenarios.truss._solve import solve_truss

ROOT = Path(__file__).resolve().parent.parent
ACPF = ROOT / "tests" / "data" / "acpf"


@pytest.fixture(scope="module")
def net1():
    return water.build_water(water.read_inp(water.EXAMPLE))


@pytest.fixture(scope="module")
def case9():
    return powerflow.build_powerflow(powerflow.read_case(ACPF / "case9.m"))


def test_circuit_operating_point_and_sweep_tables_hold_the_json_numbers():
    netlist = circuits.read_netlist(circuits.EXAMPLE)
    result = circuits.solve_circuit(netlist)
    row, doc = result.to_frame().iloc[0], result.to_json()
    assert {f"V({n})": row[f"V({n})"] for n in doc["node_voltages"]} == \
        {f"V({n})": v for n, v in doc["node_voltages"].items()}
    assert row["I(V1)"] == doc["source_currents"]["V1"]
    assert row["I(D1)"] == result.diode_currents()["D1"] and row["converged"]  # the run's JSON
    sweep = circuits.sweep_circuit(netlist, "V1", np.linspace(0.0, 9.0, 4))
    table, doc = sweep.to_frame(), sweep.to_json()
    assert table.index.name == "V1" and list(table.index) == doc["values"]
    for (_, row), point in zip(table.iterrows(), doc["sweep"]):
        assert [row[f"V({n})"] for n in point["node_voltages"]] == list(
            point["node_voltages"].values())
        assert row["I(V1)"] == point["source_currents"]["V1"]
        assert row["iterations"] == point["iterations"]


def test_water_node_and_link_tables_hold_the_json_numbers(net1):
    result = net1.solve()
    nodes, links, doc = result.to_frame(), result.to_frame("links"), result.to_json()
    assert nodes["head_m"].to_dict() == doc["heads"]
    assert links["flow_m3s"].to_dict() == doc["flows"]
    assert nodes.loc["9", "type"] == "reservoir" and nodes.loc["2", "type"] == "tank"
    assert nodes.loc["22", "pressure_m"] == result.pressure("22")
    assert links.loc["10", "velocity_m_s"] == pytest.approx(
        result.flow("10") / (np.pi * net1.network.pipes[0].diameter ** 2 / 4), rel=1e-15)
    assert links.loc["9", "headloss_m"] < 0  # the pump lifts
    sweep = net1.sweep([0.5, 1.0, 1.5])
    table, doc = sweep.to_frame("links"), sweep.to_json()
    assert table.index.names == ["demand_multiplier", "link"]
    for value, point in zip(doc["values"], doc["sweep"]):
        assert table.loc[value, "flow_m3s"].to_dict() == point["flows"]
    with pytest.raises(KeyError, match="the tables are nodes, links"):
        result.to_frame("pipes")


def test_power_flow_tables_hold_the_json_numbers_and_balance_the_losses(case9):
    result = case9.solve()
    bus, branch, doc = result.to_frame("bus"), result.to_frame("branch"), result.to_json()
    assert {str(k): v for k, v in bus["vm_pu"].items()} == doc["vm"]
    assert {str(k): v for k, v in bus["va_degree"].items()} == doc["va_deg"]
    reference = json.loads((ACPF / "case9.json").read_text())["solution"]
    assert np.allclose(bus["p_inj_mw"], 100 * np.asarray(reference["P_inj"]), atol=1e-7)
    # no shunts in case9: what the buses inject is what the branches lose
    assert branch["pl_mw"].sum() == pytest.approx(bus["p_inj_mw"].sum(), abs=1e-8)
    # branch 8-2 carries generator 2's 163 MW on a 250 MVA rating
    row = branch[(branch.from_bus == 8) & (branch.to_bus == 2)].iloc[0]
    assert row["p_to_mw"] == pytest.approx(163.0, abs=1e-8)
    assert row["loading_percent"] == pytest.approx(
        100 * np.hypot(row["p_to_mw"], row["q_to_mvar"]) / 250, rel=1e-12)
    sweep = case9.sweep([0.9, 1.1])
    table, doc = sweep.to_frame(), sweep.to_json()
    for value, point in zip(doc["values"], doc["sweep"]):
        assert {str(k): v for k, v in table.loc[value, "vm_pu"].items()} == point["vm"]


def test_sweep_tables_of_the_other_domains_hold_the_json_numbers():
    sweep = sweep_thermal(read_thermal(ROOT / "scenarios/data/thermal/shielded_plates.json"),
                          "heater", [0.0, 100.0])
    table, doc = sweep.to_frame(), sweep.to_json()
    assert table.index.name == "heater"
    assert list(table["T[hot]"]) == [p["temperatures"]["hot"] for p in doc["sweep"]]
    truss = solve_truss(read_truss(ROOT / "scenarios/data/truss/von_mises.json"))
    row = truss.to_frame().iloc[0]
    assert [row["ux[apex]"], row["uy[apex]"]] == truss.to_json()["displacements"]["apex"]


def test_solution_to_frame_has_one_row_per_unknown_single_and_batch():
    graph = circuits.build_circuit(circuits.read_netlist(circuits.EXAMPLE))
    solution = solvers.solve(graph)
    table = solution.to_frame()
    assert list(table.index) == solution.lowered.unknown_paths()
    assert list(table["value"]) == np.asarray(solution.x).tolist()
    assert table.loc[".vsources['V1'].i", "owner"] == "VoltageSource"
    assert set(table["owner"]) == {"Node", "VoltageSource"}
    batch = solvers.solve_batch(graph, {".vsources['V1'].value": np.array([1.0, 2.0, 3.0])})
    wide, long = batch.to_frame(), batch.to_frame(long=True)
    assert list(wide.columns) == ["owner", 0, 1, 2]
    assert np.array_equal(wide[[0, 1, 2]].to_numpy().T, np.asarray(batch.x))
    assert len(long) == 3 * len(wide) and list(long.columns) == ["member", "path", "owner",
                                                                  "value"]
    last = long[long.member == 2].set_index("path")["value"]
    assert last.to_dict() == wide[2].to_dict()


def test_without_pandas_to_frame_says_how_to_install_it(monkeypatch, net1, capsys, tmp_path):
    result = net1.solve()
    solution = solvers.solve(circuits.build_circuit(circuits.read_netlist(circuits.EXAMPLE)))
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    for call in (result.to_frame, solution.to_frame, net1.sweep([1.0]).to_frames):
        with pytest.raises(ImportError, match=r"pip install 'simgraph\[tables\]'"):
            call()
    assert main(["run", "equations", "--csv", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "--csv" in err and "pip install 'simgraph[tables]'" in err
    assert not (tmp_path / "out").exists()


def test_importing_the_packages_does_not_import_pandas():
    code = ("import sys, simgraph, solvers, scenarios, scenarios.circuits, scenarios.water, "
            "scenarios.powerflow, scenarios.thermal, scenarios.truss, scenarios.equations, "
            "scenarios._cli; print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, env={"PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"},
                         check=True).stdout
    assert out.strip() == "False"


def test_cli_csv_round_trips_through_pandas(tmp_path, capsys, net1):
    out = tmp_path / "tables"
    assert main(["run", "water", "--csv", str(out), "--json", str(tmp_path / "w.json")]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["links.csv", "nodes.csv"]
    expected = net1.solve().to_frames()
    for name, frame in expected.items():
        read = pd.read_csv(out / f"{name}.csv", index_col=0, dtype={"node": str, "link": str,
                                                                    "start": str, "end": str})
        pd.testing.assert_frame_equal(read, frame, check_exact=True, check_dtype=False)
    doc = json.loads((tmp_path / "w.json").read_text())
    nodes = pd.read_csv(out / "nodes.csv", index_col=0, dtype={"node": str})
    assert nodes["head_m"].to_dict() == doc["heads"]
    assert main(["run", "circuit", "--sweep", "V1=0:9:4", "--csv", str(out)]) == 0
    sweep = pd.read_csv(out / "circuit.csv", index_col=0)
    doc_sweep = circuits.sweep_circuit(circuits.read_netlist(circuits.EXAMPLE), "V1",
                                       np.linspace(0, 9, 4)).to_frame()
    pd.testing.assert_frame_equal(sweep, doc_sweep, check_exact=True)


def test_cli_csv_of_a_power_flow_holds_the_json_numbers(tmp_path, case9):
    out, data = tmp_path / "pf", tmp_path / "pf.json"
    assert main(["run", "powerflow", "--input", str(ACPF / "case9.m"), "--csv", str(out),
                 "--json", str(data)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["branch.csv", "bus.csv"]
    doc = json.loads(data.read_text())
    bus = pd.read_csv(out / "bus.csv", index_col=0)
    assert {str(k): v for k, v in bus["vm_pu"].items()} == doc["vm"]
    assert {str(k): v for k, v in bus["va_degree"].items()} == doc["va_deg"]
    expected = case9.solve().to_frames()
    for name, frame in expected.items():
        read = pd.read_csv(out / f"{name}.csv", index_col=0)
        pd.testing.assert_frame_equal(read, frame, check_dtype=False, check_index_type=False,
                                      rtol=1e-12)


def test_cli_csv_of_a_transient_circuit_holds_the_json_waveforms(tmp_path):
    out, data = tmp_path / "tran", tmp_path / "tran.json"
    netlist = ROOT / "tests" / "data" / "transient" / "rc_step.cir"
    assert main(["run", "circuit", "--input", str(netlist), "--csv", str(out),
                 "--json", str(data)]) == 0
    doc = json.loads(data.read_text())
    assert doc["analysis"] == "tran" and [p.name for p in out.iterdir()] == ["circuit.csv"]
    table = pd.read_csv(out / "circuit.csv")
    assert list(table.columns) == ["time_s", "V(in)", "V(out)", "I(V1)"]
    assert table["time_s"].tolist() == doc["time"]
    for node, wave in doc["node_voltages"].items():
        assert table[f"V({node})"].tolist() == wave
    assert table["I(V1)"].tolist() == doc["source_currents"]["V1"]
    assert table["V(out)"].iloc[-1] > 0.1  # the capacitor charged: a real waveform
