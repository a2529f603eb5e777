"""AC power flow: PYPOWER references from a flat start, .m input, load sweeps, bad topology."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from scenarios.powerflow import (IslandError, build_powerflow, elements, read_case_json,
                                 read_matpower, start_voltages)

DATA = Path(__file__).parent / "data" / "acpf"
CASES = ["case9", "case14", "case30", "case89pegase"]


def reference(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())["solution"]


def deviations(case, result, ref: dict) -> dict:
    ids = [b.id for b in case.buses]
    diff = lambda f, key: max(abs(f(result.bus(i)) - v) for i, v in zip(ids, ref[key]))  # noqa
    return {"vm": diff(lambda b: b.vm, "Vm"), "va": diff(lambda b: b.va_deg, "Va_deg"),
            "pg": diff(lambda b: b.pg, "Pg_bus"), "qg": diff(lambda b: b.qg, "Qg_bus")}


@pytest.mark.parametrize("name", CASES)
def test_matches_pypower_from_flat_start(name: str) -> None:
    case = read_case_json(DATA / f"{name}.json")
    ref = reference(name)
    result = build_powerflow(case).solve()
    assert result.converged, result.message()
    dev = deviations(case, result, ref)
    assert dev["vm"] <= 1e-8 and dev["va"] <= 1e-6, dev
    assert dev["pg"] <= 1e-8 and dev["qg"] <= 1e-8, dev  # slack P, Q and PV Q as outputs
    assert result.iterations == ref["tool_iterations"]  # plain Newton, like PYPOWER
    out = json.loads(json.dumps(result.to_json()))
    assert set(out) == {"vm", "va_deg", "converged", "iterations", "residual_norm", "start",
                        "attempts"}
    assert list(out["vm"]) == [str(b.id) for b in case.buses]
    # the JSON has no case voltages: the default start is the flat one, which converges
    assert out["start"] == "case" and [a["start"] for a in out["attempts"]] == ["case"]


def test_branch_power_is_the_matpower_pi_model() -> None:
    rng = np.random.default_rng(0)
    vm_f, vm_t, r, tap = rng.uniform(0.9, 1.1, 4)
    va_f, va_t, shift = rng.uniform(-0.5, 0.5, 3)
    x, b = 0.1, 0.05
    ys = 1 / (r * 0.01 + 1j * x)
    t = tap * np.exp(1j * shift)
    vf, vt = vm_f * np.exp(1j * va_f), vm_t * np.exp(1j * va_t)
    s_f = vf * np.conj((ys + 0.5j * b) / abs(t) ** 2 * vf - ys / np.conj(t) * vt)
    s_t = vt * np.conj(-ys / t * vf + (ys + 0.5j * b) * vt)
    got = elements.branch_power(vm_f, va_f, vm_t, va_t, r * 0.01, x, b, tap, shift)
    np.testing.assert_allclose(np.asarray(got), [s_f.real, s_f.imag, s_t.real, s_t.imag],
                               rtol=1e-13, atol=1e-13)


def test_phase_shifters_are_modelled() -> None:
    case = read_case_json(DATA / "case89pegase.json")
    shifters = [br for br in case.branches if br.shift_deg != 0.0]
    assert len(shifters) == 3
    graph = build_powerflow(case).graph
    k = shifters[0].index
    assert graph.branches[k].shift == pytest.approx(np.radians(shifters[0].shift_deg))


@pytest.mark.parametrize("name", ["case9", "case14"])
def test_matpower_file_input(name: str) -> None:
    case = read_matpower(DATA / f"{name}.m")
    result = build_powerflow(case).solve()
    dev = deviations(case, result, reference(name))
    assert dev["vm"] <= 1e-8 and dev["va"] <= 1e-6, dev


def test_load_scaling_sweep_is_one_batched_solve() -> None:
    case = read_case_json(DATA / "case14.json")
    model = build_powerflow(case)
    scales = np.array([0.8, 1.0, 1.2])
    sweep = model.sweep(scales)
    assert sweep.converged.all() and len(sweep) == 3
    dev = deviations(case, sweep[1], reference("case14"))
    assert dev["vm"] <= 1e-8 and dev["va"] <= 1e-6, dev
    slack = next(b.id for b in case.buses if b.type == "slack")
    pd = sum(b.Pd for b in case.buses)
    for s, member in zip(scales, sweep):
        alone = build_powerflow(case)
        alone.graph.loading.scale = float(s)
        single = alone.solve()
        assert max(abs(member.bus(b.id).vm - single.bus(b.id).vm) for b in case.buses) <= 1e-12
        losses = sum(member.bus(b.id).pg for b in case.buses) - s * pd
        assert 0.0 < losses < 0.1 * s * pd
    assert np.all(np.diff([m.bus(slack).pg for m in sweep]) > 0)
    assert np.all(np.diff(sweep.vm(14)) < 0)  # heavier load, lower voltage at a PQ bus


def test_bus_kinds_follow_the_bus_types() -> None:
    case = read_case_json(DATA / "case9.json")
    graph = build_powerflow(case).graph
    kinds = {b.id: type(graph.buses[b.id]) for b in case.buses}
    assert kinds[1] is elements.SlackBus and kinds[2] is elements.PVBus
    assert kinds[5] is elements.PQBus
    with pytest.raises(KeyError, match="no bus 99"):
        build_powerflow(case).solve().bus(99)


def test_island_without_slack_is_named_before_newton() -> None:
    case = read_case_json(DATA / "case9.json")
    cut = [br for br in case.branches if {br.from_bus, br.to_bus} not in ({5, 6}, {8, 9})]
    with pytest.raises(IslandError) as err:
        build_powerflow(dataclasses.replace(case, branches=tuple(cut)))
    assert set(err.value.nodes) == {2, 3, 6, 7, 8}
    assert "slack" in str(err.value) and "2, 3, 6, 7, 8" in str(err.value)
    no_slack = [dataclasses.replace(b, type="PV") if b.type == "slack" else b
                for b in case.buses]
    with pytest.raises(IslandError, match="no slack"):
        build_powerflow(dataclasses.replace(case, buses=tuple(no_slack)))


def test_islands_on_arrays_match_the_generic_search() -> None:
    """The power-flow island search (connected components on bus positions) names the same
    islands, in the same order, as ``islands_without_reference``."""
    from scenarios._islands import islands_without_reference
    from scenarios.powerflow._build import _islands_without_slack
    case = read_case_json(DATA / "case30.json")
    rng = np.random.default_rng(7)
    ids = [b.id for b in case.buses]
    for _ in range(40):
        keep = tuple(br for br in case.branches if rng.random() < 0.6)
        slack = set(rng.choice(ids, size=2).tolist())
        buses = tuple(dataclasses.replace(b, type="slack" if b.id in slack else "PQ")
                      for b in case.buses)
        cut = dataclasses.replace(case, buses=buses, branches=keep)
        expected = islands_without_reference(ids, [(br.from_bus, br.to_bus) for br in keep],
                                             slack)
        assert _islands_without_slack(cut, ids) == expected


def test_singular_dc_power_flow_gives_no_dc_start() -> None:
    """Bus 8 hangs on zero-reactance branches only: B' is exactly singular and the DC start
    is refused (factored by `solvers.superlu`, whose memory safety test_sparse_lu.py fuzzes)."""
    case = read_matpower(DATA / "case14.m")
    branches = tuple(dataclasses.replace(b, x=0.0) if 8 in (b.from_bus, b.to_bus) else b
                     for b in case.branches)
    assert start_voltages(dataclasses.replace(case, branches=branches), "dc") is None
    assert start_voltages(case, "dc") is not None


def test_command_line_entry_solves_the_shipped_example() -> None:
    from scenarios.powerflow import run
    report = run()  # MATPOWER's case9.m
    assert report.converged and report.scenario == "powerflow"
    ref = reference("case9")
    assert max(abs(v - r) for v, r in zip(report.json["vm"].values(), ref["Vm"])) <= 1e-8
    rows, buses = report.rows, report.json
    assert len(rows) == 10 and rows[0][0] == "start" and rows[-1] == rows[9]
    assert rows[1:3] == [(f"bus {b}", f"{buses['vm'][b]:.6f} / {buses['va_deg'][b]:.4f}",
                          "Vm p.u. / Va deg") for b in ("1", "2")]


def shifter_chain(va_deg=(0, -90, -180), vm5: float = 1.0) -> str:
    """Slack bus 1 -> bus 2 -> bus 3 through two 90-degree phase shifters (light loads): Newton
    from a flat start fails (the angles must turn by 90 degrees per bus), from the DC angles
    or voltages near the solution it converges in 3-4 steps."""
    bus = "\n".join(f"{i} {3 if i == 1 else 1} {20 * (i > 1)} {7 * (i > 1)} 0 0 1 1 {va} 230 "
                    "1 1.1 0.9;" for i, va in enumerate(va_deg, start=1))
    branch = "\n".join(f"{i} {i + 1} 0.01 0.1 0 0 0 0 1 90 1 -360 360;" for i in (1, 2))
    return (f"function mpc = shifters\nmpc.version = '2';\nmpc.baseMVA = 100;\nmpc.bus = [\n"
            f"{bus}\n];\nmpc.gen = [\n1 0 0 300 -300 1 100 1 500 0;\n];\nmpc.branch = [\n"
            f"{branch}\n];\n")


def test_default_start_is_the_case_files_voltages() -> None:
    case = read_matpower(DATA / "case14.m")   # its VM/VA columns are not flat
    bus4, bus2 = case.bus(4), case.bus(2)     # PQ; PV with Vg = 1.045
    assert (bus4.Vm0, bus4.Va0_deg) == (1.019, -10.33)
    for start, vm4, va4 in (("case", 1.019, np.radians(-10.33)), ("flat", 1.0, 0.0)):
        graph = build_powerflow(case, start).graph
        assert graph.buses[4].vm == pytest.approx(vm4) and graph.buses[4].va == pytest.approx(va4)
        assert graph.buses[2].vm == pytest.approx(bus2.Vset)   # set points held at every start
    dc_vm, dc_va = start_voltages(case, "dc")
    assert dc_vm[case.bus(4).index] == 1.0 and -0.4 < dc_va[case.bus(4).index] < -0.1
    from_case, flat = build_powerflow(case).solve(), build_powerflow(case, "flat").solve()
    assert (from_case.start, flat.start) == ("case", "flat")
    assert max(abs(from_case.bus(b.id).vm - flat.bus(b.id).vm) for b in case.buses) <= 1e-10
    assert from_case.iterations < flat.iterations  # the file holds a solved case
    with pytest.raises(ValueError, match="unknown power-flow start 'warm'"):
        build_powerflow(case, "warm")


@pytest.mark.parametrize("va, start, tried", [
    ((0, -90, -180), "flat", ["flat", "case"]),   # flat fails: the case voltages are next
    ((0, 0, 0), "case", ["case", "dc"]),          # case = flat (skipped), then DC angles
])
def test_failed_start_falls_back_and_says_which_start_solved(va, start, tried) -> None:
    case = read_matpower(shifter_chain(va))
    result = build_powerflow(case, start).solve()
    assert result.converged and [a.start for a in result.attempts] == tried
    assert [a.converged for a in result.attempts] == [False, True]
    assert result.start == tried[-1] and result.attempt is result.attempts[-1]
    assert result.bus(3).va_deg == pytest.approx(176.58, abs=0.01)   # -183.42 as MATPOWER's angle(V)
    assert result.to_json()["start"] == tried[-1]
    assert f"failed first: {start}" in result.start_note()
    alone = build_powerflow(case, start).solve(fallback=False)
    assert not alone.converged and alone.start == start and len(alone.attempts) == 1


def test_command_line_flat_start_option_reports_the_start(tmp_path, capsys) -> None:
    from scenarios._cli import main
    path = tmp_path / "shifters.m"
    path.write_text(shifter_chain())
    out = tmp_path / "pf.json"
    assert main(["run", "powerflow", "--input", str(path), "--json", str(out)]) == 0
    assert json.loads(out.read_text())["start"] == "case"
    assert main(["run", "powerflow", "--input", str(path), "--flat-start", "--json",
                 str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["start"] == "case" and doc["attempts"][0]["start"] == "flat"
    assert not doc["attempts"][0]["converged"]
    text = capsys.readouterr().out
    assert "solved from the case file's bus voltages" in text and "failed first: flat" in text
    assert main(["run", "water", "--flat-start"]) == 2
    assert "no --flat-start option" in capsys.readouterr().err


def test_without_a_solution_every_start_then_the_fallback_stages_are_tried() -> None:
    case = read_matpower(shifter_chain().replace("20 7 0 0 1 1 -90", "900 300 0 0 1 1 -90"))
    result = build_powerflow(case).solve()     # 9 p.u. through x = 0.1: no power flow exists
    assert not result.converged
    assert [(a.start, a.method) for a in result.attempts] == [
        ("case", "newton"), ("flat", "newton"), ("dc", "newton"), ("case", "fallbacks")]
    assert result.start_note().startswith("best attempt from")
    assert result.residual_norm == min(a.residual_norm for a in result.attempts)


def test_the_default_method_is_the_library_choice(monkeypatch) -> None:
    import solvers
    calls = []
    choose = solvers.default_method
    monkeypatch.setattr(solvers, "default_method",
                        lambda system, *a, **kw: calls.append(kw) or choose(system, *a, **kw))
    model = build_powerflow(read_matpower(DATA / "case9.m"))
    assert model.solve().converged
    assert calls[0] == {"batch_size": None, "atol": 1e-10, "rtol": 1e-12}
    assert model.sweep([0.9, 1.1]).converged.all() and calls[-1]["batch_size"] == 2


def _symmetric_pattern(a, b, nodes: int, block: int):
    """Pattern of a graph's Laplacian (edges a-b, every diagonal), ``block`` unknowns per node
    coupled densely, as a power-flow Jacobian's (Va, Vm) pairs are."""
    from solvers import SparsityPattern
    d = np.arange(nodes)
    r, c = np.concatenate([a, b, d]), np.concatenate([b, a, d])
    i, j = np.meshgrid(np.arange(block), np.arange(block), indexing="ij")
    rows = (r[:, None] * block + i.ravel()).ravel()
    cols = (c[:, None] * block + j.ravel()).ravel()
    return SparsityPattern(rows, cols, (nodes * block, nodes * block))


