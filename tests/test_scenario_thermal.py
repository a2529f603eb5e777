"""Thermal networks against closed forms (grey parallel plates, shields) and energy balance."""
from __future__ import annotations


import numpy as np
import pytest
from scipy.optimize import brentq

import solvers
from scenario_inputs import edited_example
from scenarios import thermal as th

SIGMA = th.STEFAN_BOLTZMANN
NEWTON = solvers.Newton()  # compiles faster than the default polyalgorithm


def _plates(t1, t2, e1, e2, area, heater=None):
    """Two infinite parallel plates: plate 1 fixed at t1 (or heated by ``heater`` W)."""
    fixed = {"cold": ("p2", t2)}
    loads = {}
    if heater is None:
        fixed["hot"] = ("p1", t1)
    else:
        loads["heater"] = ("p1", heater)
    return th.build_thermal({"p1": t1, "p2": t2},
                            radiation={"gap": ("p1", "p2", area, (e1, e2))},
                            fixed=fixed, loads=loads)


def test_two_fixed_parallel_plates_exchange_the_closed_form_heat():
    t1, t2, e1, e2, area = 500.0, 300.0, 0.8, 0.6, 2.0
    result = th.solve_thermal(_plates(t1, t2, e1, e2, area), solver=NEWTON)
    q = SIGMA * area * (t1 ** 4 - t2 ** 4) / (1 / e1 + 1 / e2 - 1)
    assert bool(result.solution.converged)
    assert result.heat_flow("gap") == pytest.approx(q, rel=1e-12)
    assert result.boundary_heat("hot") == pytest.approx(q, rel=1e-10)
    assert result.boundary_heat("cold") == pytest.approx(-q, rel=1e-10)


def test_heated_plate_reaches_the_closed_form_temperature():
    t2, e1, e2, area, heat = 300.0, 0.9, 0.3, 1.5, 400.0
    result = th.solve_thermal(_plates(300.0, t2, e1, e2, area, heater=heat), solver=NEWTON)
    t1 = (t2 ** 4 + heat * (1 / e1 + 1 / e2 - 1) / (SIGMA * area)) ** 0.25
    assert result.temperature("p1") == pytest.approx(t1, rel=1e-12)
    assert result.heat_flow("gap") == pytest.approx(heat, rel=1e-10)
    assert abs(result.energy_imbalance()) < 1e-9


def test_n_radiation_shields_divide_the_exchange_by_n_plus_one():
    n, e, t1, t2 = 3, 0.2, 600.0, 300.0
    names = ["p1"] + [f"s{k}" for k in range(n)] + ["p2"]
    rad = {f"r{k}": (names[k], names[k + 1], 1.0, (e, e)) for k in range(n + 1)}
    net = th.build_thermal(names, radiation=rad,
                           fixed={"hot": ("p1", t1), "cold": ("p2", t2)})
    result = th.solve_thermal(net, solver=NEWTON)
    q = SIGMA * (t1 ** 4 - t2 ** 4) / ((n + 1) * (2 / e - 1))
    for k in range(n + 1):
        assert result.heat_flow(f"r{k}") == pytest.approx(q, rel=1e-10)
    # equal steps in T^4 between successive surfaces
    t4 = np.array([result.temperature(name) ** 4 for name in names])
    np.testing.assert_allclose(np.diff(t4), np.full(n + 1, (t2 ** 4 - t1 ** 4) / (n + 1)),
                               rtol=1e-9)


def test_stiff_network_far_from_the_start_converges_with_newton():
    # 1e4 W/K links and a 3000 K boundary, started at 300 K: the fixed-temperature equations
    # are weighted like heat flows, so Newton's line search is not stalled by mixed units
    g, t_a, t_c = 1e4, 3000.0, 4.0
    net = th.build_thermal(["a", "b", "c"], conduction={"ab": ("a", "b", g), "bc": ("b", "c", g)},
                           radiation={"r": ("b", "c", 2.0, (0.9, 0.9))},
                           fixed={"hot": ("a", t_a), "cold": ("c", t_c)})
    result = th.solve_thermal(net, solver=NEWTON)
    assert bool(result.solution.converged) and int(result.solution.iterations) < 10
    f_eff = 1 / (2 / 0.9 - 1)
    t_b = brentq(lambda t: g * (t_a - t) - g * (t - t_c) - SIGMA * f_eff * 2.0 * (t ** 4 - t_c ** 4),
                 t_c, t_a, xtol=1e-13)
    assert result.temperature("b") == pytest.approx(t_b, rel=1e-12)


