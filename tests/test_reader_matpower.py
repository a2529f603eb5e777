"""MATPOWER case reader and validation-JSON reader: data, PYPOWER conventions, errors."""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest

from scenarios.powerflow import FormatError, read_case_json, read_matpower

DATA = Path(__file__).parent / "data" / "acpf"


@pytest.mark.parametrize("case", ["case9", "case14", "case30"])
def test_m_file_matches_json(case: str) -> None:
    m = read_matpower(DATA / f"{case}.m")
    j = read_case_json(DATA / f"{case}.json")
    assert (m.name, m.base_mva, m.notes) == (case, j.base_mva, ())
    assert len(m.buses) == len(j.buses) and len(m.branches) == len(j.branches)
    for a, b in zip(m.buses + m.branches + m.generators, j.buses + j.branches + j.generators):
        for field in dataclasses.fields(a):
            if field.name in ("rate_a", "Qmax", "Qmin"):  # the validation JSON has no limits
                continue
            if field.name in ("Vm0", "Va0_deg"):   # the case's own voltages: only in the .m
                assert getattr(a, field.name) is not None and getattr(b, field.name) is None
                continue
            x, y = getattr(a, field.name), getattr(b, field.name)
            if isinstance(y, float):
                y = pytest.approx(y, rel=1e-12, abs=1e-15)
            assert x == y, (a, field.name)


def test_json_reader_keeps_reference_fields() -> None:
    raw = json.loads((DATA / "case89pegase.json").read_text())
    case = read_case_json(DATA / "case89pegase.json")
    assert (len(case.buses), len(case.branches)) == (89, 210)
    assert int(np.sum(case.branch_array("shift_deg") != 0.0)) == 3
    assert int(np.sum(case.branch_array("tap") != 1.0)) == 32
    slack = [b for b in case.buses if b.type == "slack"]
    assert len(slack) == 1 and slack[0].Pg is None and slack[0].Vset is not None
    assert case.bus(raw["buses"][5]["id"]).Pd == raw["buses"][5]["Pd"]
    assert case.branch_array("from_index").dtype.kind == "i"
    assert case.bus_array("type").tolist().count("slack") == 1
    assert np.isnan(case.bus_array("Qg")[case.bus_array("Vset") == case.bus_array("Vset")]).all()


FEATURES = """\
function mpc = feature_case
%% a case exercising the syntax subset
mpc.version = '2';
mpc.baseMVA = 50;
mpc.bus = [
  1 3 0 0 0 0 1 1.02 5 230 1 1.1 0.9;   % slack at 5 degrees
  2, 2, 20, 10, 0, 0, 1, 1, 0, 230, 1, 1.1, 0.9;
  3 2 30 15 1 2 1 1 0 230 1 1.1 0.9 ; 4 1 10 5 0 -5 1 1 0 ...
     230 1 1.1 0.9
  5 4 0 0 0 0 1 1 0 230 1 1.1 0.9
];
mpc.gen = [
  1 0 0 100 -100 1.02 100 1 200 0;
  2 20 5 100 -100 1.01 100 1 200 0;
  2 10 3 100 -100 1.03 100 1 200 0;
  3 40 0 100 -100 1.0 100 0 200 0;
  4 5 2 100 -100 1.0 100 1 200 0;
  5 5 2 100 -100 1.0 100 1 200 0;
];
mpc.branch = [
  1 2 0.01 0.1 0.02 0 0 0 0 0 1 -360 360;
  2 3 0.01 -0.05 0 0 0 0 0.95 -3 1 -360 360;
  3 4 0.02 0.2 0 0 0 0 1 0 1 -360 360;
  1 4 0.02 0.2 0 0 0 0 0 0 0 -360 360;
  4 5 0.02 0.2 0 0 0 0 0 0 1 -360 360;
];
mpc.gencost = [2 0 0 3 0.1 1 0];
mpc.bus_name = { 'one'; 'two; [not data]'; 'three'; 'four'; 'five' };
"""


