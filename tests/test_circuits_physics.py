"""The circuit physics (ngspice's Vt, diode law, GMIN, pnjlim, RS, area) and the generators."""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import brentq

from scenarios.circuits import (DiodeModel, Netlist, elements, diode_ladder_netlist,
                                diode_ladder_spice, grid_netlist, grid_spice, read_netlist,
                                solve_circuit, thermal_voltage)
from scenarios.circuits import CurrentSource, Diode, Resistor, VoltageSource

VT = 0.025864917007157463


def test_thermal_voltage_is_ngspice_39s():
    assert thermal_voltage(27.0) == pytest.approx(VT, rel=0, abs=1e-18)


def test_diode_law_branches_and_gmin():
    i_s, vte, gmin = 1e-14, 1.5 * VT, 1e-12
    law = lambda v: float(elements.diode_current(v, i_s, vte, gmin))  # noqa: E731
    assert law(0.6) == pytest.approx(i_s * math.expm1(0.6 / vte) + gmin * 0.6, rel=1e-13)
    v = -1.0
    assert law(v) == pytest.approx(-i_s * (1 + (3 * vte / (v * math.e)) ** 3) + gmin * v,
                                   rel=1e-13)
    assert law(-1e6) == pytest.approx(-i_s - 1e-6, rel=1e-9)  # GMIN dominates far reverse


@pytest.mark.parametrize("where", [-3.0 * 1.5 * VT, elements.U_LINEAR * 1.5 * VT])
def test_diode_law_is_c1_at_its_joins(where):
    law = lambda v: elements.diode_current(v, 1e-14, 1.5 * VT, 1e-12)  # noqa: E731
    slope = jax.grad(law)
    h = 1e-9 * max(1.0, abs(where))
    assert float(law(where - h)) == pytest.approx(float(law(where + h)), rel=1e-6)
    assert float(slope(where - h)) == pytest.approx(float(slope(where + h)), rel=1e-6)


def test_diode_law_is_finite_with_finite_gradient_everywhere():
    v = jnp.array([-1e9, -3.0 * VT, -1e-300, 0.0, 0.7, 5.0, 1e3, 1e9])
    law = lambda v: elements.diode_current(v, 1e-16, VT, 1e-12)  # noqa: E731
    assert bool(jnp.all(jnp.isfinite(law(v))))
    assert bool(jnp.all(jnp.isfinite(jax.vmap(jax.grad(law))(v))))


def test_pnjlim_matches_spice():
    vte, vcrit = 0.025, 0.6
    lim = lambda new, old: float(elements.pnjlim(new, old, vte, vcrit))  # noqa: E731
    assert lim(5.0, 0.0) == pytest.approx(vte * math.log(5.0 / vte))
    assert lim(5.0, 0.7) == pytest.approx(0.7 + vte * math.log(1 + 4.3 / vte))
    assert lim(0.5, 0.0) == 0.5  # below vcrit: no limit
    assert lim(0.62, 0.6) == 0.62  # small step: no limit
    assert lim(-5.0, 0.0) == -1.0  # reverse: at most 2 v_old - 1
    assert lim(-5.0, 0.3) == pytest.approx(-1.3)  # from forward bias: -v_old - 1
    assert lim(-0.5, 0.0) == -0.5


def test_one_milliamp_into_a_diode_gives_the_readme_voltage():
    text = ("* 1 mA into a diode\nI1 0 1 DC 1m\nD1 1 0 DM\n.model DM D(IS=1e-14 N=1)\n"
            ".options gmin=1e-12\n.op\n.end\n")
    result = solve_circuit(text)
    exact = brentq(lambda v: 1e-14 * math.expm1(v / VT) + 1e-12 * v - 1e-3, 0.5, 0.8,
                   xtol=1e-16, rtol=1e-15)
    assert result.voltage("1") == pytest.approx(exact, abs=1e-13)
    # the README's measurement (ngspice at its default tolerances) agrees to ~3e-11 V
    assert result.voltage("1") == pytest.approx(0.6551178956206679, abs=1e-9)
    assert result.diode_current("D1") == pytest.approx(1e-3, abs=1e-15)
    assert result.source_current("I1") == 1e-3


