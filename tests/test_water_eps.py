"""Extended-period water runs (``simulate_eps``) against EPANET 2.2 over 24 h.

References: ``tests/data/water/eps_<net>[_tight].json``, EPANET 2.2's own hydraulic loop
(made by ``tests/data/water/make_eps_reference.py`` with wntr; not needed here). ``_tight``
runs EPANET at ACCURACY 1e-8: its solution error is then far below the tolerances, and what is
left is the difference of the two schemes. Measured (max over the 24 h, all hydraulic times):

=========  ===========  ==========  ==========  ===========
reference  accuracy     |d level|   |d head|    |d flow|
=========  ===========  ==========  ==========  ===========
Net1       1e-8         6.2e-9 m    7.1e-9 m    2.1e-10 m3/s
Net2       1e-8         1.6e-7 m    5.0e-7 m    1.6e-8 m3/s
Net3       1e-8         2.3e-7 m    1.0e-6 m    2.0e-8 m3/s
Net1       0.001 (file) 9.7e-7 m    6.6e-5 m    4.3e-8 m3/s
=========  ===========  ==========  ==========  ===========

(Net2 at the file's ACCURACY: 1.2e-6 m, 7.1e-5 m, 2.5e-5 m3/s, same times.) Net2's and
Net3's residue at 1e-8 is about EPANET's small-flow switch, which our link laws make
continuous (``signed_power``).

The tolerances below are about 10x those. With the file's ACCURACY 0.001, EPANET's own flow
error moves Net3's tank 1 by 5e-6 m by hour 21, enough to round a control time to 76779 s
instead of our (and EPANET-at-1e-8's) 76778 s: Net3 is compared with the tight reference only.
"""
import dataclasses
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import solvers
from scenarios.water import EPSResult, build_water, read_inp, simulate_eps

DATA = Path(__file__).parent / "data" / "water"
DAY = 86400


def _reference(name: str) -> list:
    return json.loads((DATA / f"eps_{name}.json").read_text())["steps"]


@pytest.fixture(scope="module")
def runs() -> dict:
    """One 24 h run per network (the compile is the slow part)."""
    return {name: simulate_eps(read_inp(DATA / f"{name}.inp"), duration=DAY)
            for name in ("Net1", "Net2", "Net3")}


def _deviations(result: EPSResult, steps: list) -> tuple[float, float, float]:
    """Max |d level|, |d head|, |d flow| over the steps of the reference."""
    def worst(table, key):
        return max(abs(table[k][i] - s[key][k]) for i, s in enumerate(steps) for k in s[key])
    return (worst(result.tank_levels, "tank_levels"), worst(result.heads, "heads"),
            worst(result.flows, "flows"))


@pytest.mark.parametrize("name, level, head, flow", [
    ("Net1_tight", 1e-7, 1e-7, 1e-9),
    ("Net2_tight", 2e-6, 5e-6, 2e-7),
    ("Net3_tight", 2e-6, 1e-5, 2e-7),
    ("Net1", 1e-5, 1e-3, 1e-6),
])
def test_matches_epanet(runs, name, level, head, flow):
    result, steps = runs[name.split("_")[0]], _reference(name)
    assert result.times.tolist() == [s["time"] for s in steps]
    assert bool(np.all(result.converged))
    for k in steps[0]["status"]:
        assert result.status[k].tolist() == [s["status"][k] for s in steps], k
    d_level, d_head, d_flow = _deviations(result, steps)
    assert d_level < level and d_head < head and d_flow < flow, (d_level, d_head, d_flow)


def test_step_events_net1(runs):
    """Pump 9 stops when tank 2 reaches 140 ft (line 69) and restarts at 110 ft (line 68),
    each between two report times: EPANET's controltimestep."""
    r = runs["Net1"]
    events = {int(t): e for t, e in zip(r.times, r.step_ends) if e != "hydraulic step"}
    assert events == {43200: "control on line 69", 45154: "report time",
                      79200: "control on line 68", 81690: "report time", DAY: "end"}
    assert r.status["9"][r.times.tolist().index(45154)] == 0
    assert r.flows["9"][r.times.tolist().index(45154)] == 0.0