def test_feature_case_follows_pypower_conventions() -> None:
    case = read_matpower(FEATURES)
    assert case.name == "feature_case" and case.base_mva == 50.0
    assert [(b.id, b.type) for b in case.buses] == [(1, "slack"), (2, "PV"), (3, "PQ"),
                                                    (4, "PQ")]
    slack, pv, pq3, pq4 = case.buses
    assert (slack.Pg, slack.Qg, slack.Vset, slack.Va_set_deg) == (None, None, 1.02, 5.0)
    assert (pv.Pg, pv.Qg, pv.Vset, pv.n_generators) == (pytest.approx(0.6), None, 1.03, 2)
    assert (pq3.Pg, pq3.Qg, pq3.Vset, pq3.Gs, pq3.Bs) == (0.0, 0.0, None, 0.02, 0.04)
    assert (pq4.Pd, pq4.Pg, pq4.Qg, pq4.Bs) == (0.2, 0.1, 0.04, -0.1)
    assert [(br.from_bus, br.to_bus, br.from_index, br.to_index) for br in case.branches] == [
        (1, 2, 0, 1), (2, 3, 1, 2), (3, 4, 2, 3)]
    line, xfmr, unit_tap = case.branches
    assert (line.tap, line.is_transformer, line.b) == (1.0, False, 0.02)
    assert (xfmr.x, xfmr.tap, xfmr.shift_deg, xfmr.is_transformer) == (-0.05, 0.95, -3.0, True)
    assert (unit_tap.tap, unit_tap.is_transformer) == (1.0, True)
    assert len(case.generators) == 4
    assert any("isolated" in n for n in case.notes)
    assert any("bus 3 (PV) has no in-service generator" in n for n in case.notes)
    assert any("1 out-of-service branch" in n for n in case.notes)
    assert any("1 out-of-service generator" in n for n in case.notes)


def test_first_pv_bus_becomes_slack_when_the_slack_has_no_generator() -> None:
    text = FEATURES.replace("  1 0 0 100 -100 1.02 100 1 200 0;", "  1 0 0 100 -100 1.02 100 0 200 0;")
    case = read_matpower(text)
    assert [b.type for b in case.buses[:2]] == ["PQ", "slack"]
    assert case.buses[1].Va_set_deg == 0.0 and case.buses[1].Pg is None


BUS = "mpc.bus = [\n 1 3 0 0 0 0 1 1 0 230 1 1.1 0.9;\n 2 1 10 5 0 0 1 1 0 230 1 1.1 0.9;\n];\n"
GEN = "mpc.gen = [\n 1 0 0 100 -100 1 100 1 200 0;\n];\n"
BRANCH = "mpc.branch = [\n 1 2 0.01 0.1 0 0 0 0 0 0 1 -360 360;\n];\n"
HEAD = "function mpc = bad\nmpc.version = '2';\nmpc.baseMVA = 100;\n"


def test_minimal_case_reads() -> None:
    case = read_matpower(HEAD + BUS + GEN + BRANCH)
    assert [b.type for b in case.buses] == ["slack", "PQ"] and len(case.branches) == 1


@pytest.mark.parametrize("variant", ["double-quoted version", "BOM before the text"])
def test_case_text_as_editors_and_newer_matlab_write_it(variant: str) -> None:
    text = HEAD + BUS + GEN + BRANCH
    text = (text.replace("'2'", '"2"') if variant == "double-quoted version"
            else "\ufeff" + text)
    assert len(read_matpower(text).buses) == 2


