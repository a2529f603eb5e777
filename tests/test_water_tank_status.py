"""The t = 0 snapshot closes links at full and empty tanks, check valves against reverse flow
and pumps that cannot lift the head as EPANET 2.2 does (``linkstatus``, applied in every
hydraulic solve, a single-period one included), so it equals the first solve of
``simulate_eps``.

Expected heads: with the tank link closed, J1 is fed by P1 alone (H-W, C 100, 200 mm, 1000 m):
full tank, R1 100 m less the loss at 7 L/s, 0.5468 m, H(J1) = 99.4532 m (was 90.04 m with
26.5 L/s flowing into the full tank); empty tank, R1 40 m less the loss at 5 L/s, 0.2932 m,
H(J1) = 39.7068 m (was 43.75 m with the empty tank supplying J1). The hard-coded values are the
extended-period run's t = 0 (EPANET's constants); the hand values agree within 2e-5 m. Check
valve: J1 is fed by P1 alone at 5 L/s, 0.2932 m of loss, H(J1) = 99.7068 m (it was 103.75 m
with R2 pushing 24.8 L/s back through the valve). Pump: R1 at 10 m cannot reach R2 at 60 m with a
20 m shutoff head; J1 then sits between the reservoirs at 32.90 m (R2 feeds J1 and R1).
"""
import warnings

import numpy as np
import pytest

from scenarios.water import build_water, read_inp, simulate_eps

FULL = """[TITLE]
full tank
[JUNCTIONS]
 J1 0 5
 J2 10 2
[RESERVOIRS]
 R1 100
[TANKS]
 T1 50 {init} 0 20 {diameter} 0
[PIPES]
 P1 R1 J1 1000 200 100
 P2 J1 J2 500 150 120
 P3 J2 T1 500 150 120
[OPTIONS]
 Units LPS
[TIMES]
 Duration 1:00
[END]
"""

EMPTY = """[TITLE]
empty tank
[JUNCTIONS]
 J1 0 5
[RESERVOIRS]
 R1 40
[TANKS]
 T1 50 2 2 20 10 0
[PIPES]
 P1 R1 J1 1000 200 100
 P2 T1 J1 500 150 120
[OPTIONS]
 Units LPS
[TIMES]
 Duration 1:00
[END]
"""

# R2 (120 m) would push water back through the check valve P2 towards R1 (100 m).
CHECK_VALVE = """[TITLE]
check valve
[JUNCTIONS]
 J1 0 5
 J2 0 5
[RESERVOIRS]
 R1 100
 R2 120
[PIPES]
 P1 R1 J1 1000 200 100
 P2 J1 J2 500 150 120 0 CV
 P3 R2 J2 1000 200 100
[OPTIONS]
 Units LPS
[TIMES]
 Duration 1:00
[END]
"""

# The pump (shutoff head 30 m) cannot lift from R1 (10 m) to R2 (60 m): EPANET closes it.
PUMP = """[TITLE]
pump at shutoff
[JUNCTIONS]
 J1 0 5
[RESERVOIRS]
 R1 10
 R2 60
[PIPES]
 P1 R1 J1 1000 200 100
 P2 R2 J1 1000 200 100
[PUMPS]
 PU1 R1 R2 HEAD C1
[CURVES]
 C1 20 20
[OPTIONS]
 Units LPS
[TIMES]
 Duration 1:00
[END]
"""

CASES = {"full": (FULL.format(init=20, diameter=10), "P3", 99.4531873003),
         "empty": (EMPTY, "P2", 39.7067726352),
         "check valve": (CHECK_VALVE, "P2", 99.7067734128),
         "pump at shutoff": (PUMP, "PU1", 32.9025331924)}


def _quiet_solve(net):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no status warning: the closure is modelled
        return build_water(net).solve()


@pytest.mark.parametrize("case", CASES)
def test_snapshot_closes_the_link_and_equals_eps_at_t0(case) -> None:
    text, link, head_j1 = CASES[case]
    net = read_inp(text)
    result = _quiet_solve(net)
    assert result.converged and result.closed == (link,)
    assert result.head("J1") == pytest.approx(head_j1, abs=1e-8)
    assert result.flow(link) == 0.0 and result.status(link) == 0
    eps = simulate_eps(net)
    for node in net.node_names:
        assert result.head(node) == pytest.approx(eps.heads[node][0], abs=1e-9), node
    for name in net.link_names:
        assert result.flow(name) == pytest.approx(eps.flows[name][0], abs=1e-12), name
        assert result.status(name) == eps.status[name][0], name
    doc = result.to_json()
    assert doc["status"][link] == 0 and doc["flows"][link] == 0.0
    assert result.to_frame("links").loc[link, "status"] == "CLOSED"


