"""SPICE netlist reader: the validation decks, the syntax subset, round trips and errors."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scenarios.circuits import (Waveform, CurrentSource, DCSweep, Diode, DiodeModel, FormatError, Netlist,
                                OperatingPoint, Resistor, VoltageSource, parse_spice_number,
                                read_netlist)

DATA = Path(__file__).parent / "data" / "circuits"
DECKS = sorted(DATA.glob("*.cir"))
_FIELDS = {"R": (Resistor, ("n1", "n2"), "value"), "D": (Diode, ("anode", "cathode"), None),
           "V": (VoltageSource, ("pos", "neg"), "dc"), "I": (CurrentSource, ("pos", "neg"), "dc")}


@pytest.mark.parametrize("deck", DECKS, ids=lambda p: p.stem)
def test_validation_deck_matches_its_json(deck: Path) -> None:
    reference = json.loads(deck.with_suffix(".json").read_text())
    netlist = read_netlist(deck)
    assert len(netlist.elements) == len(reference["elements"])
    for element, ref in zip(netlist.elements, reference["elements"]):
        cls, node_fields, value_field = _FIELDS[ref["type"]]
        assert type(element) is cls and element.name == ref["name"]
        ref_nodes = tuple(ref["anode" if f == "anode" else "cathode" if f == "cathode" else f]
                          for f in node_fields)
        assert element.nodes == ref_nodes
        if value_field:
            assert getattr(element, value_field) == ref["value"]
        else:
            assert element.model == ref["model"] and element.area == 1.0
    assert {name: (m.IS, m.N, m.RS) for name, m in netlist.models.items()} == {
        name: (m["IS"], m["N"], m["RS"]) for name, m in reference["models"].items()}
    assert set(netlist.nodes) == set(reference["nodes"])
    assert netlist.analyses == (OperatingPoint(),)
    assert netlist.options["gmin"] == reference["physics"]["gmin"]
    assert netlist.temperature + 273.15 == pytest.approx(reference["physics"]["temperature_K"])
    assert netlist.title.startswith(f"* {reference['name']}:")


@pytest.mark.parametrize("deck", DECKS, ids=lambda p: p.stem)
def test_validation_deck_round_trips(deck: Path) -> None:
    netlist = read_netlist(deck)
    assert read_netlist(netlist.to_spice()) == netlist


@pytest.mark.parametrize("text, value", [
    ("10k", 1e4), ("1meg", 1e6), ("1MEG", 1e6), ("2.2u", 2.2e-6), ("10kohm", 1e4),
    ("1uA", 1e-6), ("5mil", 5 * 25.4e-6), ("1F", 1e-15), ("3t", 3e12), ("1g", 1e9),
    ("0.1u", 1e-7), ("1e3", 1e3), ("-2.5m", -2.5e-3), (".5", 0.5), ("5V", 5.0),
    ("4.7n", 4.7e-9), ("33p", 33e-12), ("1.5e-3k", 1.5), ("+7", 7.0), ("2Meg", 2e6),
])
def test_engineering_suffixes(text: str, value: float) -> None:
    assert parse_spice_number(text) == value


@pytest.mark.parametrize("text", ["abc", "1..2", "", "k1", "1.2.3", "--1", "e5"])
def test_not_a_number(text: str) -> None:
    assert parse_spice_number(text) is None


FEATURES = """\
Feature deck: every supported spelling
* a full-line comment
r1 N1 n2 10k ; inline comment
R2 n2 0 4.7kOhm $ another comment
Rload n2
+ gnd
+ 1meg
d1 N1 n3 dx 2
Dz n3 0 DY OFF
v1 n1 0 DC 5 AC 1 0
Vs n3 0 dc 1.5 sin(0 1 1k)
i1 0 n2 1uA
Ibias n2 0
.MODEL DX d (is=2e-14, n=1.5 rs=10 cjo=2p)
.model DY D IS=1e-15
+ N=2
.option gmin=1e-12 reltol = 1e-6 noacct method=gear
.TEMP 30
.save all
.print dc v(n2)
.control
Q1 1 2 3 npn
run
.endc
.op
.dc v1 0 1 0.25
.end
M1 this is after .end and never read
"""


def test_feature_deck() -> None:
    netlist = read_netlist(FEATURES)
    assert netlist.title == "Feature deck: every supported spelling"
    assert netlist.elements == (
        Resistor("r1", "N1", "n2", 1e4), Resistor("R2", "n2", "0", 4.7e3),
        Resistor("Rload", "n2", "0", 1e6), Diode("d1", "N1", "n3", "DX", 2.0),
        Diode("Dz", "n3", "0", "DY"), VoltageSource("v1", "N1", "0", 5.0),
        VoltageSource("Vs", "n3", "0", 1.5, Waveform("SIN", (0.0, 1.0, 1000.0))), CurrentSource("i1", "0", "n2", 1e-6),
        CurrentSource("Ibias", "n2", "0", 0.0))
    assert netlist.models == {
        "DX": DiodeModel("DX", IS=2e-14, N=1.5, RS=10.0, params=(("CJO", 2e-12),)),
        "DY": DiodeModel("DY", IS=1e-15, N=2.0)}
    assert netlist.options == {"gmin": 1e-12, "reltol": 1e-6, "noacct": True, "method": "gear"}
    assert netlist.temperature == 30.0
    assert netlist.analyses == (OperatingPoint(), DCSweep("v1", 0.0, 1.0, 0.25))
    assert netlist.nodes == ("N1", "n2", "n3")
    assert netlist.element("V1") is netlist.elements[5]
    assert read_netlist(netlist.to_spice()) == netlist


def test_multiplier_and_keyword_values() -> None:
    netlist = read_netlist("t\nR1 a 0 r=1k m=2\nD1 a 0 DM area=3 m=2\nV1 a 0 7\n"
                           ".model DM D\n.options temp=50\n")
    assert netlist.elements[0].value == 500.0
    assert (netlist.elements[1].area, netlist.elements[1].m) == (6.0, 2.0)  # m: for IBV
    assert read_netlist(netlist.to_spice()) == netlist
    assert netlist.models["DM"] == DiodeModel("DM")
    assert netlist.temperature == 50.0


def test_dc_sweep_points_follow_ngspice() -> None:
    points = DCSweep("V1", 0.1, 5.0, 0.1).points()
    assert len(points) == 50 and points[0] == 0.1
    assert points[-1] == 4.999999999999998          # ngspice adds the step repeatedly
    np.testing.assert_array_equal(DCSweep("V1", 1.0, -1.0, -0.5).points(),
                                  [1.0, 0.5, 0.0, -0.5, -1.0])
    assert DCSweep("I1", 2.0, 2.0, 1.0).points().tolist() == [2.0]


def test_path_and_text_inputs_agree(tmp_path: Path) -> None:
    path = tmp_path / "deck.cir"
    path.write_text(FEATURES)
    assert read_netlist(path) == read_netlist(str(path)) == read_netlist(FEATURES)


_names = st.text("abcdefgxyz0123456789", min_size=1, max_size=4)
_values = st.floats(allow_nan=False, allow_infinity=False, width=64)
_positive = st.floats(min_value=1e-20, max_value=1e20)


@st.composite
def netlists(draw) -> Netlist:
    nodes = draw(st.lists(_names.filter(lambda n: n != "0"), min_size=1, max_size=6,
                          unique=True)) + ["0"]
    models = {name: DiodeModel(name, draw(_positive), draw(_positive), draw(_positive),
                               draw(st.none() | _positive), draw(_positive),
                               draw(st.sampled_from([(), (("CJO", 1e-12), ("TT", 5e-9))])))
              for name in draw(st.lists(st.sampled_from(["DA", "DB", "dmod"]), min_size=1,
                                        unique=True))}
    elements = []
    for i in range(draw(st.integers(1, 12))):
        a, b = draw(st.sampled_from(nodes)), draw(st.sampled_from(nodes))
        kind = draw(st.sampled_from("RDVI"))
        if kind == "R":
            elements.append(Resistor(f"R{i}", a, b, draw(_values.filter(bool))))
        elif kind == "D":
            elements.append(Diode(f"D{i}", a, b, draw(st.sampled_from(sorted(models))),
                                  draw(_positive)))
        else:
            cls = VoltageSource if kind == "V" else CurrentSource
            elements.append(cls(f"{kind}{i}", a, b, draw(_values)))
    sources = [e.name for e in elements if isinstance(e, (VoltageSource, CurrentSource))]
    analyses = [OperatingPoint()]
    if sources:
        start, step = draw(_values), draw(_positive)
        analyses.append(DCSweep(draw(st.sampled_from(sources)), start, start + step, step))
    title = draw(st.text("abc XYZ*.:-_=0123", max_size=30))
    options = draw(st.dictionaries(st.sampled_from(["gmin", "reltol", "abstol"]), _positive))
    return Netlist(title, tuple(elements), models, tuple(analyses), options,
                   draw(st.floats(-200.0, 500.0)))


@settings(max_examples=60, deadline=None)
@given(netlists())
def test_generated_netlists_round_trip(netlist: Netlist) -> None:
    assert read_netlist(netlist.to_spice()) == netlist


ERRORS = [
    ("Q1 1 2 3 npn", 2, "Q1"),
    ("Q1 1 0 1m", 2, "'Q'"),
    (".foo bar", 2, "unknown dot-command '.foo'"),
    (".param x=1", 2, ".param"),
    (".include other.cir", 2, ".include"),
    ("R1 1 0 1k\nr1 1 0 2k", 3, "duplicate element name 'r1'"),
    ("R1 1", 2, "missing node 2"),
    ("R1 1 0", 2, "missing resistance value"),
    ("R1 1 0 abc", 2, "bad number 'abc'"),
    ("R1 1 0 0", 2, "non-zero"),
    ("R1 1 0 1k tc1=0.1", 2, "'tc1' is not supported"),
    ("D1 1 0", 2, "missing model name"),
    ("R1 1 0 1k\nD1 1 0 NOPE", 3, "'NOPE' is not defined"),
    (".model Q1 NPN(BF=100)", 2, "model type 'NPN'"),
    (".model DM D(IS=1e-14 IKF=0.1)", 2, "IKF is not supported"),
    (".model DM D(IS=1e-14 XYZ=1)", 2, "'XYZ' is not supported"),
    ("+ 1 2 3", 2, "continuation line"),
    (".control\nrun", 2, ".control block is never closed"),
    ("V1 1 0 1\n.dc V9 0 1 0.1", 3, "'V9', which is not a V or I source"),
    ("V1 1 0 1\nV2 2 0 1\n.dc V1 0 1 0.1 V2 0 1 0.5", 4, "a second source"),
    ("V1 1 0 1\n.dc V1 0 1 -0.1", 3, "does not lead"),
    ("V1 1 0 SIN(0 1 1k 0 0 0 7)", 2, "SIN takes 1 to 6 parameters"),
    ("V1 1 0 PWL(0 1 1m)", 2, "PWL needs pairs"),
    ("V1 1 0 SFFM(0 1 1k)", 2, "SFFM is not supported"),
    ("C1 1 0", 2, "one value after the nodes"),
    ("L1 1 0 -1m", 2, "must be positive"),
    (".tran 1u", 2, ".tran needs tstep tstop"),
    (".tran 1u 1m 2m", 2, "0 <= tstart < tstop"),
    (".ic v(1 = 2", 2, "expected v(node)=value"),
    ("V1 1 0 DC", 2, "missing value after DC"),
    ("V1 1 0 DC 1 bogus", 2, "unexpected 'bogus'"),
    (".temp 27 50", 2, "exactly one temperature"),
    # errors the Netlist constructor used to find, without file:line
    ("V1 1 0 5\nR1 1 0 1k\n.ic v(99)=1", 4, "node '99', which is not in the netlist"),
    ("V1 1 0 5\nR1 1 0 1k\n.ic v(1)=1\n+ v(gnd)=0", 5, "ground node 'gnd'"),
    ("V1 1 0 5\nR1 1 a$b 1k", 3, "node name 'a$b' may not contain"),   # '$' mid-word
    ("V1 1 0 5\nR$1 1 0 1k", 3, "element name 'R$1' may not contain"),  # is no comment
    ("V1 1 0 5\n.options method=a$b", 3, "value 'a$b' may not contain"),
    ("V1 1 0 5\n.options a$b", 3, "flag 'a$b' may not contain"),
    # used to crash (ZeroDivisionError) or to overflow into a deck to_spice cannot write
    ("V1 1 0 5\nR1 1 0 1k m=0", 3, "multiplier m must be non-zero"),
    ("V1 1 0 5\nR1 1 0 1e300 m=1e-300", 3, "out of range"),
    (".model DM D\nD1 1 0 DM area=1e200 m=1e200", 3, "area must be positive and finite"),
    ("V1 1 0 5\nL1 1 0 1m m=0", 3, "L1: multiplier m must be non-zero"),  # was ZeroDivisionError
    (".model DM D\nD1 1 0 DM\n+ m=0", 4, "D1: multiplier m must be non-zero"),  # at m, not D1
    ("V1 1 0 5\nR1 1 0 1k\n.options method=foo\n.tran 1u 1m", 4, "not an integration method"),
    # the model-card errors came from build_circuit without file:line; a thermal diode's
    # model was read as its area (ngspice's examples/soa/diode-soa-simple.cir)
    (".model DM D(IS=1e-14\n+ N=0)", 3, ".model DM: N=0 is not usable. Give N > 0"),
    (".model DM D(JS=0)", 2, ".model DM: IS=0 is not usable"),
    (".model DM D(RS=-1)", 2, ".model DM: RS=-1 is not usable"),
    ("Dth1 1 0 tj dmod1 thermal", 2, "Dth1: 'dmod1' after the model name 'tj' is not a number"),
    # options the solve reads: a word or bad value used to be dropped (or crash: tnom=abc)
    ("V1 1 0 5\nR1 1 0 1k\n.options gmin=-1", 4, ".options gmin=-1 is not usable"),
    ("V1 1 0 5\nR1 1 0 1k\n.options tnom=abc", 4, ".options tnom=abc is not usable"),
    ("V1 1 0 5\nR1 1 0 1k\n.options temp=abc", 4, ".options temp=abc is not usable"),
    ("V1 1 0 5\nR1 1 0 1k\n.options reltol=0", 4, ".options reltol=0 is not usable"),
    ("V1 1 0 5\nR1 1 0 1k\n.options gmin", 4, ".options gmin is not usable"),
    ("C1 1 0 1u IC=2", 2, "C1: an element's initial condition (IC=) is not supported"),
]


@pytest.mark.parametrize("body, line, words", ERRORS, ids=[e[2] for e in ERRORS])
def test_malformed_netlists_name_file_line_and_problem(tmp_path: Path, body: str, line: int,
                                                       words: str) -> None:
    path = tmp_path / "bad.cir"
    path.write_text("title line\n" + body + "\n.end\n")
    with pytest.raises(FormatError) as info:
        read_netlist(path)
    err = info.value
    assert isinstance(err, ValueError)
    assert (err.path, err.line) == (str(path), line)
    assert str(err).startswith(f"{path}:{line}: ")
    assert words in str(err)


def test_truncated_deck_reports_the_last_line(tmp_path: Path) -> None:
    text = (DATA / "chain_d_10.cir").read_text()
    cut = text[: text.index("R2 4 5") + len("R2 4")]
    with pytest.raises(FormatError, match=r":6: R2: missing node 2"):
        read_netlist(cut + "\n")


@pytest.mark.parametrize("text", ["\n", "only a title\n.op\n.end\n"])
def test_netlist_without_elements_is_an_error(text: str) -> None:
    with pytest.raises(FormatError, match="no elements"):
        read_netlist(text)


@pytest.mark.parametrize("build, words", [
    (lambda: Netlist("t", (Resistor("R1", "a", "0", 1.0), Resistor("r1", "a", "0", 1.0))),
     "duplicate"),
    (lambda: Netlist("t", (Diode("D1", "a", "0", "DM"),)), "not in .models"),
    (lambda: Netlist("t", (Resistor("X1", "a", "0", 1.0),)), "starting with 'R'"),
    (lambda: Netlist("t", (Resistor("R1", "a", "0", 1.0), Resistor("R2", "A", "0", 1.0))),
     "only in case"),
    (lambda: Netlist("t", (Resistor("R1", "a", "0", 1.0),), analyses=(DCSweep("R1", 0, 1, 1),)),
     "not a V or I source"),
    (lambda: Netlist("two\nlines", ()), "one line"),
    (lambda: Netlist("t", (), options={"gmin": False}), "True for a flag"),
])
def test_netlist_constructor_refuses_unwritable_data(build, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        build()


def test_options_method_is_checked_only_where_a_tran_integrates():
    # An .op deck never integrates: ngspice reads it whatever the method says.
    deck = read_netlist("t\nV1 1 0 5\nR1 1 0 1k\n.options method=euler\n.op\n.end\n")
    assert deck.options["method"] == "euler"