def test_report_grid_and_json(runs):
    r = runs["Net1"]
    report = r.report()
    assert report.times.tolist() == list(range(0, DAY + 1, 3600))
    doc = r.to_json()
    assert doc["analysis"] == "eps" and doc["time"] == report.times.tolist()
    assert set(doc["tank_levels"]) == {"2"} and len(doc["heads"]["10"]) == 25
    json.dumps(doc)


def test_report_start_between_hydraulic_times():
    """REPORT START 0:30 with 1 h steps: each report shows the last solution before it."""
    net = dataclasses.replace(read_inp(DATA / "Net1.inp"), report_start_s=1800)
    r = simulate_eps(net, duration=3 * 3600)
    report = r.report()
    assert report.times.tolist() == [1800, 5400, 9000]
    assert report.heads["10"].tolist() == r.heads["10"][:3].tolist()
    assert r.times.tolist() == [0, 3600, 7200, 10800]


def test_report_start_after_the_end_reports_from_zero():
    """As EPANET (adjustdata): REPORT START beyond the duration falls back to 0, never an
    empty report."""
    net = dataclasses.replace(read_inp(DATA / "Net1.inp"), report_start_s=30 * 3600)
    r = simulate_eps(net, duration=2 * 3600)
    assert r.report().times.tolist() == [0, 3600, 7200]


def test_hydraulic_step_override():
    net = read_inp(DATA / "Net1.inp")
    r = simulate_eps(net, duration=4 * 3600, hydraulic_step=1800)
    assert r.times.tolist() == list(range(0, 4 * 3600 + 1, 1800))
    assert r.report().times.tolist() == [0, 3600, 7200, 10800, 14400]


def _net1(*edits) -> str:
    """Net1's text with ``[old, new]`` replacements."""
    text = (DATA / "Net1.inp").read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    return text


@pytest.mark.parametrize("text, match", [
    (_net1(["[RULES]", "[RULES]\nRULE 1\nIF TANK 2 LEVEL ABOVE 140\nTHEN PUMP 9 STATUS IS "
                       "CLOSED"]), "rule-based"),
    (_net1([" Duration           \t24:00", " Duration           \t0:00"]), "DURATION 0"),
    (_net1(["50.5        \t0", "0        \t0"]), "diameter 0 and no volume curve"),
])
def test_refuses_what_is_not_modelled(text, match):
    with pytest.raises(ValueError, match=match):
        simulate_eps(read_inp(text))


@pytest.mark.parametrize("kwargs, match", [
    ({"hydraulic_step": -60}, "hydraulic_step must be a whole number of seconds >= 1, got -60"),
    ({"hydraulic_step": 0.4}, "hydraulic_step must be a whole number"),
    ({"duration": -5}, "duration must be a whole number of seconds >= 1, got -5"),
    ({"duration": float("nan")}, "duration must be a whole number"),
    ({"duration": "abc"}, "duration must be a whole number"),
])
def test_refuses_bad_times(kwargs, match):
    with pytest.raises(ValueError, match=match):
        simulate_eps(read_inp(DATA / "Net1.inp"), **kwargs)


def test_refuses_what_is_not_a_water_network():
    net = read_inp(DATA / "Net1.inp")
    with pytest.raises(TypeError, match="WaterNetwork from read_inp.*pass model.network"):
        simulate_eps(build_water(net))
    with pytest.raises(TypeError, match="got str"):
        simulate_eps("Net1.inp")


def test_a_step_that_does_not_converge_says_when_and_what_to_try():
    net = read_inp(DATA / "Net1.inp")
    with pytest.raises(solvers.SolveError, match=r"t = 0 s \(0:00:00\).*max_steps_reached.*"
                       r"method=solvers.Default\(\)") as err:
        simulate_eps(net, duration=7200, method=solvers.Newton(max_steps=1))
    assert err.value.code is solvers.RESULTS.max_steps_reached