def test_snapshot_equals_the_link_closed_in_the_file() -> None:
    closed = read_inp(FULL.format(init=20, diameter=10).replace("[END]",
                                                                "[STATUS]\n P3 Closed\n[END]"))
    by_file = build_water(closed).solve()
    by_check = _quiet_solve(read_inp(FULL.format(init=20, diameter=10)))
    assert by_file.closed == ()
    # EPANET keeps a link closed in the file too, passing dh / CBIG (3.6e-8 m3/s here, 4e-6 m
    # more loss in P1), as one closed by a check: the two are the same system
    for node in ("J1", "J2"):
        assert by_check.head(node) == pytest.approx(by_file.head(node), abs=1e-12)
    assert by_file.flow("P3") == 0.0 and by_file.status("P3") == 0


def test_pump_closed_in_the_file_and_opened_by_a_control_at_t0_runs() -> None:
    """[STATUS] CLOSED, then ``AT TIME 0`` OPEN: the pump runs at speed 1 in the snapshot as in
    EPANET and the extended-period run (the shutoff check read the file's speed 0 and held
    it closed)."""
    text = PUMP.replace("R2 60", "R2 20")
    opened = text.replace("[OPTIONS]", "[STATUS]\n PU1 Closed\n[CONTROLS]\n"
                                        " LINK PU1 OPEN AT TIME 0\n[OPTIONS]")
    net = read_inp(opened)
    result = _quiet_solve(net)
    plain = _quiet_solve(read_inp(text))
    assert result.closed == () and result.flow("PU1") > 0.0
    assert result.flow("PU1") == pytest.approx(plain.flow("PU1"), abs=1e-12)
    assert result.flow("PU1") == pytest.approx(simulate_eps(net).flows["PU1"][0], abs=1e-12)


def test_pump_slowed_by_its_speed_pattern_at_t0_is_checked_at_that_speed() -> None:
    """Speed 0.5 from its pattern: shutoff head 0.25 x 26.67 m < the 10 m lift, so EPANET
    closes the pump (XHEAD); the check used the file's speed 1 and the pump ran backwards
    at -14.1 L/s."""
    text = PUMP.replace("R2 60", "R2 20").replace("HEAD C1", "HEAD C1 PATTERN SP")
    net = read_inp(text.replace("[OPTIONS]", "[PATTERNS]\n SP 0.5\n[OPTIONS]"))
    result = _quiet_solve(net)
    assert result.closed == ("PU1",) and result.flow("PU1") == 0.0
    assert simulate_eps(net).status["PU1"][0] == 0


def test_tank_below_its_maximum_fills() -> None:
    result = _quiet_solve(read_inp(FULL.format(init=10, diameter=10)))
    assert result.closed == () and result.status("P3") == 1
    assert result.flow("P3") > 0.02  # R1 at 100 m feeds the tank at 60 m


def test_tank_of_diameter_0_is_a_fixed_head() -> None:
    """EPANET treats a tank of area 0 as a reservoir: never full, never empty."""
    result = _quiet_solve(read_inp(FULL.format(init=20, diameter=0)))
    assert result.closed == () and result.flow("P3") > 0.02


def test_sweep_members_warn_about_flow_into_a_full_tank() -> None:
    model = build_water(read_inp(FULL.format(init=20, diameter=10)))
    with pytest.warns(UserWarning, match="full or out of an empty tank in 'P3'"):
        sweep = model.sweep(np.array([0.5, 1.0]))
    assert sweep[0].flow("P3") > 0.0