def _mesh(k: int):
    """A k x k 2-D grid (5-point stencil): nested dissection's home ground."""
    idx = np.arange(k * k).reshape(k, k)
    a = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel()])
    b = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel()])
    return _symmetric_pattern(a, b, k * k, 1)


def _transmission(buses: int, seed: int = 0):
    """A transmission-like grid: a random tree (each bus joined to one of the 30 numbered
    before it) plus a chord per 8 buses between nearby buses; two unknowns per bus."""
    rng = np.random.default_rng(seed)
    b = np.arange(1, buses)
    a = b - rng.integers(1, np.minimum(b, 30) + 1)
    extra = rng.integers(0, buses - 40, buses // 8)
    a = np.concatenate([a, extra])
    b = np.concatenate([b, extra + rng.integers(5, 40, extra.size)])
    return _symmetric_pattern(a, b, buses, 2)


@pytest.mark.parametrize("klu", [True, False], ids=["klu", "no-klu"])
def test_large_host_lu_orders_by_the_cheaper_factorization(klu, monkeypatch) -> None:
    from solvers.linear import _klu
    from solvers.linear import _auto
    from solvers.linear._auto import ND_MIN, host_solver
    from solvers.linear._host_lu import ordering_cost
    if klu and not _klu.available():
        pytest.skip("KLU (the optional klujax package) is not installed")
    monkeypatch.setattr(_klu, "available", lambda: klu)
    mesh, grid = _mesh(50), _transmission(1200)
    assert min(mesh.shape[0], grid.shape[0]) >= ND_MIN  # both beyond the small-pattern rule
    # a small meshed 2-D grid gets KLU where installed (few multiply-adds despite its fill);
    # beyond KLU's reach it keeps nested dissection (as cheap as minimum degree, faster)
    assert host_solver(mesh).factorization == ("klu" if klu else "superlu")
    monkeypatch.setattr(_auto, "KLU_MAX_PRODUCTS", 0)
    assert host_solver(mesh).permc_spec == "ND"
    assert host_solver(mesh).factorization == "superlu"
    # a transmission grid gets minimum degree (nested dissection fills far more there), or
    # KLU (its own minimum degree) where it is installed
    solver = host_solver(grid)
    if klu:
        assert solver.factorization == "klu"
    else:
        assert solver.permc_spec == "MMD_AT_PLUS_A" and solver.diag_pivot_thresh == 0.1
        assert solver.factorization == "superlu"
    mmd, nd = ordering_cost(grid, "MMD_AT_PLUS_A"), ordering_cost(grid, "ND")
    assert nd[0] > 1.5 * mmd[0] and nd[1] > 3 * mmd[1]
    assert mmd[0] < 2 * grid.nnz  # its factors stay near the Jacobian's size


def test_ordering_cost_counts_the_factors_of_a_chain() -> None:
    from solvers.linear._host_lu import ordering_cost
    chain = _symmetric_pattern(np.arange(4), np.arange(1, 5), 5, 1)
    fill, products = ordering_cost(chain, "MMD_AT_PLUS_A")
    # no fill (L's unit diagonal is counted); per pivot one multiply-add and one divide
    assert fill == chain.nnz + 5 and products == 2 * 4
    with pytest.raises(ValueError, match="symmetric ordering.*got 'COLAMD'"):
        ordering_cost(chain, "COLAMD")


def test_q_limit_violations_are_reported_not_enforced() -> None:
    """case14's slack takes Qg = -16.5 Mvar below its Qmin 0 (PYPOWER's answer, limits not
    enforced); a second generator at bus 8 adds its limits to the bus's."""
    case = read_matpower(DATA / "case14.m")
    result = build_powerflow(case).solve()
    slack = reference("case14")["slack"]
    assert result.q_limit_violations() == [{"bus": 1, "qg": pytest.approx(slack["Qg"]),
                                            "qmin": 0.0, "qmax": 0.1}]
    qg8 = result.bus(8).qg                    # 0.176 p.u.: within 24 Mvar
    low = (DATA / "case14.m").read_text().replace("	8	0	17.399999999999999	24", "	8	0	0	10")
    assert [v["bus"] for v in build_powerflow(read_matpower(low)).solve()
            .q_limit_violations()] == [1, 8] and qg8 > 0.1


def test_command_line_shows_the_readers_changes_and_q_limits(tmp_path, capsys) -> None:
    """The reader's changes (a generator out of service, its PV bus made PQ) were only in
    ``case.notes``, and nothing said that Q limits are not enforced."""
    from scenarios._cli import main
    text = (DATA / "case14.m").read_text().replace("100	1	100	0	0", "100	0	100	0	0", 1)
    path, out = tmp_path / "case14_off.m", tmp_path / "pf.json"
    path.write_text(text)
    assert main(["run", "powerflow", "--input", str(path), "--json", str(out)]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "case: bus 3 (PV) has no in-service generator: treated as PQ" in printed
    assert "Q limits are not enforced" in printed and "bus 1 Qg = -" in printed
    doc = json.loads(out.read_text())
    assert "dropped 1 out-of-service generator(s)" in doc["case_notes"]
    assert doc["q_limits"]["enforced"] is False
    over = doc["q_limits"]["violations"]      # bus 2 now supplies bus 3's Q: above 50 Mvar
    assert [v["bus"] for v in over] == [1, 2] and over[1]["qg"] > over[1]["qmax"] == 0.5


def _case9_with_bus9_start(vm: str, va: str) -> str:
    row = "	9	1	125	50	0	0	1	1	0"
    text = (DATA / "case9.m").read_text()
    assert row in text
    return text.replace(row, f"	9	1	125	50	0	0	1	{vm}	{va}")


def test_a_negative_start_magnitude_still_reports_the_positive_voltage() -> None:
    """From VM = -1, VA = 180 at bus 9, Newton lands on -|V| at Va + 180 deg, the same
    complex voltage: bus 9 read vm = -0.9576 at 175.65 deg (MATPOWER reports |V|)."""
    result = build_powerflow(read_matpower(_case9_with_bus9_start("-1", "180"))).solve()
    ref = reference("case9")
    assert result.converged and min(result.vm().values()) > 0
    assert deviations(read_matpower(DATA / "case9.m"), result, ref)["vm"] < 1e-8
    assert result.bus(9).va_deg == pytest.approx(ref["Va_deg"][8], abs=1e-8)
    assert result.to_json()["vm"]["9"] == pytest.approx(ref["Vm"][8], abs=1e-8)


@pytest.mark.parametrize("va", ["3600", "-3590", "720.5"])
def test_angles_are_reported_in_matpowers_range(va: str) -> None:
    """From VA = 3600 deg at bus 9 Newton converges 3600 deg away from MATPOWER's root (the
    same voltages): results read 3595.65 deg for bus 9, MATPOWER's angle(V) reads -4.35."""
    result = build_powerflow(read_matpower(_case9_with_bus9_start("1", va))).solve()
    assert result.converged
    assert deviations(read_matpower(DATA / "case9.m"), result, reference("case9"))["va"] < 1e-8
    assert all(-180 <= a <= 180 for a in result.va_deg().values())


def test_angle_reports_keep_set_angles_and_diverged_values(recwarn) -> None:
    """A slack set to -180 deg is reported as set (MATPOWER's angle(V) keeps it: -180), a
    diverged member's inf stays inf without numpy's 'invalid value' warning."""
    from scenarios.powerflow._model import _as_matpower_reports
    _, va = _as_matpower_reports(np.ones(4), np.array([-np.pi, np.pi, np.inf, np.radians(-3590)]))
    assert np.degrees(va[:3]).tolist() == [-180.0, 180.0, np.inf]
    assert np.degrees(va[3]) == pytest.approx(10.0) and not recwarn.list


def test_a_low_voltage_solution_is_pointed_out(tmp_path, capsys) -> None:
    """From VM = 0.05 at bus 9 Newton converges to another root (bus 9 at 0.12 p.u.), which
    the command line reported as any solution."""
    from scenarios._cli import main
    result = build_powerflow(read_matpower(_case9_with_bus9_start("0.05", "0"))).solve()
    assert result.converged and list(result.low_voltage_buses()) == [9]
    assert build_powerflow(read_matpower(DATA / "case9.m")).solve().low_voltage_buses() == {}
    path = tmp_path / "low.m"
    path.write_text(_case9_with_bus9_start("0.05", "0"))
    assert main(["run", "powerflow", "--input", str(path)]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "1 bus(es) below 0.5 p.u. (bus 9 0.12" in printed and "try --flat-start" in printed
