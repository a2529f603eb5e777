"""Values the SPICE reader takes from a card as ngspice-39 does: a source's waveform at t = 0
when it has no DC value, a diode model's own TNOM, and IS against its other name JS.

Every reference number was measured with ngspice-39 (``ngspice -b``, ``op`` then
``print v(a)`` with ``set numdgt=12``; the diode decks with ``.options reltol=1e-12
vntol=1e-15 abstol=1e-18``) and is hard-coded so that no ngspice is needed."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from scenarios.circuits import (CircuitError, DiodeModel, FormatError, build_circuit,
                                read_netlist, solve_circuit, sweep_circuit)

DIVIDER = "* w\n{source}\nR1 in a 1k\nR2 a 0 1k\n.op\n.end\n"
# V(a) = V1 / 2, ngspice-39 with no DC value: "V1: no DC value, transient time 0 value used"
WAVE_ONLY = [
    ("PULSE(1 5 1n 1n 1n 1u 2u)", 0.5),
    ("PULSE(1 5 1m 1n 1n 1u 2u)", 0.5),       # delayed: V1 until TD
    ("PULSE(1 5)", 0.5),
    ("SIN(1 5 1k)", 0.5),                     # VO
    ("SIN(1 5 1k 1m)", 0.5),                  # delayed
    ("SIN(1 5 1k 0 0 30)", 1.75),             # VO + VA sin(PHASE) = 1 + 5 / 2
    ("SIN(1 5 1k 1m 0 30)", 1.75),            # delayed, with phase: the same
    ("EXP(2 5 1u 1u 2u 1u)", 1.0),            # V1
    ("EXP(2 5)", 1.0),
    ("PWL(0 3 1u 5)", 1.5),                   # the first point
    ("PWL(1u 3 2u 5)", 1.5),                  # first point after 0: its value
    ("PWL(-1u 3 1u 5)", 2.0),                 # 0 between two points: interpolated
    ("PULSE(1 5 -1u 1n 1n 1u 2u)", 2.5),      # negative delay: at t = 0 on the top, V2
    ("SIN(1 5 1k -0.25m)", 3.0),              # negative delay: a quarter period in, VO + VA
    ("EXP(2 5 -1u 1u 2u 1u)", 1.948180838243),
    # an explicit DC value wins (ngspice: the DC value is used for .op when given)
    ("DC 4 PULSE(1 5 1n 1n 1n 1u 2u)", 2.0),
    ("PULSE(1 5 1n 1n 1n 1u 2u) DC 4", 2.0),
    ("4 SIN(1 5 1k)", 2.0),
    ("DC 0 SIN(1 5 1k)", 0.0),
]


@pytest.mark.parametrize("wave, ng_a", WAVE_ONLY, ids=[w for w, _ in WAVE_ONLY])
def test_a_source_without_dc_value_takes_its_waveform_at_time_zero(wave, ng_a):
    """Was 0 V (V(a) = 0) for every waveform without ``DC``."""
    deck = read_netlist(DIVIDER.format(source=f"V1 in 0 {wave}"))
    assert deck.element("V1").dc == pytest.approx(2 * ng_a, abs=1e-12)
    assert read_netlist(deck.to_spice()) == deck  # written back as "DC value WAVE(...)"
    result = solve_circuit(deck)
    assert result.converged
    assert result.node_voltages()["a"] == pytest.approx(ng_a, abs=1e-12)


@pytest.mark.parametrize("wave, ng_a", [("PWL(0 2m 1 3m)", 3.5),
                                        ("SIN(1m 2m 1k 0 0 90)", 4.0)])
def test_a_current_source_without_dc_value_takes_its_waveform_at_time_zero(wave, ng_a):
    """``I1 0 a WAVE`` pushes its t = 0 current into the 5 V divider (was 2.5 V: 0 A)."""
    deck = DIVIDER.format(source=f"V1 in 0 DC 5\nI1 0 a {wave}")
    assert solve_circuit(deck).node_voltages()["a"] == pytest.approx(ng_a, abs=1e-12)


def test_dc_sweep_holds_the_other_waveform_source_at_its_time_zero_value():
    """``.dc V1 0 2 1`` with ``V2 b 0 PULSE(1 2 ...)``: V2 stays at 1 V (was 0 V)."""
    deck = ("* d\nV1 in 0 0\nV2 b 0 PULSE(1 2 1u 1u 1u 1u 2u)\nR1 in a 1k\nR2 b a 1k\n"
            "R3 a 0 1k\n.dc V1 0 2 1\n.end\n")
    sweep = sweep_circuit(deck)
    a = sweep.arrays["node_voltages"][:, sweep.columns["node_voltages"].index("a")]
    np.testing.assert_allclose(a, [1 / 3, 2 / 3, 1.0], atol=1e-12)  # ngspice: .333 .667 1.0


@pytest.mark.parametrize("wave", ["PULSE(1 5 -1u)", "PULSE(1 5 -1u 1u 1u)", "SIN(1 5 0 -1m)"])
def test_a_waveform_with_no_value_at_time_zero_is_refused_at_its_card(tmp_path: Path, wave):
    """A negative delay with default timings (TSTEP = TSTOP = 0 in .op): ngspice-39 fails
    ("timestep too small"); we name the card and the fixes instead of solving with NaN."""
    path = tmp_path / "neg.cir"
    path.write_text(DIVIDER.format(source=f"V1 in 0 {wave}"))
    with pytest.raises(FormatError, match=rf"{path}:2: V1: \w+ has no value at t = 0.*"
                                          r"Give a DC value"):
        read_netlist(path)


DIODE = "* d\nV1 in 0 5\nR1 in a 1k\nD1 a 0 DM\n.model DM D({params})\n{extra}\n.op\n.end\n"
NG_IS_1E14 = 1.036109596520  # IS=1e-14 N=1.5 at 27 C
NG_IS_1E13 = 9.476318087372e-01
NG_IS_1E12 = 8.591356933255e-01


@pytest.mark.parametrize("params, ng_a", [
    ("IS=1e-14 JS=1e-12 N=1.5", NG_IS_1E12),              # was 1.036110: IS always won
    ("JS=1e-12 IS=1e-14 N=1.5", NG_IS_1E14),
    ("IS=1e-14 JS=1e-12 IS=1e-13 N=1.5", NG_IS_1E13),
    ("JS=1e-14 IS=1e-12 JS=1e-13 N=1.5", NG_IS_1E13),     # was 8.59e-01
    ("JS=1e-12 N=1.5", NG_IS_1E12),
])
def test_is_and_js_name_one_parameter_and_the_last_written_wins(params, ng_a):
    deck = read_netlist(DIODE.format(params=params, extra=""))
    assert deck.models["DM"].IS == {NG_IS_1E12: 1e-12, NG_IS_1E13: 1e-13,
                                    NG_IS_1E14: 1e-14}[ng_a]
    assert "JS" not in dict(deck.models["DM"].params)
    assert solve_circuit(deck).node_voltages()["a"] == pytest.approx(ng_a, abs=1e-9)


def test_a_model_tnom_other_than_the_temperature_is_refused_at_the_model_card(tmp_path: Path):
    """``TNOM=50`` at the default 27 C: ngspice scales IS to 27 C (V(a) = 1.120012276199);
    we gave the unscaled 1.036110. Now refused, naming the .model line and both fixes."""
    path = tmp_path / "tnom.cir"
    path.write_text(DIODE.format(params="IS=1e-14 N=1.5 TNOM=50", extra=""))
    with pytest.raises(FormatError, match=rf"^{path}:5: \.model DM: TNOM=50 differs from the "
                                          r"circuit temperature 27.*Remove TNOM from the "
                                          r"model or set '\.temp 50'"):
        read_netlist(path)


@pytest.mark.parametrize("extra", [".temp 75", ".temp 75\n.options tnom=50"])
def test_a_model_tnom_equal_to_the_temperature_is_accepted(extra):
    """``TNOM=75`` with ``.temp 75`` (was refused: "differs from TNOM 27"); the model's TNOM
    overrides ``.options tnom``. ngspice: 1.199905208361, as ``.temp 75 .options tnom=75``
    (IS unscaled, Vt at 75 C), not the 27 C answer 1.036110."""
    deck = DIODE.format(params="IS=1e-14 N=1.5 TNOM=75", extra=extra)
    assert solve_circuit(deck).node_voltages()["a"] == pytest.approx(1.199905208361, abs=1e-9)


def test_tnom_of_a_model_no_diode_uses_is_not_checked():
    """ngspice ignores an unused model (V(a) = 1.036110 with ``.model DX D(... TNOM=50)``)."""
    deck = DIODE.format(params="IS=1e-14 N=1.5", extra=".model DX D(IS=1e-14 TNOM=50)")
    assert solve_circuit(deck).node_voltages()["a"] == pytest.approx(NG_IS_1E14, abs=1e-9)


def test_build_refuses_a_netlist_whose_model_tnom_differs_from_its_temperature():
    """A Netlist made in code (no file to name) gets the same check from build_circuit."""
    deck = read_netlist(DIODE.format(params="IS=1e-14 N=1.5", extra=""))
    model = DiodeModel("DM", 1e-14, 1.5, params=(("TNOM", 50.0),))
    hot = dataclasses.replace(deck, models={"DM": model})
    with pytest.raises(CircuitError, match=r"\.temp 27 differs from TNOM=50 of \.model DM.*"
                                           r"Remove TNOM from the model or set \.temp 50"):
        build_circuit(hot)
    assert build_circuit(dataclasses.replace(hot, temperature=50.0)) is not None