ERRORS = [
    (HEAD + BUS + GEN + "mpc.branch = [\n 1 2 0.01 0.1 0 0 0 0 0 0 1 -360 360;\n", 11,
     "mpc.branch is never closed"),
    (HEAD + BUS.replace("0.9;\n 2", "0.9;\n 2x"), 6, "bad number '2x'"),
    (HEAD + BUS + GEN + BRANCH.replace(" 0 1 -360 360", ""), 12, "needs at least 11"),
    (HEAD + BUS.replace(" 1.1 0.9;\n 2", " 1.1;\n 2") + GEN + BRANCH, 6, "row has 13 columns"),
    (HEAD + BUS + GEN, 10, "mpc.branch is missing"),
    (HEAD + "mpc.bus(:, 3) = 0;\n", 4, "unsupported statement"),
    (HEAD.replace("'2'", "'1'") + BUS + GEN + BRANCH, 2, "version '1' is not supported"),
    (HEAD + BUS + GEN + BRANCH.replace(" 1 2 0.01", " 1 7 0.01"), 12, "unknown bus 7"),
    (HEAD + BUS.replace(" 2 1 10", " 1 1 10") + GEN + BRANCH, 6, "duplicate bus number 1"),
    (HEAD + BUS.replace(" 2 1 10", " 2 7 10") + GEN + BRANCH, 6, "type 7"),
    (HEAD + BUS.replace(" 1 3 0", " 1 1 0") + GEN + BRANCH, 5, "no reference bus (type 3)"),
    (HEAD + BUS + GEN + BRANCH + "mpc.dcline = [\n 1 2 1 10 0 0 0 1 1 0 0 0 0 0 0 0 0;\n];\n",
     14, "mpc.dcline"),
    (HEAD.replace("mpc.baseMVA = 100;\n", "") + BUS + GEN + BRANCH, 12, "mpc.baseMVA is missing"),
    # Inf is a valid M-file number (no limit), but an infinite base zeroes every per-unit load
    (HEAD.replace("= 100;", "= Inf;") + BUS + GEN + BRANCH, 3, "finite positive number, got inf"),
    (HEAD.replace("= 100;", "= -Inf;") + BUS + GEN + BRANCH, 3, "finite positive number, got -inf"),
    (HEAD.replace("= 100;", "= NaN;") + BUS + GEN + BRANCH, 3, "finite positive number, got nan"),
    # a zero impedance reached the build as a ValueError without file or line; a tiny or
    # huge one gave Newton a NaN or a branch that joins nothing
    (HEAD + BUS + GEN + BRANCH.replace("0.01 0.1", "0 0"), 12, "branch 1-2: the impedance"),
    (HEAD + BUS + GEN + BRANCH.replace("0.01 0.1", "0 1e-300"), 12, "too small to compute"),
    (HEAD + BUS + GEN + BRANCH.replace("0.01 0.1", "0 1e300"), 12, "too large to compute"),
    # a negative tap (a sign slip) failed Newton from every start without saying why
    (HEAD + BUS + GEN + BRANCH.replace("0 0 0 0 0 0 1 -360", "0 0 0 0 -0.98 0 1 -360"), 12,
     "branch 1-2: the tap ratio -0.98 is negative (TAP, column 9). Give the turns ratio as a "
     "positive number (0.98)"),
    # a set point VG <= 0 ran Newton 3000 steps to 'max_steps_reached'
    (HEAD + BUS + GEN.replace("100 -100 1 100", "100 -100 0 100") + BRANCH, 9, "has VG = 0"),
    (HEAD + BUS + "mpc.gen = [\n 1 0 0 100 -100 1 100 1 200 0;\n 1 0 0 100 -100 -1 100 1 200 0;"
     "\n];\n" + BRANCH, 10, "has VG = -1"),
    (HEAD.replace("= 100;", "= [100 50];") + BUS + GEN + BRANCH, 3, "must be one number"),
    # the message showed "bus number 1", which is a valid one
    (HEAD + BUS.replace(" 2 1 10", " 1.0000000000000002 1 10") + GEN + BRANCH, 6,
     "bus number 1.0000000000000002 is not a positive integer"),
    # two numbers of the file read as one double: "duplicate" of a number not in the file
    (HEAD + BUS.replace(" 1 3 0", " 9223372036854775807 3 0").replace(
        " 2 1 10", " 9223372036854775806 1 10") + GEN + BRANCH, 6, "are not exact as doubles"),
    # an empty file (or one of comments): it said only "mpc.baseMVA is missing"
    ("", 1, "the file assigns no mpc field: it holds no case"),
    ("function mpc = nothing\n% only a comment\n", 2, "Is this a MATPOWER case file?"),
    # MATLAB code other than the distribution cases' unit conversions: say how to get a file
    # that holds the case as MATPOWER loads it
    (HEAD + BUS + GEN + BRANCH + "mpc.bus(:, 3) = 2 * mpc.bus(:, 3);\n", 14,
     "is not run here: save the case as MATPOWER loads it (mpc = loadcase('bad'); "
     "savecase('bad_pu.m', mpc)) and read that file"),
    # a conversion as MATPOWER writes it, but with index names bound in another order (PD
    # would be another column) or not bound at all, is not one: refused as other code
    (HEAD + BUS + GEN + BRANCH + "[PD, QD] = idx_bus;\n", 14, "unsupported statement"),
    (HEAD + BUS + GEN + BRANCH + "mpc.bus(:, [PD, QD]) = mpc.bus(:, [PD, QD]) / 1e3;\n", 14,
     "unsupported statement"),
    # a conversion that reads what is assigned only after it
    (HEAD + "[PQ, PV, REF, NONE, BUS_I, BUS_TYPE, PD, QD] = idx_bus;\n"
     "mpc.bus(:, [PD, QD]) = mpc.bus(:, [PD, QD]) / 1e3;\n" + BUS + GEN + BRANCH, 5,
     "reads mpc.bus, which is not a full matrix assigned before it"),
]