def test_a_sweep_of_tank_levels_is_checked_at_each_members_level() -> None:
    # The check read the file's level (full) for every member: both warned.
    model = build_water(read_inp(FULL.format(init=20, diameter=10)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sweep = model.sweep(np.array([5.0, 10.0]), ".tanks['T1'].level")
    assert all(member.flow("P3") > 0.0 for member in sweep)
    with pytest.warns(UserWarning, match="member 1: flow .* full or out of an empty tank"):
        model.sweep(np.array([5.0, 20.0]), ".tanks['T1'].level")


def test_command_line_snapshot_reports_the_closed_link(tmp_path) -> None:
    from scenarios.water._run import run
    path = tmp_path / "full.inp"
    path.write_text(FULL.format(init=20, diameter=10))
    report = run(str(path))
    assert report.converged and report.json["status"]["P3"] == 0
    assert report.json["heads"]["J1"] == pytest.approx(CASES["full"][2], abs=1e-8)


# A full tank with EPANET 2.2's overflow flag keeps its inflow, spilling it at its maximum.
OVERFLOW = """[TITLE]
overflow
[JUNCTIONS]
 J1 0 5
[RESERVOIRS]
 R1 50
[TANKS]
 T1 0 {init} 0 20 10 0 * {flag}
[PIPES]
 P1 R1 J1 100 200 100
 P2 J1 T1 100 200 100
[OPTIONS]
 Units LPS
[TIMES]
 Duration 2:00
[END]
"""


def _hand_overflow() -> tuple[float, float]:
    """H(J1) and the flow into T1 at 20 m by hand: EPANET's H-W law in ft and cfs (h = 4.727
    C^-1.852 d^-4.871 L q^1.852), P1 and P2 alike, bisection on 50 - H and H - 20 for
    q1 - q2 = 5 L/s."""
    ft = 0.3048
    r = 4.727 * 100 ** -1.852 * (0.2 / ft) ** -4.871 * (100 / ft) * ft / ft ** (3 * 1.852)
    flow = lambda dh: (dh / r) ** (1 / 1.852)  # noqa: E731
    lo, hi = 20.0, 50.0
    for _ in range(100):
        h = 0.5 * (lo + hi)
        lo, hi = (h, hi) if flow(50 - h) - flow(h - 20) > 0.005 else (lo, h)
    return h, flow(h - 20)


def test_overflow_tank_keeps_its_inflow_at_t0() -> None:
    """Hand: H(J1) = 34.5214 m, 142.58 L/s into T1. Flag NO (what the old code did for YES):
    P2 closed, H(J1) = 50 m less P1's loss at 5 L/s (0.02932 m, a tenth of 1000 m's)."""
    head, into_tank = _hand_overflow()
    assert head == pytest.approx(34.5214, abs=1e-4) and into_tank == pytest.approx(0.14258,
                                                                                   abs=1e-5)
    result = _quiet_solve(read_inp(OVERFLOW.format(init=20, flag="YES")))
    assert result.closed == () and result.status("P2") == 1
    assert result.head("J1") == pytest.approx(head, abs=1e-5)
    assert result.flow("P2") == pytest.approx(into_tank, rel=1e-4)
    not_overflowing = _quiet_solve(read_inp(OVERFLOW.format(init=20, flag="NO")))
    assert not_overflowing.closed == ("P2",)
    assert not_overflowing.head("J1") == pytest.approx(49.9707, abs=1e-4)


def test_overflow_tank_fills_then_spills_at_its_maximum_level() -> None:
    """From 19 m, T1 (area 25 pi = 78.54 m2) takes 145.17 L/s: full after 78.54 / 0.14517 =
    541 s; from then on its level stays at 20 m and P2 carries the hand inflow (spilled).
    Without the flag P2 is closed from 541 s."""
    head, into_tank = _hand_overflow()
    eps = simulate_eps(read_inp(OVERFLOW.format(init=19, flag="YES")))
    assert eps.times.tolist() == [0, 541, 3600, 7200] and eps.step_ends[0] == "tank T1 fills"
    assert eps.tank_levels["T1"].tolist() == [19.0, 20.0, 20.0, 20.0]
    assert eps.status["P2"].tolist() == [1, 1, 1, 1]
    np.testing.assert_allclose(eps.flows["P2"][1:], into_tank, rtol=1e-4)
    np.testing.assert_allclose(eps.heads["J1"][1:], head, atol=1e-5)
    closing = simulate_eps(read_inp(OVERFLOW.format(init=19, flag="NO")))
    assert closing.status["P2"].tolist() == [1, 0, 0, 0]


# T1 at its minimum level is the only supply of J1 (10 L/s) and J2 (no demand).
CUT_OFF = """[TITLE]
empty tank, only supply
[JUNCTIONS]
 J1 0 10
 J2 0 0
[TANKS]
 T1 0 0 0 20 10
[PIPES]
 P1 T1 J1 100 300 130
 P2 J1 J2 100 300 130
[OPTIONS]
 Units LPS
[END]
"""

# A tank of volume curve VC (50 m3 at 5 m) drains at 10 L/s: empty at 5000 s (EPANET's LPS
# factor makes it 2.7e-5 m short then), so the link out of it is closed from 5400 s.
DRAINS = """[TITLE]
tank drains
[JUNCTIONS]
 J1 0 10
[TANKS]
 T1 0 5 0 20 0 0 VC
[PIPES]
 P1 T1 J1 100 300 130 0 Open
[CURVES]
 VC 0 0
 VC 10 100
 VC 20 400
[TIMES]
 Duration 2:00
 Hydraulic Timestep 0:30
 Report Timestep 0:30
[OPTIONS]
 Units LPS
[END]
"""


def test_snapshot_warns_that_an_empty_tank_cuts_off_its_junctions() -> None:
    """P1 is closed (dh = CBIG q): J1's 10 L/s make its head about -1.08e7 m, as EPANET's;
    EPANET says "System disconnected". J2 has no demand, so it is not named."""
    with pytest.warns(RuntimeWarning, match=r"system disconnected at t = 0 \(0:00:00\): "
                                            r"junction\(s\) 'J1' with demand") as record:
        result = build_water(read_inp(CUT_OFF)).solve()
    assert result.closed == ("P1",) and result.head("J1") < -1e7
    assert not any("'J2'" in str(w.message) for w in record)


def test_eps_warns_once_when_a_draining_tank_cuts_off_its_junctions() -> None:
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        eps = simulate_eps(read_inp(DRAINS))
    cut = [str(w.message) for w in record if "system disconnected" in str(w.message)]
    assert eps.times.tolist() == [0, 1800, 3600, 5000, 5400, 7200]
    assert eps.status["P1"].tolist() == [1, 1, 1, 1, 0, 0]
    assert len(cut) == 1 and "at t = 5400 s (1:30:00): junction(s) 'J1'" in cut[0]
    assert all(w.category is RuntimeWarning for w in record if "disconnected" in str(w.message))