def test_series_resistance_and_area():
    """V1 drives a diode with RS = 20 ohm and area 2 (IS x 2, RS / 2) from 1.2 V."""
    model = DiodeModel("DR", IS=1e-13, N=1.3, RS=20.0)
    netlist = Netlist("* diode with RS", [VoltageSource("V1", "a", "0", 1.2),
                                          Diode("D1", "a", "0", "DR", area=2.0)], {"DR": model})
    result = solve_circuit(netlist)
    law = lambda v: float(elements.diode_current(v, 2e-13, 1.3 * VT, 1e-12))  # noqa: E731
    vd = brentq(lambda v: v + 10.0 * law(v) - 1.2, 0.0, 1.2, xtol=1e-16, rtol=1e-15)
    assert result.converged
    assert result.diode_current("D1") == pytest.approx(law(vd), abs=1e-12)
    assert result.source_current("V1") == pytest.approx(-law(vd), abs=1e-12)
    assert list(result.node_voltages()) == ["a"]  # the internal node is not a netlist node
    assert float(result.graph.internal["D1"].v) == pytest.approx(vd, abs=1e-9)


def test_diode_ladder_matches_a_shooting_solution():
    """Independent reference: from the last node's voltage every other one follows (the
    current of each series resistor is the sum of the diode currents beyond it)."""
    netlist = diode_ladder_netlist(30, r=200.0, v=4.0, spread=3.0, seed=3)
    r = np.array([netlist.element(f"R{k}").value for k in range(1, 30)])
    law = lambda v: float(elements.diode_current(v, 1e-14, VT, 1e-12))  # noqa: E731

    def shoot(v_last):
        v, i = [v_last], 0.0
        for k in range(29, 0, -1):  # node k + 1 -> node k
            i += law(v[-1])
            v.append(v[-1] + r[k - 1] * i)
        return v[::-1]

    v_last = brentq(lambda x: shoot(x)[0] - 4.0, 0.0, 4.0, xtol=1e-16, rtol=1e-15)
    expected = shoot(v_last)
    assert abs(expected[0] - 4.0) < 1e-10
    result = solve_circuit(netlist)
    assert result.converged, result.message()
    got = [result.voltage(str(k)) for k in range(1, 31)]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)


def test_grid_generator_counts_round_trip_and_symmetry():
    k = 4
    net = grid_netlist(k, v1=2.0, v2=2.0)
    kinds = [type(e) for e in net.elements]
    assert kinds.count(Resistor) == 2 * k * (k - 1) + 2 and kinds.count(Diode) == k * k
    assert kinds.count(VoltageSource) == 2 and len(net.nodes) == k * k + 2
    assert read_netlist(grid_spice(k, v1=2.0, v2=2.0)) == net
    result = solve_circuit(net)
    assert result.converged, result.message()
    v = np.array([[result.voltage(f"n{i}_{j}") for j in range(k)] for i in range(k)])
    np.testing.assert_allclose(v, v[::-1, ::-1], atol=1e-12)  # the two corners drive alike
    np.testing.assert_allclose(v, v.T, atol=1e-12)
    assert 0.0 < v.min() < v.max() < 2.0


def test_ladder_generator_and_sweep_option():
    net = diode_ladder_netlist(5, sweep=(0.0, 1.0, 0.5))
    assert [e.name for e in net.elements if isinstance(e, Diode)] == ["D2", "D3", "D4", "D5"]
    assert net.analyses[-1].points().tolist() == [0.0, 0.5, 1.0]
    assert read_netlist(diode_ladder_spice(5, sweep=(0.0, 1.0, 0.5))) == net
    spread = diode_ladder_netlist(50, spread=10.0, seed=1)
    values = [e.value for e in spread.elements if isinstance(e, Resistor)]
    assert 10.0 <= min(values) < max(values) <= 1000.0
    with pytest.raises(ValueError, match="n >= 2"):
        diode_ladder_netlist(1)
    with pytest.raises(ValueError, match="k >= 2"):
        grid_netlist(1)
    assert not any(isinstance(e, CurrentSource) for e in net.elements)