@pytest.mark.parametrize("text, line, words", ERRORS, ids=[e[2] for e in ERRORS])
def test_malformed_case_names_file_line_and_problem(tmp_path: Path, text: str, line: int,
                                                    words: str) -> None:
    path = tmp_path / "bad.m"
    path.write_text(text)
    with pytest.raises(FormatError) as info:
        read_matpower(path)
    assert (info.value.path, info.value.line) == (str(path), line)
    assert str(info.value).startswith(f"{path}:{line}: ") and words in str(info.value)


def test_out_of_service_branch_may_have_zero_impedance() -> None:
    text = HEAD + BUS + GEN + BRANCH.replace(
        "];", " 1 2 0 0 0 0 0 0 0 0 0 -360 360;\n];")
    assert len(read_matpower(text).branches) == 1


def test_base_mva_in_brackets_is_the_number() -> None:
    """MATLAB reads ``[100]`` as 100; the reader said 'mpc.baseMVA is missing'."""
    text = HEAD.replace("= 100;", "= [ 50 ];") + BUS + GEN + BRANCH
    assert read_matpower(text).base_mva == 50.0
    later = HEAD + BUS + GEN + BRANCH + "mpc.baseMVA = [ 10 ];\n"   # the last one counts
    assert read_matpower(later).base_mva == 10.0


def test_truncated_case_file(tmp_path: Path) -> None:
    text = (DATA / "case14.m").read_text()
    path = tmp_path / "case14_cut.m"
    path.write_text(text[: text.index("mpc.gencost") - 200])
    with pytest.raises(FormatError, match=r"case14_cut.m:\d+: matrix mpc.branch is never closed"):
        read_matpower(path)


@pytest.mark.parametrize("text, line, words", [
    ('{"base_mva": 100,\n "buses": [,]}', 2, "invalid JSON"),
    ('{"base_mva": 100, "buses": [{"index": 0}], "branches": []}', None, ".buses[0]: missing"),
    ('{"base_mva": 100, "buses": []}', None, "missing branches"),
    # json.loads keeps the last of a key given twice: the first bus list vanished silently
    ('{"base_mva": 100,\n "buses": [],\n "buses": [], "branches": []}', 3,
     "'buses' appears twice"),
    # a MATPOWER case saved as JSON (Octave's jsonencode(mpc)): it said "missing base_mva,
    # buses, branches. Expected the holdout-acpf-v1 layout of acpf/README.md"
    ('{"version": "2", "baseMVA": 100, "bus": [[1, 3, 0, 0, 0, 0, 1, 1, 0, 345, 1, 1.1, 0.9]],'
     ' "gen": [], "branch": []}', None, "it holds MATPOWER's mpc fields (baseMVA, bus, gen, "
     "branch matrices"),
])
def test_malformed_json(tmp_path: Path, text: str, line, words: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(FormatError) as info:
        read_case_json(path)
    assert info.value.line == line and str(path) in str(info.value) and words in str(info.value)


@pytest.mark.parametrize("where, key, value, words", [
    ("branches", "r", "NaN", ".branches[1].r: r is nan"),
    ("buses", "Pd", "Infinity", ".buses[4].Pd: Pd is inf"),
    ("buses", "id", "1e400", ".buses[4].id: id is inf"),   # was a raw OverflowError
    ("buses", "id", "1" + "0" * 400, ".buses[4].id: id is inf"),
    ("branches", "tap", "0", ".branches[1].tap: tap is 0"),
])
def test_json_numbers_that_are_not_finite_are_refused(tmp_path: Path, where: str, key: str,
                                                      value: str, words: str) -> None:
    """json reads NaN, Infinity and 1e400; they reached Newton, which failed without saying
    why (a zero tap divides by zero)."""
    doc = json.loads((DATA / "case9.json").read_text())
    doc[where][1 if where == "branches" else 4][key] = "@"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc).replace('"@"', value))
    with pytest.raises(FormatError) as info:
        read_case_json(path)
    assert str(path) in str(info.value) and words in str(info.value)


