"""Water networks: EPANET and WNTR references, EPANET's constants, pumps, sweeps, bad topology."""
from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from scenarios.water import (IslandError, WaterConstants, build_water, elements, read_inp,
                             simulate_eps)

DATA = Path(__file__).parent / "data" / "water"
NETWORKS = ["Todini_Fig2_solA_CMH", "Net1", "Net2"]
REFERENCES = [("epanet", "solution_epanet"), ("wntr", "solution_wntrsim")]


@pytest.fixture(scope="module", params=NETWORKS)
def case(request):
    name = request.param
    return read_inp(DATA / f"{name}.inp"), json.loads((DATA / f"{name}.json").read_text())


def max_diff(result_fn, reference: dict) -> float:
    return max(abs(result_fn(name) - value) for name, value in reference.items())


@pytest.mark.parametrize("flavour, key", REFERENCES)
def test_matches_reference(case, flavour, key) -> None:
    net, ref = case
    result = build_water(net, ref["constants"][flavour]).solve()
    assert result.converged, result.message()
    assert max_diff(result.head, ref[key]["head"]) <= 1e-6
    assert max_diff(result.flow, ref[key]["flow"]) <= 1e-9
    assert result.iterations <= ref["verification"][f"{flavour}_constants"]["iterations"] + 1
    if flavour == "epanet":  # reservoir and tank outflows, junction demands, pressures
        assert max_diff(result.demand, ref[key]["demand"]) <= 1e-9
        assert max_diff(result.pressure, ref[key]["pressure"]) <= 1e-6


def test_epanet_constants_follow_the_flow_units(case) -> None:
    net, ref = case
    block = ref["constants"]["epanet"]
    ours = WaterConstants.epanet(net)
    assert math.isclose(ours.k_hw, block["hw_k_SI_effective"], rel_tol=1e-13)
    assert math.isclose(ours.minor_g, block["minor_loss_g_SI_effective"], rel_tol=1e-13)
    assert math.isclose(ours.rho_g, block["power_pump_rho_g_SI_effective"], rel_tol=1e-8)
    result = build_water(net, "epanet").solve()
    assert max_diff(result.head, ref["solution_epanet"]["head"]) <= 1e-6


def test_result_json_and_names(case) -> None:
    net, ref = case
    result = build_water(net, ref["constants"]["epanet"]).solve()
    out = json.loads(json.dumps(result.to_json()))
    assert set(out) == {"heads", "flows", "status", "converged", "iterations", "residual_norm"}
    assert set(out["heads"]) == set(net.node_names) and set(out["flows"]) == set(net.link_names)
    assert set(out["status"]) == set(net.link_names) and set(out["status"].values()) <= {0, 1}
    assert out["converged"] is True and out["residual_norm"] <= 1e-10
    with pytest.raises(KeyError, match="no node"):
        result.head("no-such-node")
    with pytest.raises(KeyError, match="no link"):
        result.flow("no-such-link")


def test_demand_multiplier_sweep_is_one_batched_solve() -> None:
    net = read_inp(DATA / "Net1.inp")
    ref = json.loads((DATA / "Net1.json").read_text())
    model = build_water(net, ref["constants"]["epanet"])
    multipliers = np.array([0.5, 1.0, 1.5])
    sweep = model.sweep(multipliers)
    assert sweep.converged.all() and len(sweep) == 3
    assert max_diff(sweep[1].head, ref["solution_epanet"]["head"]) <= 1e-6
    total = sum(j.demand for j in net.junctions)
    for m, member in zip(multipliers, sweep):
        supplied = member.demand("9") + member.demand("2")  # reservoir + tank
        assert supplied == pytest.approx(-m * total, abs=1e-12)
        alone = build_water(net, ref["constants"]["epanet"])
        alone.graph.hydraulics.demand_multiplier = float(m)
        single = alone.solve()
        assert max_diff(member.head, single.heads()) <= 1e-9
    assert np.all(np.diff(sweep.head("32")) < 0)  # more demand, less head downstream
    assert json.loads(json.dumps(sweep.to_json()))["values"] == multipliers.tolist()


