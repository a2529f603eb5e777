"""EPANET .inp reader: the validation networks, units, t = 0 statuses and controls, errors."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from scenarios.water import FLOW_UNITS, FormatError, power_curve_fit, read_inp

DATA = Path(__file__).parent / "data" / "water"
NETWORKS = ["Net1", "Net2", "Todini_Fig2_solA_CMH"]
FT, GPM = 0.3048, 3.785411784e-3 / 60.0
HP = 745.69987158227022


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-300)


@pytest.fixture(params=NETWORKS)
def case(request):
    name = request.param
    return read_inp(DATA / f"{name}.inp"), json.loads((DATA / f"{name}.json").read_text())


def test_nodes_match_json(case) -> None:
    net, ref = case
    assert [j.name for j in net.junctions] == [j["name"] for j in ref["junctions"]]
    for j, r in zip(net.junctions, ref["junctions"]):
        assert close(j.elevation, r["elevation"]) and close(j.demand, r["demand"])
        assert [close(d.base, c["base"]) and d.multiplier_t0 == c["multiplier_t0"]
                for d, c in zip(j.demands, r["base_demands"])] == [True] * len(r["base_demands"])
    assert [(r.name, round(r.head, 9)) for r in net.reservoirs] == [
        (r["name"], round(r["head"], 9)) for r in ref["reservoirs"]]
    assert len(net.tanks) == len(ref["tanks"])
    for t, r in zip(net.tanks, ref["tanks"]):
        for key in ("elevation", "init_level", "min_level", "max_level", "diameter", "head"):
            assert close(getattr(t, key), r[key]), key


def test_links_match_json(case) -> None:
    net, ref = case
    assert [p.name for p in net.pipes] == [p["name"] for p in ref["pipes"]]
    for p, r in zip(net.pipes, ref["pipes"]):
        assert (p.start, p.end, p.check_valve) == (r["start"], r["end"], r["check_valve"])
        assert close(p.length, r["length"]) and close(p.diameter, r["diameter"])
        assert p.roughness == r["roughness_C"] and p.minor_loss == r["minor_loss_K"]
        assert (p.initial_status, p.status_t0) == (r["initial_status"], r["status_t0"])
    assert len(net.pumps) == len(ref["pumps"])
    for p, r in zip(net.pumps, ref["pumps"]):
        assert (p.name, p.pump_type, p.curve_model, p.speed_t0) == (
            r["name"], r["pump_type"], r["curve_model"], r["speed"])
        assert all(close(a, b) for a, b in zip((p.A, p.B, p.C), (r["A"], r["B"], r["C"])))
        assert all(close(x, y) for pt, rp in zip(p.curve_points, r["curve_points"])
                   for x, y in zip(pt, rp))
        assert (p.initial_status, p.status_t0) == (r["initial_status"], r["status_t0"])


def test_units_and_constants_match_json(case) -> None:
    net, ref = case
    assert net.flow_units in ref["source"] and net.headloss == ref["headloss_formula"]
    assert net.demand_multiplier == ref["demand_multiplier"]
    ratio = ref["constants"]["epanet"]["flow_ratio_q_internal_over_q_physical"]
    assert math.isclose(net.units.epanet_flow_ratio, ratio, rel_tol=1e-14)


def inp(**sections: str) -> str:
    """An .inp text from section bodies (keyword = section name)."""
    return "".join(f"[{name}]\n{body.strip()}\n\n" for name, body in sections.items()) + "[END]\n"


CONTROLLED = inp(
    TITLE="Controlled network\nsecond title line",
    JUNCTIONS="J1 100 10 P1\nJ2 90 20\nJ3 80 5 P2 ; comment",
    RESERVOIRS="R1 200 HP",
    TANKS="T1 150 13.1 0.1 32.1 50 0\nTR 123",
    PIPES="P1 R1 J1 1000 12 130\nP2 J1 J2 1000 10 130 0.5\nP3 J2 T1 500 8 120 CV\n"
          "P330 J2 J3 1 30 140 0 Closed\nP4 J3 T1 100 6 100 2 Open\nP5 TR J1 10 6 100",
    PUMPS="PU1 R1 J2 HEAD C3 SPEED 1.2\nPU2 R1 J3 POWER 50 PATTERN SP",
    DEMANDS="J2 30 P1 ; replaces the [JUNCTIONS] demand\nJ2 4\nT1 99",
    STATUS="PU1 OPEN\nP4 CLOSED",
    PATTERNS="1 2.0 3.0\nP1 0.5 0.7\nP1 0.9\nP2 1.5\nHP 1.1 1.2\nSP 1 0",
    CURVES="C3 0 104\nC3 2000 92\nC3 4000 63",
    CONTROLS="LINK P330 OPEN IF NODE T1 BELOW 17.1\nLINK P4 OPEN AT TIME 0\n"
             "LINK PU1 CLOSED AT TIME 1\nLINK PU2 1.5 AT CLOCKTIME 6 AM\n"
             "LINK P2 CLOSED IF NODE J1 BELOW 10\nLINK P1 CLOSED IF NODE R1 ABOVE 500\n"
             "LINK P5 CLOSED IF NODE T1 ABOVE 20",
    RULES="RULE 1\nIF TANK T1 LEVEL > 20\nTHEN PUMP PU1 STATUS IS CLOSED",
    TIMES="Duration 24:00\nPattern Timestep 2:00\nPattern Start 2:00\nStart ClockTime 6 AM",
    OPTIONS="Units GPM\nHeadloss H-W\nDemand Multiplier 1.5\nPattern 1\nQuality None mg/L",
    COORDINATES="J1 1 2", REPORT="Status Yes", ENERGY="Global Efficiency 75",
)


def test_patterns_demands_and_heads_at_t0() -> None:
    net = read_inp(CONTROLLED)
    assert net.title == "Controlled network\nsecond title line"
    assert (net.pattern_step_s, net.pattern_start_s, net.start_clocktime_s) == (7200, 7200, 21600)
    demand = {j.name: j.demand / GPM for j in net.junctions}      # period 1 of every pattern
    assert demand == pytest.approx({"J1": 10 * 0.7 * 1.5, "J2": (30 * 0.7 + 4 * 3.0) * 1.5,
                                    "J3": 5 * 1.5 * 1.5}, rel=1e-12)
    assert [d.pattern for d in net.junctions[1].demands] == ["P1", "1"]
    assert net.patterns["P1"] == (0.5, 0.7, 0.9)
    assert [(r.name, r.head / FT) for r in net.reservoirs] == [
        ("R1", pytest.approx(240.0)), ("TR", pytest.approx(123.0))]
    tank = net.tanks[0]
    assert tank.head == pytest.approx((150 + 13.1) * FT) and tank.diameter == 50 * FT
    assert net.rules[0] == "RULE 1"


def test_statuses_and_controls_at_t0() -> None:
    net = read_inp(CONTROLLED)
    pipes = {p.name: p for p in net.pipes}
    assert (pipes["P2"].minor_loss, pipes["P4"].minor_loss) == (0.5, 2.0)
    assert pipes["P3"].check_valve and pipes["P3"].status_t0 == "OPEN"
    assert {k: (p.initial_status, p.status_t0) for k, p in pipes.items()} == {
        "P1": ("OPEN", "CLOSED"),     # EPANET: a reservoir-level control always fires
        "P2": ("OPEN", "OPEN"),       # junction-pressure control: decided after solving
        "P3": ("OPEN", "OPEN"), "P330": ("CLOSED", "OPEN"), "P4": ("CLOSED", "OPEN"),
        "P5": ("OPEN", "OPEN")}       # 13.1 ft is not above 20 ft
    assert [c.applied_t0 for c in net.controls] == [True, True, False, True, False, True, False]
    assert net.controls[3].kind == "clocktime" and net.controls[3].time_s == 6 * 3600
    pu1, pu2 = net.pumps
    assert (pu1.speed, pu1.speed_t0, pu1.status_t0) == (1.0, 1.0, "OPEN")   # STATUS OPEN -> 1
    assert pu1.curve_model == "power" and pu1.A == pytest.approx(104 * FT)
    h0, h1, h2, q1, q2 = 104 * FT, 92 * FT, 63 * FT, 2000 * GPM, 4000 * GPM
    c = math.log((h0 - h2) / (h0 - h1)) / math.log(q2 / q1)
    assert (pu1.B, pu1.C) == (pytest.approx((h0 - h1) / q1**c, rel=1e-12),
                              pytest.approx(c, rel=1e-12))
    assert pu2.pump_type == "POWER" and pu2.power == pytest.approx(50 * HP)
    assert (pu2.initial_status, pu2.status_t0, pu2.speed_t0) == ("OPEN", "OPEN", 1.5)


def test_speed_pattern_zero_and_status_closed_close_pumps() -> None:
    text = CONTROLLED.replace("LINK PU2 1.5 AT CLOCKTIME 6 AM", "LINK PU2 1.5 AT CLOCKTIME 7 AM")
    text = text.replace("PU1 OPEN", "PU1 CLOSED")
    pu1, pu2 = read_inp(text).pumps
    assert (pu1.initial_status, pu1.status_t0, pu1.speed_t0) == ("CLOSED", "CLOSED", 0.0)
    assert (pu2.status_t0, pu2.speed_t0) == ("CLOSED", 0.0)       # pattern value 0 at t = 0


SI_NET = inp(JUNCTIONS="A 10 2.5", RESERVOIRS="S 50", TANKS="T 20 2 1 5 10 3.5",
             PIPES="L1 S A 250 300 0.26\nL2 A T 10 150 0.1 1.5 CV",
             PUMPS="PU S T HEAD K SPEED 0.9", CURVES="K 0 60\nK 10 50\nK 20 30\nK 30 0",
             OPTIONS="Units LPS\nHeadloss D-W")


def test_status_ranges_speed_settings_disabled_controls_and_latin1(tmp_path: Path) -> None:
    text = inp(JUNCTIONS="1 5\n2 5\n3 5", RESERVOIRS="R 50 ; Réservoir",
               PIPES="10 R 1 100 8 100\n11 1 2 100 8 100\n12 2 3 100 8 100",
               PUMPS="20 R 3 POWER 5 SPEED 0.8", STATUS="10 12 CLOSED\n20 1.25",
               CONTROLS="LINK 11 OPEN AT TIME 0 DISABLED\nLINK 20 0 AT TIME 0:00")
    path = tmp_path / "latin1.inp"
    path.write_bytes(text.encode("latin-1"))
    net = read_inp(path)
    assert [p.status_t0 for p in net.pipes] == ["CLOSED"] * 3     # 11 is in the range 10-12
    pump = net.pumps[0]
    assert (pump.speed, pump.initial_status, pump.status_t0, pump.speed_t0) == (
        1.25, "OPEN", "CLOSED", 0.0)
    assert [c.applied_t0 for c in net.controls] == [False, True]


def test_si_units_darcy_weisbach_and_custom_curves() -> None:
    net = read_inp(SI_NET)
    assert net.units.is_us is False and net.headloss == "D-W"
    assert net.junctions[0].demand == pytest.approx(2.5e-3)
    assert net.tanks[0].min_volume == 3.5 and net.tanks[0].diameter == 10.0
    l1, l2 = net.pipes
    assert (l1.length, l1.diameter, l1.roughness) == (250.0, 0.3, pytest.approx(0.26e-3))
    assert (l2.minor_loss, l2.check_valve) == (1.5, True)
    pump = net.pumps[0]
    assert pump.curve_model == "custom" and pump.A is None and pump.speed_t0 == 0.9
    assert pump.curve_points[1] == (pytest.approx(0.01), 50.0)


@pytest.mark.parametrize("units, factor, length", [
    ("CFS", 0.028316846592, FT), ("GPM", 6.30901964e-05, FT),
    ("MGD", 0.043812636388888886, FT), ("IMGD", 0.052616782407407406, FT),
    ("AFD", 43560 * 0.028316846592 / 86400, FT), ("LPS", 1e-3, 1.0), ("LPM", 1e-3 / 60, 1.0),
    ("MLD", 1e3 / 86400, 1.0), ("CMH", 1 / 3600, 1.0), ("CMD", 1 / 86400, 1.0),
])
def test_every_flow_unit(units: str, factor: float, length: float) -> None:
    net = read_inp(inp(JUNCTIONS="J 10 1", RESERVOIRS="R 20", PIPES="P R J 100 8 100",
                       OPTIONS=f"Units {units}"))
    assert FLOW_UNITS[units] == pytest.approx(factor, rel=1e-12)
    assert net.junctions[0].demand == pytest.approx(factor, rel=1e-12)
    assert net.junctions[0].elevation == pytest.approx(10 * length)
    assert net.pipes[0].diameter == pytest.approx(8 * (0.0254 if length == FT else 1e-3))


def test_power_curve_fit_one_point_is_epanets() -> None:
    a, b, c = power_curve_fit(((0.1, 50.0),))
    assert a == 1.33334 * 50.0
    assert a - b * 0.1**c == pytest.approx(50.0) and a - b * 0.2**c == pytest.approx(0.0, abs=1e-9)
    assert power_curve_fit(((0.0, 5.0), (1.0, 4.0))) is None


ERRORS = [
    ("[JUNCTIONS]\nJ 1\n[FOO]\nx", 3, "unknown section [FOO]"),
    ("[JUNCTIONS]\nJ 1\n[VALVES]\nV1 J J 12 PRV 50", 4, "[VALVES] is not empty"),
    ("[JUNCTIONS]\nJ 1\n[EMITTERS]\nJ 0.5", 4, "emitters are not supported"),
    ("[JUNCTIONS]\nJ abc", 2, "bad number 'abc'"),
    ("[JUNCTIONS]\nJ 1\nK 2\n[PIPES]\nP J K 100 8", 5, "needs length, diameter and roughness"),
    ("[JUNCTIONS]\nJ 1\n[PIPES]\nP J X 100 8 100", 4, "unknown node 'X'"),
    ("[JUNCTIONS]\nJ 1\n[RESERVOIRS]\nJ 5", 4, "duplicate node id 'J'"),
    ("[JUNCTIONS]\nJ 1 5 NOPAT", 2, "pattern 'NOPAT' is not defined"),
    ("[JUNCTIONS]\nJ 1\n[RESERVOIRS]\nR 5\n[PUMPS]\nP R J HEAD C9", 6, "'C9' of pump 'P' is not"),
    ("[JUNCTIONS]\nJ 1\n[RESERVOIRS]\nR 5\n[PUMPS]\nP R J SPEED 1", 6, "neither a HEAD"),
    ("[JUNCTIONS]\nJ 1\n[RESERVOIRS]\nR 5\n[PUMPS]\nP R J HEAD C\n[CURVES]\nC 0 10\nC 5 20\n"
     "C 9 5", 6, "cannot be fitted"),
    ("[OPTIONS]\nUnits FOO", 2, "unknown flow units 'FOO'"),
    ("[OPTIONS]\nFlux 3", 2, "unknown option 'Flux'"),
    ("[OPTIONS]\nUnits LPS\nDemand Model PDA\nRequired Pressure 40", 3,
     "pressure-driven demand (DEMAND MODEL PDA) is not modelled"),
    ("[OPTIONS]\nDemand Model XDA", 2, "unknown demand model 'XDA'"),
    ("[TANKS]\nT 1 5 0 9 10 0 * MAYBE", 2, "overflow flag 'MAYBE' of tank 'T' is not YES or NO"),
    ("[TANKS]\nT 1 5 0 9 10 0 * YES extra", 2, "the 9th (overflow flag) is the last"),
    ("[JUNCTIONS]\nJ 1\nK 2\n[PIPES]\nP J K 100 8 100 CV\n[STATUS]\nP CLOSED", 7, "check-valve"),
    ("[JUNCTIONS]\nJ 1\nK 2\n[PIPES]\nP J K 100 8 100\n[CONTROLS]\nLINK Q OPEN AT TIME 1", 7,
     "unknown link 'Q'"),
    ("[JUNCTIONS]\nJ 1\nK 2\n[PIPES]\nP J K 100 0 100", 5, "diameter of pipe 'P' is 0"),
    ("[TANKS]\nT 1 9 0 5 10", 2, "initial level 9 is not between"),
    ("J 1\n[JUNCTIONS]", 1, "data before the first"),
    ("[RESERVOIRS]\nR 10\n[TANKS]\nT 1 5 0 9 10", 2, "the file defines no junction"),
    ("[JUNCTIONS]\nJ 1\n[RESERVOIRS]\nR 5\n[PUMPS]\nP R J HEAD C\n[CURVES]\nC 10 50\nC 20 60\n"
     "C 30 10\nC 40 0", 6, "heads that do not fall"),
    ("[OPTIONS]\nUnits LPS\nRQTOL abc", 3, "bad number 'abc' for RQTOL"),
    ("[OPTIONS]\nRQTOL 0", 2, "RQTOL is 0, it must be > 0"),
    ("[OPTIONS]\nRQTOL 1.5", 2, "RQTOL is 1.5, it must be < 1"),
    ("[OPTIONS]\nSpecific Gravity x", 2, "bad number 'x' for SPECIFIC GRAVITY"),
]


@pytest.mark.parametrize("text, line, words", ERRORS, ids=[e[2] for e in ERRORS])
def test_malformed_inp_names_file_line_and_problem(tmp_path: Path, text: str, line: int,
                                                   words: str) -> None:
    path = tmp_path / "bad.inp"
    path.write_text(text + "\n")
    with pytest.raises(FormatError) as info:
        read_inp(path)
    assert (info.value.path, info.value.line) == (str(path), line)
    assert str(info.value).startswith(f"{path}:{line}: ") and words in str(info.value)


def test_truncated_file_is_reported_at_the_cut_line(tmp_path: Path) -> None:
    lines = (DATA / "Net1.inp").read_text().splitlines()
    cut = next(i for i, text in enumerate(lines) if text.split()[:3] == ["12", "12", "13"])
    path = tmp_path / "Net1_cut.inp"
    path.write_text("\n".join(lines[:cut]) + "\n 12   12  13  5280\n")
    with pytest.raises(FormatError, match=rf"Net1_cut.inp:{cut + 1}: pipe '12' needs length"):
        read_inp(path)


TANK_AND_OPTIONS = inp(
    JUNCTIONS="J1 0 5", RESERVOIRS="R1 50",
    TANKS="T1 0 20 0 20 10 0 * YES\nT2 0 5 0 20 10 0 * no\nT3 0 5 0 20 10",
    PIPES="P1 R1 J1 100 200 100\nP2 J1 T1 100 200 100\nP3 J1 T2 100 200 100\n"
          "P4 J1 T3 100 200 100",
    OPTIONS="Units LPS\nDemand Model DDA\nMinimum Pressure 0\nRequired Pressure 40\n"
            "Pressure Exponent 0.5")


def test_overflow_flag_and_demand_driven_options_are_read() -> None:
    """The 9th [TANKS] field (after '*' for no volume curve) sets can_overflow; DDA and the
    pressure options (which EPANET ignores under DDA) are accepted."""
    net = read_inp(TANK_AND_OPTIONS)
    assert [(t.name, t.can_overflow, t.volume_curve) for t in net.tanks] == [
        ("T1", True, None), ("T2", False, None), ("T3", False, None)]
    assert net.options["DEMAND MODEL"] == "DDA" and net.options["REQUIRED PRESSURE"] == "40"
    assert net.junctions[0].demand == pytest.approx(0.005, rel=1e-12)