@pytest.mark.parametrize("name, held", [
    ("Net1_full_tank", {"110": (57153, DAY)}),   # tank 2 full: pipe 110 held closed
    ("Net1_xhead", {"9": (0, 3600)}),            # pump 9 above its shutoff head (XHEAD)
    ("Net1_cv", {"110": (0, DAY)}),              # pipe 110 a check valve against the tank
    ("Net1_volume_curve", {"9": (62104, DAY)}),  # tank 2 by a volume curve; control at 140 ft
    ("Net1_patterns", {"111": (54000, 68400)}),  # pump speed and reservoir head patterns,
    #                                              111 closed at 3 PM, open at 19:30
    ("Net1_pressure", {"9": (43200, 75600)}),    # pump 9 by the pressure at junction 12
])
def test_edited_net1_matches_epanet(name, held):
    """EPANET's status checks (``linkstatus``), a tank volume curve, pump-speed and reservoir
    patterns with clock-time controls, pressure controls (``pswitch``), on edited copies of
    Net1 (the JSON holds the edits).
    Measured at most: levels 8.7e-9 m, heads 1.3e-8 m, flows 2.7e-10 m3/s."""
    doc = json.loads((DATA / f"eps_{name}_tight.json").read_text())
    result = simulate_eps(read_inp(_net1(*doc["edits"])))
    steps = doc["steps"]
    assert result.times.tolist() == [s["time"] for s in steps]
    for k in steps[0]["status"]:
        assert result.status[k].tolist() == [s["status"][k] for s in steps], k
    for link, (start, end) in held.items():
        closed = result.times[result.status[link] == 0]
        assert closed[0] == start and closed[-1] == end
    d_level, d_head, d_flow = _deviations(result, steps)
    assert d_level < 1e-7 and d_head < 1e-7 and d_flow < 1e-8, (d_level, d_head, d_flow)


_PRESSURE_CONTROL = """[JUNCTIONS]
 J1 0 5
 J2 0 5
[RESERVOIRS]
 R1 100
[PIPES]
 P1 R1 J1 1000 200 100
 P2 J1 J2 500 150 100
 P3 R1 J2 5000 100 100
[CONTROLS]
 LINK P2 CLOSED IF NODE J1 ABOVE {level}
[OPTIONS]
 Units {units}
 Specific Gravity {gravity}
 {pressure}
[TIMES]
 Duration 1
[END]
"""


@pytest.mark.parametrize("units, gravity, level, pressure, status", [
    ("LPS", 1.5, 120, "", 0),               # 120 m at SG 1.5: grade 80 m, J1 at 99.1 m
    ("LPS", 1.0, 120, "", 1),               # grade 120 m: stays open
    ("LPS", 1.0, 900, "Pressure KPA", 0),   # 900 kPa: grade 91.8 m
    ("GPM", 1.0, 40, "Pressure Meters", 0),  # US units: psi whatever PRESSURE says, 92.3 ft
])
def test_pressure_control_levels_in_the_files_pressure_units(units, gravity, level, pressure,
                                                             status):
    """EPANET's ``initunits``: ``Ucf[PRESSURE]`` is psi x SG for US flow units (the PRESSURE
    option only matters for SI ones) and m x SG or kPa x SG for SI; SG scaled psi and kPa
    only, and US files took the PRESSURE option (both controls stayed open)."""
    net = read_inp(_PRESSURE_CONTROL.format(units=units, gravity=gravity, level=level,
                                            pressure=pressure))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert simulate_eps(net).status["P2"].tolist() == [status, status]