def test_grey_body_factor_for_enclosed_surfaces():
    e = np.array([0.7, 0.4])
    ratio = 0.25  # A1 / A2, e.g. concentric spheres
    expected = 1.0 / (1 / e[0] + ratio * (1 / e[1] - 1))
    assert float(th.grey_body_factor(e, 1.0, ratio)) == pytest.approx(expected, rel=1e-14)
    assert float(th.grey_body_factor(e, 1.0)) == pytest.approx(1 / (1 / 0.7 + 1 / 0.4 - 1))


def _random_network(seed: int, n: int = 12):
    rng = np.random.default_rng(seed)
    names = [f"n{k}" for k in range(n)]
    links = [(k, k + 1) for k in range(n - 1)]  # a chain keeps it connected
    links += [tuple(sorted(rng.choice(n, 2, replace=False))) for _ in range(n)]
    conduction, radiation = {}, {}
    for j, (a, b) in enumerate(links):
        if rng.random() < 0.5:
            conduction[f"c{j}"] = (names[a], names[b], float(rng.uniform(0.1, 5.0)))
        else:
            radiation[f"r{j}"] = (names[a], names[b], float(rng.uniform(0.1, 2.0)),
                                  tuple(rng.uniform(0.1, 1.0, 2)), float(rng.uniform(0.2, 1.0)),
                                  float(rng.uniform(0.5, 2.0)))
    fixed = {"sink": (names[0], 250.0), "wall": (names[-1], 320.0)}
    loads = {f"q{k}": (names[k], float(rng.uniform(-20.0, 80.0))) for k in range(2, n - 2, 2)}
    return th.build_thermal(names, conduction=conduction, radiation=radiation, fixed=fixed,
                            loads=loads), conduction, radiation, loads


def test_random_network_balances_energy_globally_and_at_every_node():
    net, conduction, radiation, loads = _random_network(seed=7)
    result = th.solve_thermal(net)  # the default polyalgorithm
    assert bool(result.solution.converged)
    temps = {n: result.temperature(n) for n in net.node_names}
    total = sum(abs(q) for _, q in loads.values()) + sum(abs(result.boundary_heat(b))
                                                      for b in net.boundary_names)
    assert abs(result.energy_imbalance()) <= 1e-10 * total
    # independent recomputation of each node's balance from the formulas (numpy, not the model)
    outflow = dict.fromkeys(temps, 0.0)
    for a, b, g in conduction.values():
        outflow[a] += g * (temps[a] - temps[b])
        outflow[b] -= g * (temps[a] - temps[b])
    for a, b, area, (e1, e2), view, ratio in radiation.values():
        q = SIGMA * area * (temps[a] ** 4 - temps[b] ** 4) / (
            (1 - e1) / e1 + 1 / view + (1 - e2) / e2 * ratio)
        outflow[a] += q
        outflow[b] -= q
    for node, heat in loads.values():
        outflow[node] -= heat
    injected = {net.node_names[0]: result.boundary_heat("sink"),
                net.node_names[-1]: result.boundary_heat("wall")}
    for node, out in outflow.items():
        assert out == pytest.approx(injected.get(node, 0.0), abs=1e-9 * total)


def test_sweep_of_the_heater_matches_the_closed_form_at_every_point():
    t2, e1, e2, area = 300.0, 0.9, 0.3, 1.5
    heats = np.linspace(0.0, 800.0, 9)
    sweep = th.sweep_thermal(_plates(300.0, t2, e1, e2, area, heater=1.0), "heater", heats,
                             solver=NEWTON)
    expected = (t2 ** 4 + heats * (1 / e1 + 1 / e2 - 1) / (SIGMA * area)) ** 0.25
    assert sweep.converged
    np.testing.assert_allclose(sweep.temperature("p1"), expected, rtol=1e-12)
    np.testing.assert_allclose(sweep.boundary_heat("cold"), -heats, atol=1e-9)
    assert sweep.to_json()["sweep"][3]["temperatures"]["p1"] == pytest.approx(expected[3])


