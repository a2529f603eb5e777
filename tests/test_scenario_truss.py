"""Large-displacement truss statics against the closed-form two-bar (von Mises) truss."""
from __future__ import annotations


import jax
import numpy as np
import pytest
from scipy.optimize import brentq

import solvers
from scenario_inputs import edited_example
from scenarios import truss as tr
from solvers import solve

A, H, EA = 1.0, 0.1, 1000.0  # half span, rise (m); axial stiffness (N)
W_LIM, P_LIM = tr.von_mises_limit(A, H, EA)
NEWTON = solvers.Newton()  # compiles faster than the default polyalgorithm


def _arch(load=None, control=False, ea=EA):
    """The arch with a downward apex load ``load`` (N), or with the apex under displacement
    control (its vertical displacement prescribed by the support ``apex_control``)."""
    supports = {"pin_l": ("left", (True, True)), "pin_r": ("right", (True, True))}
    if control:
        supports["apex_control"] = ("apex", (False, True))
    loads = {} if load is None else {"P": ("apex", (0.0, -load))}
    return tr.build_truss({"left": (-A, 0.0), "right": (A, 0.0), "apex": (0.0, H)},
                          {"bl": ("left", "apex", ea), "br": ("right", "apex", ea)},
                          supports=supports, loads=loads)


def _deflection_below_limit(p):
    return brentq(lambda w: tr.von_mises_load(w, A, H, EA) - p, 0.0, W_LIM, xtol=1e-15)


def test_closed_form_limit_point():
    # dP/dw = 0 at the limit point, and the curve falls to zero at w = h and w = 2h
    eps = 1e-7
    slope = (tr.von_mises_load(W_LIM + eps, A, H, EA)
             - tr.von_mises_load(W_LIM - eps, A, H, EA)) / (2 * eps)
    assert abs(slope) < 1e-6 * P_LIM / W_LIM
    np.testing.assert_allclose(tr.von_mises_load([0.0, H, 2 * H], A, H, EA), 0.0, atol=1e-12)


def test_load_below_the_limit_gives_the_closed_form_deflection():
    p = 0.8 * P_LIM
    result = tr.solve_truss(_arch(load=p))  # the default polyalgorithm
    assert bool(result.solution.converged)
    ux, uy = result.displacement("apex")
    w = -uy
    assert w == pytest.approx(_deflection_below_limit(p), rel=1e-10)
    assert w < W_LIM  # the stable, pre-limit branch
    assert tr.von_mises_load(w, A, H, EA) == pytest.approx(p, rel=1e-10)
    assert abs(ux) < 1e-12  # symmetry
    length = np.hypot(A, H - w)
    n = EA * (length - np.hypot(A, H)) / np.hypot(A, H)  # compression: n < 0
    assert result.axial_force("bl") == pytest.approx(n, rel=1e-10)
    np.testing.assert_allclose(result.reaction("pin_l"), [-n * A / length, p / 2], rtol=1e-9)
    np.testing.assert_allclose(result.reaction("pin_r"), [n * A / length, p / 2], rtol=1e-9)


def test_load_sweep_follows_the_curve_up_to_the_limit():
    factors = np.linspace(0.1, 0.95, 8)
    sweep = tr.sweep_truss(_arch(load=P_LIM), "P", factors, solver=NEWTON)
    assert sweep.converged
    w = -sweep.displacement("apex")[:, 1]
    expected = [_deflection_below_limit(f * P_LIM) for f in factors]
    np.testing.assert_allclose(w, expected, rtol=1e-9)
    np.testing.assert_allclose(tr.von_mises_load(w, A, H, EA), factors * P_LIM, rtol=1e-9)
    doc = sweep.to_json()
    assert doc["parameter"] == "P" and len(doc["sweep"]) == 8
    assert doc["sweep"][0]["displacements"]["apex"][1] == pytest.approx(-expected[0], rel=1e-9)


def test_displacement_control_traces_the_whole_snap_through_curve():
    w = np.linspace(0.0, 2.5 * H, 26)
    sweep = tr.sweep_truss(_arch(control=True), "apex_control.uy", -w, solver=NEWTON)
    assert sweep.converged
    force = -sweep.reaction("apex_control")[:, 1]  # what the support pushes down with
    np.testing.assert_allclose(force, tr.von_mises_load(w, A, H, EA), rtol=1e-9, atol=1e-12)
    assert force[w < H].max() == pytest.approx(P_LIM, rel=0.05)  # the limit load is on it
    assert (force[(w > H) & (w < 2 * H)] < 0).all()  # the snap-through region


def test_grad_of_the_deflection_with_respect_to_the_stiffness():
    p = 0.5 * P_LIM

    def deflection(ea):
        return -solve(_arch(load=p, ea=ea), NEWTON).system.nodes[2].u[1]

    w = _deflection_below_limit(p)
    s, length = H - w, np.hypot(A, H - w)
    dp_dw = -2 * EA * (A * A / length ** 3 - 1 / np.hypot(A, H))  # at fixed EA
    expected = -(p / EA) / dp_dw  # P = EA g(w) held fixed
    assert float(jax.grad(deflection)(EA)) == pytest.approx(expected, rel=1e-8)
    assert s > 0


def test_reader_and_sweep_parameter_errors():
    truss = tr.read_truss(tr.EXAMPLE)
    assert truss.node_names == ("left", "right", "apex")
    assert float(truss.bars[0].L0) == pytest.approx(np.hypot(1.0, 0.1))
    assert truss.bars[0].b is truss.bars[1].b  # the apex is one shared node
    with pytest.raises(KeyError, match="nothing named 'Q' to sweep"):
        tr.parameter_path(truss, "Q")
    with pytest.raises(KeyError, match="does not fix ux"):
        tr.parameter_path(_arch(control=True), "apex_control.ux")
    for bad, shape in ((3.0, r"\(\)"), ([], r"\(0,\)"), ([[1.0, 2.0]], r"\(1, 2\)")):
        # a scalar was "TypeError: len() of unsized object"
        with pytest.raises(ValueError, match=rf"sweep values of P must be a non-empty 1-D .* {shape}"):
            tr.sweep_truss(truss, "P", bad)


@pytest.mark.parametrize("edit, match", [
    (lambda d: d["bars"]["left_bar"].update(b="left"),
     r"t.json: \.bars\.left_bar: bar joins 'left' to itself"),
    (lambda d: d["supports"]["pin_left"].update(fixed=[1, 1]),
     r"\.supports\.pin_left\.fixed: expected a list of 2 true/false values"),
])
def test_reader_errors_name_the_file_and_entry(tmp_path, edit, match):
    with pytest.raises(tr.FormatError, match=match):
        tr.read_truss(edited_example(tr.EXAMPLE, tmp_path / "t.json", edit))


def test_run_report_json_on_the_shipped_example():
    report = tr.run()
    doc = report.json
    assert report.converged and doc["converged"] is True
    w = -doc["displacements"]["apex"][1]
    assert tr.von_mises_load(w, 1.0, 0.1, 1000.0) == pytest.approx(0.3, rel=1e-9)
    assert doc["axial_forces"]["left_bar"] == pytest.approx(doc["axial_forces"]["right_bar"])
    assert set(doc["reactions"]) == {"pin_left", "pin_right"}