@pytest.mark.parametrize("name, link", [("Net1_xhead", "9"), ("Net1_cv", "110")])
def test_snapshot_closes_what_epanet_closes_at_t0(name, link):
    """The single-period solve applies the same status checks: pump 9 above its shutoff
    head, check valve 110 against the tank (before, both stayed open with reverse flow)."""
    doc = json.loads((DATA / f"eps_{name}_tight.json").read_text())
    step = doc["steps"][0]
    result = build_water(read_inp(_net1(*doc["edits"]))).solve()
    assert result.closed == (link,) and step["status"][link] == 0
    assert all(result.status(k) == v for k, v in step["status"].items())
    assert max(abs(result.head(k) - v) for k, v in step["heads"].items()) < 1e-6
    assert max(abs(result.flow(k) - v) for k, v in step["flows"].items()) < 1e-8


def test_cli_eps_writes_the_report_grid(capsys, tmp_path):
    from scenarios import _cli
    out = tmp_path / "eps.json"
    code = _cli.main(["--no-compile-cache", "run", "water", "--eps", "--json", str(out)])
    text = capsys.readouterr().out
    assert code == 0 and "extended period" in text and "control on line 69" in text
    doc = json.loads(out.read_text())
    assert doc["analysis"] == "eps" and doc["time"][-1] == DAY and len(doc["time"]) == 25
    assert doc["tank_levels"]["2"][0] == pytest.approx(120 * 0.3048)
    end = _reference("Net1")[-1]  # EPANET's level after 24 h of filling and draining
    assert end["time"] == DAY
    assert doc["tank_levels"]["2"][-1] == pytest.approx(end["tank_levels"]["2"], abs=1e-5)
    assert set(doc["heads"]) >= {"10", "9", "2"} and "9" in doc["flows"]


@pytest.mark.parametrize("argv, fragment", [
    (["run", "truss", "--eps"], "--eps is for the water scenario only"),
    (["run", "water", "--eps", "--sweep", "demand_multiplier=1:2:2"], "do not combine"),
])
def test_cli_eps_misuse(capsys, argv, fragment):
    from scenarios import _cli
    code = _cli.main(["--no-compile-cache", *argv])
    err = capsys.readouterr().err
    assert code == 2 and fragment in err and "Traceback" not in err


def test_cli_reports_a_failed_step_without_a_traceback(capsys, monkeypatch):
    from scenarios import _cli
    from scenarios.water import _run

    def fail(*args, **kwargs):
        raise solvers.SolveError("the hydraulic solve at t = 3600 s (1:00:00) did not converge")
    monkeypatch.setattr(_run, "eps_report", fail)
    code = _cli.main(["--no-compile-cache", "run", "water", "--eps"])
    err = capsys.readouterr().err
    assert code == 1 and "t = 3600 s" in err and "Traceback" not in err


# EPANET writes an empty [TITLE] section; many hand-written files have none at all.
_UNTITLED = """[TITLE]

[JUNCTIONS]
 J1 0 10
[RESERVOIRS]
 R1 100
[PIPES]
 P1 R1 J1 1000 300 100
[OPTIONS]
 Units LPS
"""


@pytest.mark.parametrize("text", [_UNTITLED, _UNTITLED.replace("[TITLE]\n\n", "")])
def test_untitled_network_with_duration_0_is_refused_by_message(text):
    with pytest.raises(ValueError, match=r"network '\(untitled\)' has DURATION 0"):
        simulate_eps(read_inp(text))


def test_cli_eps_on_an_untitled_network(capsys, tmp_path):
    from scenarios import _cli
    path = tmp_path / "untitled.inp"
    path.write_text(_UNTITLED)
    code = _cli.main(["--no-compile-cache", "run", "water", "--eps", "--input", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and "DURATION 0" in err and "Traceback" not in err
    path.write_text(_UNTITLED + "[TIMES]\n Duration 1:00\n")
    code = _cli.main(["--no-compile-cache", "run", "water", "--eps", "--input", str(path)])
    out = capsys.readouterr().out
    assert code == 0 and "'untitled'" in out and "extended period" in out
