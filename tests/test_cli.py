"""``python -m scenarios``: list, run (table, --json, --sweep, --plot), demo, and one-line errors."""
from __future__ import annotations

import functools
import importlib
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import solvers
from scenarios import _cli, _cli_domains
from scenarios._cli_domains import Scenario

ROOT = Path(__file__).resolve().parent.parent


def _run(capsys, *argv):
    code = _cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _assert_one_line_error(code, err, *fragments):
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_list_names_every_scenario(capsys):
    code, out, _ = _run(capsys, "list")
    assert code == 0
    for name in ("equations", "circuit", "water", "powerflow", "thermal", "truss"):
        assert name in out
    assert "scenarios/data/truss/von_mises.json" in out


def test_run_equations_prints_a_table_and_writes_json(capsys, tmp_path):
    path = tmp_path / "eq.json"
    code, out, _ = _run(capsys, "run", "equations", "--json", str(path))
    assert code == 0
    assert "solver" in out and "iterations" in out and "x[e2]" in out
    assert "Default" in out  # the method that ran: the default, Newton first (solvers.solve)
    doc = json.loads(path.read_text())
    assert doc["converged"] is True and doc["residual_norm"] < 1e-9
    assert doc["x"] == pytest.approx({"e1": 0.5, "e2": 1.5, "e3": -2.5, "e4": 2.0, "e5": 0.5})
    assert doc["dx_dm"]["e3"] == pytest.approx(5.0 / 4.0)


def test_run_thermal_sweep_writes_json_and_plot(capsys, tmp_path):
    data, plot = tmp_path / "t.json", tmp_path / "t.png"
    code, out, _ = _run(capsys, "run", "thermal", "--sweep", "heater=0:100:3",
                        "--json", str(data), "--plot", str(plot))
    assert code == 0 and f"wrote plot {plot}" in out
    doc = json.loads(data.read_text())
    assert doc["parameter"] == "heater" and doc["values"] == [0.0, 50.0, 100.0]
    assert len(doc["sweep"]) == 3 and doc["converged"] is True
    # no heat: everything sits at the sink temperature
    assert doc["sweep"][0]["temperatures"]["hot"] == pytest.approx(300.0, abs=1e-9)
    assert doc["sweep"][2]["boundary_heat"]["sink"] == pytest.approx(-100.0)
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("argv, point", [
    (["equations", "--sweep", "m=-1:1:3"], "m = 0"),  # x = c / m has no root at m = 0
    (["powerflow", "--sweep", "load_scale=1:6:3"], "load_scale = 3.5, 6"),  # past the nose
    (["thermal", "--sweep", "heater=0:-1e12:3"], "heater = -5e+11, -1e+12"),  # T^4 below 0
])
def test_a_sweep_names_the_points_that_did_not_converge(capsys, monkeypatch, argv, point):
    # The table's first .. last values mixed in failed points without saying which.
    # Plain Newton instead of each domain's default method: the same points fail, the note is
    # the same, and no fallback stage is compiled for them (20 s for the power flow; staged
    # fallbacks on failing members: tests/test_solvers_graph_staging.py, test_powerflow.py).
    scenario = _cli._scenario(argv[0])
    monkeypatch.setattr(importlib.import_module(scenario.module), "run",
                        functools.partial(scenario.runner(), solver=solvers.Newton()))
    code, out, _ = _run(capsys, "run", *argv)
    assert code == 1 and "converged" in out
    note = next(line for line in out.splitlines() if "did not converge" in line)
    assert f"at {point}: their values are not solutions" in note


def test_run_with_an_input_file(capsys, tmp_path):
    src = tmp_path / "eqs.json"
    src.write_text(json.dumps({"providers": {"m": 4.0},
                               "equations": {"only": {"constant": 2.0, "provider": "m"}}}))
    out_json = tmp_path / "out.json"
    code, _, _ = _run(capsys, "run", "equations", "--input", str(src), "--json", str(out_json))
    assert code == 0 and json.loads(out_json.read_text())["x"] == {"only": 0.5}


@pytest.mark.parametrize("argv, fragments", [
    (["run", "nope"], ["unknown scenario 'nope'", "equations"]),
    (["run", "truss", "--sweep", "P=1:2"], ["bad --sweep 'P=1:2'", "PARAM=START:STOP:COUNT"]),
    (["run", "truss", "--sweep", "P=a:2:3"], ["START and STOP must be numbers"]),
    (["run", "truss", "--sweep", "P=0:1:0"], ["COUNT >= 1"]),
    (["run", "truss", "--input", "/no/such/file.json"], ["/no/such/file.json", "does not exist"]),
    (["run", "truss", "--frobnicate"], ["unrecognized arguments: --frobnicate"]),
    ([], ["give a command"]),
])
def test_usage_errors_are_one_line(capsys, argv, fragments):
    code, _, err = _run(capsys, *argv)
    _assert_one_line_error(code, err, *fragments)