def test_missing_json_case_is_our_error(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="cannot read the case"):
        read_case_json(tmp_path / "absent.json")


JSON_EDITS = [   # (what to change in case9.json, words of the error)
    (("buses", 1, "id", 2.5), ".buses[1].id: expected a whole number"),     # was read as 2
    (("buses", 4, "Pd", True), ".buses[4].Pd: expected a number, got true"),  # was 1.0
    (("buses", 4, "Pd", "0.9"), '.buses[4].Pd: expected a number, got "0.9"'),
    (("buses", 1, "id", 1), ".buses[1].id: bus number 1 is also that of .buses[0]"),
    (("buses", 1, "Vset", None), ".buses[1].Vset: a PV bus needs Vset"),   # was a ValueError
    (("buses", 0, "Vset", 0.0), ".buses[0].Vset: the voltage set point must be positive"),
    (("branches", 1, "x", 0.0), ".branches[1]: the impedance"),              # r = 0 already
    (("branches", 1, "tap", -1.0), ".branches[1].tap: the tap ratio -1 is negative"),
    (("generators", 0, "bus", 99), ".generators[0].bus: unknown bus 99"),
]


@pytest.mark.parametrize("edit, words", JSON_EDITS, ids=[w for _, w in JSON_EDITS])
def test_json_values_are_checked_where_they_are_read(tmp_path: Path, edit, words: str) -> None:
    doc = json.loads((DATA / "case9.json").read_text())
    section, k, key, value = edit
    doc[section][k][key] = value
    if section == "branches":
        doc["branches"][k]["r"] = 0.0
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(FormatError) as info:
        read_case_json(path)
    assert str(path) in str(info.value) and words in str(info.value)


def test_json_sections_must_be_lists(tmp_path: Path) -> None:
    """A dict of branches was iterated as no branches, then reported as islands."""
    doc = json.loads((DATA / "case9.json").read_text())
    doc["branches"] = {}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(FormatError, match=r"\.branches: expected a list, got dict"):
        read_case_json(path)


def test_matpowers_distribution_cases_convert_their_units_as_matlab_does() -> None:
    """case33bw (Baran & Wu) gives r, x in ohms and loads in kW, converted by MATLAB code after
    its tables; MATPOWER's runpf: min Vm 0.91309 p.u. at bus 18, losses 202.67 kW."""
    from scenarios.powerflow import build_powerflow
    case = read_matpower(DATA / "case33bw.m")
    assert case.notes[:2] == (
        "branch r, x converted from ohms to p.u. (Z base 16.0276 ohm), as the file's MATLAB "
        "code on line 122 does", "loads converted from kW/kVAr to MW/MVAr, as line 125 does")
    result = build_powerflow(case).solve()
    vm = result.vm()
    assert result.converged and min(vm, key=vm.get) == 18
    assert vm[18] == pytest.approx(0.91309, abs=5e-6)
    losses = sum(bus.p for bus in result.buses().values()) * case.base_mva
    assert losses == pytest.approx(0.20268, abs=5e-5)


def test_a_power_factor_conversion_sets_q_from_p_before_scaling_p() -> None:
    """case141's loads: QD = PD sin(acos(pf)), then PD = PD pf (the order matters)."""
    code = ("[PQ, PV, REF, NONE, BUS_I, BUS_TYPE, PD, QD] = idx_bus;\n"
            "mpc.bus(:, [PD, QD]) = mpc.bus(:, [PD, QD]) / 1e3;\npf = 0.85;\n"
            "mpc.bus(:, QD) = mpc.bus(:, PD) * sin(acos(pf));\n"
            "mpc.bus(:, PD) = mpc.bus(:, PD) * pf;\n")
    case = read_matpower(HEAD + BUS.replace(" 2 1 10 5", " 2 1 10000 5") + GEN + BRANCH + code)
    load = case.buses[1]
    assert load.Pd == pytest.approx(10.0 * 0.85 / 100) and load.Qd == pytest.approx(
        10.0 * math.sin(math.acos(0.85)) / 100)