MIXED = """
[TITLE]
three pump kinds, a minor loss, a closed pipe and a dead end
[JUNCTIONS]
J1  10  0
J2  5   2
J3  8   0
J4  2   6
J5  10  0
J6  5   0
[RESERVOIRS]
R1  100
R2  50
[TANKS]
T1  20  15  1  30  10  0
[PIPES]
P1  J1  J2  800  150  110  2.0  Open
P2  J3  J2  600  100  120  0    Open
P3  J2  J4  500  150  100  0    Open
P4  J4  T1  300  100  100  0.5  Open
P5  J5  J2  400  100  130  0    Open
P6  J1  J4  100  100  100  0    Closed
P7  J2  J6  200  80   100  0    Open
[PUMPS]
PU1  R1  J1  HEAD C1  SPEED 0.9
PU2  R2  J3  POWER 5
PU3  R1  J5  HEAD C3
[CURVES]
C1  0    60
C1  10   50
C1  20   20
C3  0    40
C3  5    38
C3  10   33
C3  15   20
[OPTIONS]
Units LPS
Headloss H-W
[END]
"""


def test_pump_kinds_minor_loss_closed_link_and_dead_end() -> None:
    net = read_inp(MIXED)
    model = build_water(net, "epanet")
    c = model.constants
    assert isinstance(model.graph.pumps["PU2"], elements.PowerPump)
    assert isinstance(model.graph.pumps["PU3"], elements.CurvePump)
    assert float(model.graph.pipes["P6"].status) == 0.0  # closed at t = 0: dh = CBIG q
    r = model.solve()
    assert r.converged, r.message()
    assert r.flow("P6") == 0.0 and r.flow("P7") == 0.0  # closed; dead end without demand
    for p in net.pipes:
        if p.name == "P6":
            continue
        q = r.flow(p.name)
        k = c.k_hw * p.length * p.roughness ** -1.852 * p.diameter ** -4.871
        m = 8 * p.minor_loss / (c.minor_g * math.pi ** 2 * p.diameter ** 4)
        loss = k * abs(q) ** 0.852 * q + m * abs(q) * q
        assert r.head(p.start) - r.head(p.end) == pytest.approx(loss, abs=1e-9)
    pu1 = net.pumps[0]
    w, q1 = pu1.speed_t0, r.flow("PU1")
    gain1 = w ** 2 * pu1.A - pu1.B * w ** (2 - pu1.C) * q1 ** pu1.C
    assert r.head("J1") - r.head("R1") == pytest.approx(gain1, abs=1e-9)
    q3 = r.flow("PU3")
    assert 0.010 < q3 < 0.015  # on the third segment of C3
    gain3 = 33.0 + (20.0 - 33.0) / 0.005 * (q3 - 0.010)
    assert r.head("J5") - r.head("R1") == pytest.approx(gain3, abs=1e-9)
    power = (r.head("J3") - r.head("R2")) * r.flow("PU2") * c.rho_g
    assert power == pytest.approx(5000.0, rel=1e-10)
    leak = (r.head("J1") - r.head("J4")) / model.graph.pipes["P6"].closed_r  # P6's dh / CBIG
    for j in net.junctions:  # mass balance: inflow - outflow = demand
        net_in = sum(r.flow(l.name) * ((l.end == j.name) - (l.start == j.name))
                     for l in (*net.pipes, *net.pumps))
        net_in += leak * ((j.name == "J4") - (j.name == "J1"))
        assert net_in == pytest.approx(j.demand, abs=1e-12)


POWER_SPEED = """
[JUNCTIONS]
J1  0  10
[RESERVOIRS]
R1  10
[PUMPS]
PU1  R1  J1  POWER 5  {speed}
[PATTERNS]
SP  0.8  0.5
[OPTIONS]
Units LPS
[TIMES]
Duration 2
[END]
"""