@pytest.mark.parametrize("edit, match", [
    (lambda d: d["radiation"]["hot_to_shield"].update(b="nowhere"),
     r"net.json: \.radiation\.hot_to_shield\.b: unknown node \"nowhere\""),
    (lambda d: d["radiation"]["hot_to_shield"].update(emissivity=[0.8, 1.5]),
     r"emissivities must be in \(0, 1\]"),
    (lambda d: d.pop("fixed"), r"\.fixed: no fixed-temperature boundary"),
    (lambda d: d["conduction"]["strut"].update(g=1.0), r"\.conduction\.strut\.g: unknown key"),
])
def test_reader_errors_name_the_file_and_entry(tmp_path, edit, match):
    with pytest.raises(th.FormatError, match=match):
        th.read_thermal(edited_example(th.EXAMPLE, tmp_path / "net.json", edit))


def test_run_report_json_on_the_shipped_example():
    report = th.run()
    doc = report.json
    assert doc["converged"] is True and set(doc["temperatures"]) == {"hot", "shield", "cold"}
    assert doc["temperatures"]["cold"] == pytest.approx(300.0, abs=1e-9)
    # series radiation through the shield carries the same heat as the heater minus the strut
    assert doc["heat_flows"]["hot_to_shield"] == pytest.approx(doc["heat_flows"]["shield_to_cold"])
    assert doc["heat_flows"]["hot_to_shield"] + doc["heat_flows"]["strut"] == pytest.approx(50.0)
    assert doc["boundary_heat"]["sink"] == pytest.approx(-50.0)


def test_the_builder_gives_the_same_network_from_traced_values():
    """Concrete entries are gathered with NumPy (no eager programs to compile); traced ones
    (a builder called under ``jit``) take the jnp path: the same leaves, the same weight of
    the fixed-temperature equations."""
    import jax

    def build(g, t_hot):
        net = th.build_thermal(["a", "b", "c"], conduction={"ab": ("a", "b", g)},
                               radiation={"bc": ("b", "c", 2.0, (0.8, 0.5))},
                               fixed={"hot": ("a", t_hot), "cold": ("c", 300.0)})
        return [b.scale for b in net.boundaries], [n.T for n in net.nodes], net.conductions[0].G

    eager = build(3.0, 900.0)
    traced = jax.jit(build)(3.0, 900.0)
    hot = 4 * SIGMA * 900.0 ** 3 * 2.0 / (1 / 0.8 + 1 / 0.5 - 1)  # radiation at 900 K > 3 W/K
    for got in (eager, traced):
        assert [float(s) for s in got[0]] == pytest.approx([hot, hot], rel=1e-12)
        assert [float(t) for t in got[1]] == [300.0, 300.0, 300.0]
        assert float(got[2]) == 3.0
    assert all(isinstance(s, jax.Array) for s in eager[0] + eager[1])
    # the weight is not physics: no gradient flows through it, traced or not
    assert float(jax.grad(lambda g: build(g, 900.0)[0][0])(30000.0)) == 0.0


def test_a_steady_state_below_absolute_zero_is_flagged():
    """A cooler drawing 500 W through 1 W/K from a 300 K sink "converged" at -200 K with no
    word: the linear equations hold there, but no physical steady state exists."""
    def net(draw):
        return th.build_thermal({"box": 300.0, "sink": 300.0},
                                conduction={"wall": ("box", "sink", 1.0)},
                                fixed={"hold": ("sink", 300.0)}, loads={"cooler": ("box", draw)})
    with pytest.warns(UserWarning, match=r"'box' below 0 K \(lowest -200 K\)"):
        result = th.solve_thermal(net(-500.0), solver=NEWTON)
    assert result.temperature("box") == pytest.approx(-200.0)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert th.solve_thermal(net(-100.0), solver=NEWTON).temperature("box") == \
            pytest.approx(200.0)
    with pytest.warns(UserWarning, match=r"at cooler = -400, -500"):
        sweep = th.sweep_thermal(net(-100.0), "cooler", [-100.0, -400.0, -500.0], solver=NEWTON)
    assert sweep.temperature("box") == pytest.approx([200.0, -100.0, -200.0])