def test_bad_input_file_and_bad_sweep_parameter_are_one_line(capsys, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"nodes": {"a": [0, 0]},\n "bars": [}')
    code, _, err = _run(capsys, "run", "truss", "--input", str(bad))
    _assert_one_line_error(code, err, f"{bad}:2: invalid JSON")
    code, _, err = _run(capsys, "run", "thermal", "--sweep", "nothing=0:1:2")
    _assert_one_line_error(code, err, "nothing named 'nothing' to sweep", "heater")
    for name, known in (("water", "demand_multiplier"), ("powerflow", "load_scale")):
        # the solver's key error alone never said which names a sweep takes
        code, _, err = _run(capsys, "run", name, "--sweep", "nope=0:1:2")
        _assert_one_line_error(code, err, f"'nope' is not a named sweep parameter (those are "
                               f"{known}); as a key path: solve_batch key 'nope' selects no")


def test_unavailable_scenario_and_missing_matplotlib(capsys, monkeypatch):
    fake = Scenario("fake", "scenarios._errors", "a domain without run()",
                    _cli_domains.DATA / "truss" / "von_mises.json", None)
    monkeypatch.setitem(_cli_domains.SCENARIOS, "fake", fake)
    code, _, err = _run(capsys, "run", "fake")
    _assert_one_line_error(code, err, "fake scenario is not available yet")
    code, out, _ = _run(capsys, "list")
    assert "[not available yet]" in out
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code, _, err = _run(capsys, "run", "equations", "--plot", "x.png")
    _assert_one_line_error(code, err, "--plot needs matplotlib")


def test_demo_tours_and_says_where_the_plots_went(capsys, monkeypatch, tmp_path):
    only = {k: _cli_domains.SCENARIOS[k] for k in ("truss",)}
    only["fake"] = Scenario("fake", "scenarios._errors", "not there", only["truss"].example, None)
    broken = types.ModuleType("broken_domain")

    def run(*args, **kwargs):
        raise RuntimeError("boom")

    broken.run = run
    monkeypatch.setitem(sys.modules, "broken_domain", broken)
    only["broken"] = Scenario("broken", "broken_domain", "raises", only["truss"].example, None)
    monkeypatch.setattr(_cli, "SCENARIOS", only)
    code, out, _ = _run(capsys, "demo", "--out", str(tmp_path))
    assert code == 1  # the broken domain; the tour still went on
    assert "skipped: the fake scenario is not available yet" in out
    assert "failed: RuntimeError: boom" in out
    assert f"plots written to {tmp_path}: truss.png" in out
    assert (tmp_path / "truss.png").stat().st_size > 1000


def test_json_documents_from_other_domains_are_adapted():
    doc = {"node_voltages": {"1": 9.0, "2": 0.7}, "source_currents": {"V1": -0.01},
           "converged": True, "iterations": 4, "residual_norm": 1e-15}
    report = _cli_domains._from_json("circuit", doc)
    assert report.converged and report.iterations == 4
    assert ("node_voltages[2]", 0.7, "") in report.rows
    assert "source_currents[V1]" in report.table()


@pytest.mark.parametrize("name, doc", [
    ("circuit", {"parameter": "V1", "values": [0.0, 1.0],
                 "sweep": [{"node_voltages": {"1": v}, "source_currents": {"V1": -v}}
                           for v in (0.0, 1.0)]}),
    ("water", {"heads": {"J1": 100.0, "J2": 95.0}, "flows": {"P1": 0.01}}),
    ("powerflow", {"vm": {"1": 1.0, "2": 0.98}, "va_deg": {"1": 0.0, "2": -2.5}}),
])
def test_default_plots_from_the_json_documents(tmp_path, name, doc):
    from scenarios._cli_plots import default_draw
    report = _cli_domains._from_json(name, {**doc, "converged": True})
    report.draw = default_draw(name, report.json)
    assert _cli.write_plot(report, tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
    assert default_draw("circuit", {"node_voltages": {"1": 1.0}}) is None  # no sweep: no plot


def test_report_helpers_read_the_status_and_format_the_rows():
    import solvers
    from scenarios._cli_report import Report, named_rows, sweep_rows, sweep_span

    doc = {"T": {"a": 1.0}, "converged": np.True_, "iterations": np.int32(3),
           "residual_norm": np.float64(1e-12)}
    report = Report.from_doc("thermal", doc, named_rows("T[{}]", doc["T"], "K"), None)
    assert report.solver == "Default" and report.converged is True and report.iterations == 3
    assert report.rows == [("T[a]", 1.0, "K")] and report.json is doc
    assert Report.from_doc("thermal", doc, [], solvers.Newton()).solver == "Newton"
    values = np.array([0.0, 0.5, 2.0])
    span = sweep_span("P", values)
    assert span == "P=0..2"
    columns = {"a": values, "u": np.stack([values, values + 1], axis=-1)}
    assert sweep_rows("x[{}]", ["a", "u"], columns.__getitem__, "m", span) == [
        ("x[a] at P=0..2", "0 .. 2", "m"), ("x[u] at P=0..2", "(0, 1) .. (2, 3)", "m")]


def test_module_entry_point_exits_2_without_traceback():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "scenarios", "run", "nope"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("error: unknown scenario 'nope'")
    assert "Traceback" not in proc.stderr