def test_constant_power_pump_speed_scales_the_power_by_its_cube() -> None:
    """EPANET 2.2 (``pumpcoeff``: ``r = R w^(2-N)``, N = -1) gives a constant-power pump at
    speed w the power w^3 P; the speed was ignored (5 kW at any speed). J1 takes all 10 L/s:
    H(J1) = 10 m + w^3 P / (rho g q), 36.116 m at w = 0.8 (it was 61.01 m)."""
    net = read_inp(POWER_SPEED.format(speed="SPEED 0.8"))
    model = build_water(net, "epanet")
    lift = lambda w: w ** 3 * 5000.0 / (model.constants.rho_g * 0.01)  # noqa: E731
    assert model.solve().head("J1") == pytest.approx(10.0 + lift(0.8), abs=1e-9)
    assert simulate_eps(net).heads["J1"][0] == pytest.approx(10.0 + lift(0.8), abs=1e-9)
    patterned = simulate_eps(read_inp(POWER_SPEED.format(speed="PATTERN SP")))
    assert patterned.heads["J1"][:2] == pytest.approx([10.0 + lift(0.8), 10.0 + lift(0.5)],
                                                      abs=1e-9)


ISLAND = """
[JUNCTIONS]
A  0  1
B  0  1
C  0  1
D  0  1
E  0  1
[RESERVOIRS]
R  50
[PIPES]
P1  R  A  100  100  100
P2  B  C  100  100  100
P3  C  D  100  100  100
P4  D  B  100  100  100
P5  A  E  100  100  100  0  Closed
[END]
"""


def test_island_without_reservoir_is_named_before_newton() -> None:
    """B, C, D: no link at all to R. E is joined by P5, closed (EPANET keeps it with
    dh = CBIG q), so it is no island: solved, it is named as disconnected instead."""
    with pytest.raises(IslandError) as err:
        build_water(read_inp(ISLAND))
    assert set(err.value.nodes) == {"B", "C", "D"}
    message = str(err.value)
    assert "'B', 'C', 'D'" in message and "reservoir or tank" in message
    assert "'E'" not in message


def test_unsupported_head_loss_formula_is_refused() -> None:
    text = ISLAND.replace("[END]", "[OPTIONS]\nHeadloss D-W\n[END]")
    with pytest.raises(ValueError, match="Hazen-Williams"):
        build_water(read_inp(text))


NET1_EXCERPT = ("[TITLE]\nEPANET Example Network 1\nA simple example\n"
                "[JUNCTIONS]\n 10  710  0\n[RESERVOIRS]\n 9  800\n"
                "[TANKS]\n 2  850  120  100  150  50.5  0\n"
                "[PIPES]\n 10  9  10  10530  18  100\n 11  10  2  5280  14  100\n"
                "[TIMES]\n Duration 1:00\n[OPTIONS]\n Units GPM\n Headloss  H-W\n[END]\n")


@pytest.mark.parametrize("eps, edit, line, words", [
    # the model's refusals said "network 'EPANET Example Network 1\\nA simple example ...'
    # uses the D-W head-loss formula" (or named the tank, the rules), without file:line
    (False, ("H-W", "D-W"), 17, "network 'EPANET Example Network 1' uses the D-W head-loss "
     "formula; only Hazen-Williams (H-W) is modelled. Convert the roughness to H-W C values"),
    (True, ("H-W", "C-M"), 17, "network 'EPANET Example Network 1' uses the C-M head-loss"),
    (True, ("[END]", "[RULES]\nRULE 1\nIF TANK 2 LEVEL ABOVE 140\nTHEN PIPE 11 STATUS IS "
            "CLOSED\n[END]"), 19, "network 'EPANET Example Network 1' has rule-based controls"),
    (True, ("50.5  0", "0  0"), 9, "tank '2' has diameter 0 and no volume curve"),
    (True, ("Duration 1:00", "Duration 0:00"), 14, "--eps: network 'EPANET Example Network 1' "
     "has DURATION 0 in [TIMES]"),
])
def test_run_names_the_line_of_what_the_model_refuses(tmp_path, eps, edit, line, words) -> None:
    from scenarios._errors import FormatError
    from scenarios.water import run
    path = tmp_path / "net.inp"
    path.write_text(NET1_EXCERPT.replace(*edit))
    with pytest.raises(FormatError) as info:
        run(str(path), eps=eps)
    assert str(info.value).startswith(f"{path}:{line}: {words}")


def test_reverse_flow_closes_a_check_valve_and_a_sweep_member_warns() -> None:
    text = """
[JUNCTIONS]
J  0  1
[RESERVOIRS]
R1  100
R2  50
[PIPES]
P1  R1  J  100  100  100  0  Open
P2  R2  J  100  100  100  0  CV
[END]
"""
    model = build_water(read_inp(text))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the snapshot's status check closes the valve
        result = model.solve()
    assert result.converged and result.closed == ("P2",) and result.flow("P2") == 0.0
    # J's 1 GPM from R1 alone, plus the closed valve's dh / CBIG (1.4e-8 m3/s at 50 m)
    assert result.flow("P1") == pytest.approx(6.30902e-5, rel=1e-3)
    assert result.status_problems() == []
    with pytest.warns(UserWarning, match="member 0: reverse flow .* in 'P2'"):
        sweep = model.sweep(np.array([1.0]))  # members are solved without status checks
    assert sweep[0].flow("P2") < 0.0


def test_large_network_path_uses_a_sparse_lu() -> None:
    import solvers
    net = read_inp(DATA / "Net2.inp")
    ref = json.loads((DATA / "Net2.json").read_text())
    method = lambda s: solvers.Newton(atol=1e-12, rtol=1e-14, max_steps=100,  # noqa: E731
                                      linear_solver=solvers.SparseHostLU(*s.sparsity()))
    result = build_water(net, ref["constants"]["epanet"]).solve(method)
    assert result.converged, result.message()
    assert max_diff(result.head, ref["solution_epanet"]["head"]) <= 1e-6
    assert max_diff(result.flow, ref["solution_epanet"]["flow"]) <= 1e-9


def test_default_method_is_the_library_choice(monkeypatch) -> None:
    import solvers
    calls = []
    choose = solvers.default_method
    monkeypatch.setattr(solvers, "default_method",
                        lambda system, *a, **kw: calls.append(kw) or choose(system, *a, **kw))
    net = read_inp(DATA / "Net1.inp")
    assert build_water(net).solve().converged
    assert calls and calls[0]["atol"] == 1e-12 and calls[0]["batch_size"] is None
    assert build_water(net).sweep([0.9, 1.1]).converged.all()
    assert calls[-1]["batch_size"] == 2


def test_hand_built_islands_are_named_by_the_system_checks() -> None:
    import solvers
    c = WaterConstants.wntr()
    hyd = elements.Hydraulics(c.k_hw, c.minor_g, c.rho_g, c.rq_tol, c.regularisation,
                              c.max_gradient)
    a, b, d, j = (elements.Junction(hyd, 0.0, demand, 0.0) for demand in (0.0, 0.0, 0.0, 1e-3))
    r = elements.Reservoir(50.0)
    pipe = lambda s, e: elements.Pipe(s, e, hyd, 100.0, 0.1, 100.0)  # noqa: E731
    tree = elements.WaterGraph(hyd, {"a": a, "b": b, "j": j}, {"r": r}, {},
                               {"p1": pipe(a, b), "p4": pipe(r, j)}, {})
    with pytest.raises(solvers.ModelError, match=r"\.junctions\['a'\], \.junctions\['b'\]"):
        solvers.System.build(tree)  # a tree island: structurally singular
    loop = elements.WaterGraph(hyd, {"a": a, "b": b, "d": d, "j": j}, {"r": r}, {},
                               {"p1": pipe(a, b), "p2": pipe(b, d), "p3": pipe(d, a),
                                "p4": pipe(r, j)}, {})
    message = solvers.System.build(loop).diagnose()  # a loop island: numerically singular
    assert message and ".junctions['a'], .junctions['b'], .junctions['d']" in message


def test_command_line_entry_solves_the_shipped_example() -> None:
    from scenarios.water import run
    report = run()  # Net1 with EPANET's constants
    assert report.converged and report.scenario == "water"
    ref = json.loads((DATA / "Net1.json").read_text())["solution_epanet"]
    assert max(abs(report.json["heads"][n] - h) for n, h in ref["head"].items()) <= 1e-6
