"""Edge cases of the t = 0 snapshot against EPANET 2.2: constant-power pumps at small flows,
links closed in the file, controls on junction pressure, pressure units with SI flows, and
numbers too large for a time or a pump curve fit.

The reference numbers are EPANET 2.2's (libepanet22.so of the wntr 1.5.0 wheel through its
toolkit API, ACCURACY 1e-8, TRIALS 500, duration 0), in m and m3/s, as in tests/data/water.
"""
from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from scenarios.water import (FormatError, WaterConstants, build_water, elements, read_inp,
                             simulate_eps)
from test_water import MIXED


def _check(result, heads: dict, flows: dict, dh: float, dq: float) -> None:
    assert result.converged, result.message()
    for node, h in heads.items():
        assert result.head(node) == pytest.approx(h, abs=dh), node
    for link, q in flows.items():
        assert result.flow(link) == pytest.approx(q, abs=dq), link


POWER = """
[JUNCTIONS]
J1  0  0
J2  0  0
[RESERVOIRS]
R1  100
R2  200
[PIPES]
P1  J1  J2  1000  300  100
P2  J2  R2  1000  300  100
[PUMPS]
PU  R1  J1  POWER 0.1
[OPTIONS]
Units {units}
[END]
"""
#: EPANET 2.2: the pump lifts 100 m (ft) with 0.1 kW (hp): q = P / (rho g dh).
POWER_REF = {
    "LPS": ({"J1": 200.00006026452866, "J2": 200.00003013226433},
            {"PU": 1.0201659990878517e-4, "P2": 1.0201659990878517e-4}),
    "GPM": ({"J1": 60.960000000537306, "J2": 60.96000000026865},
            {"PU": 2.4958459197436e-4, "P2": 2.4958052317e-4}),
}


@pytest.mark.parametrize("units", sorted(POWER_REF))
def test_power_pump_at_small_flow_finds_epanets_root(units) -> None:
    """EPANET's power-pump law rises again below q* = sqrt(k / CBIG) (``CBIG q``), a spurious
    root at q ~ dh / CBIG that Newton found: 9.3e-8 m3/s instead of 1.0e-4 (LPS), and with
    US units the pump was then closed as carrying no flow."""
    result = build_water(read_inp(POWER.format(units=units))).solve()
    assert result.closed == ()
    heads, flows = POWER_REF[units]
    _check(result, heads, flows, dh=1e-8, dq=1e-8)


def test_power_pump_gain_is_finite_falling_and_c1_through_zero_flow() -> None:
    c = WaterConstants.epanet(read_inp(POWER.format(units="LPS")))
    hyd = elements.Hydraulics(c.k_hw, c.minor_g, c.rho_g, c.rq_tol, 0.0, c.max_gradient)
    start, end = elements.Reservoir(0.0), elements.Junction(hyd, 0.0, 0.0, 0.0)

    def gain(q):
        return elements.PowerPump(start, end, hyd, 100.0, 1.0, q).gain()

    k = 100.0 / c.rho_g
    q_star = float(np.sqrt(k / c.max_gradient))
    qs = jnp.asarray([-1.0, -1e-9, 0.0, 1e-12, 0.5 * q_star, q_star * (1 - 1e-9),
                      q_star * (1 + 1e-9), 1e-4, 1.0])
    values, slopes = jax.vmap(jax.value_and_grad(gain))(qs)
    assert np.all(np.isfinite(values)) and np.all(np.isfinite(slopes))
    assert np.all(np.diff(np.asarray(values)) < 0) and np.all(np.asarray(slopes) < 0)
    assert float(values[6]) == pytest.approx(k / q_star, rel=1e-8)      # the law k / q
    assert float(values[5]) == pytest.approx(float(values[6]), rel=1e-8)  # continuous
    assert float(slopes[5]) == pytest.approx(float(slopes[6]), rel=1e-6)  # and C1


def test_link_closed_in_the_file_passes_epanets_tiny_flow() -> None:
    """P6 is CLOSED in [PIPES]: EPANET keeps it with dh = CBIG q, which passes 9e-8 m3/s
    from J1 to J4; the snapshot dropped it, 2.2e-5 m off at J4 (now EPANET's noise, 2e-7)."""
    result = build_water(read_inp(MIXED)).solve()
    heads = {"J1": 122.729042230386, "J2": 115.6946504098083, "J3": 122.59256305120775,
             "J4": 95.58969767649536, "J5": 126.93385917222409}
    flows = {"P1": 0.016084426213233426, "P4": 0.027444243335583013, "P6": 0.0}
    _check(result, heads, flows, dh=1e-6, dq=1e-9)
    assert result.status("P6") == 0 and result.to_frame("links").loc["P6", "status"] == "CLOSED"


PRESSURE_CONTROL = """
[JUNCTIONS]
J1  0  10
J2  0  5
J3  0  3
[RESERVOIRS]
R1  60
[TANKS]
T1  20  10  1  20  15
[PIPES]
P1  R1  J1  500  200  100
P2  J1  J2  500  200  100
P3  J2  T1  500  200  100
P4  J1  J3  500  150  100
P5  J3  J2  500  150  100
[PUMPS]
PU1  R1  J3  HEAD C1
[CURVES]
C1  20  30
[CONTROLS]
LINK P4 CLOSED IF NODE J1 BELOW 100
[OPTIONS]
Units LPS
[END]
"""


def test_control_on_junction_pressure_acts_in_the_snapshot() -> None:
    """EPANET applies controls on junction pressure inside the t = 0 solve (``pswitch``):
    J1 is below 100 m, so P4 closes. The snapshot ignored the control, 9.3 m off at J3."""
    result = build_water(read_inp(PRESSURE_CONTROL)).solve()
    heads = {"J1": 51.501937234394916, "J2": 46.18078689213861, "J3": 66.47901860503605}
    flows = {"P1": 0.04477044222180987, "P3": 0.06338789691088584, "P4": 0.0,
             "PU1": 0.03661745468907586}
    _check(result, heads, flows, dh=1e-9, dq=1e-12)
    assert result.status("P4") == 0 and result.closed == ()
    assert result.to_frame("links").loc["P4", "status"] == "CLOSED"
    above = build_water(read_inp(PRESSURE_CONTROL.replace("BELOW 100", "BELOW 10"))).solve()
    _check(above, {"J1": 53.427005493542985, "J3": 57.221105412957144},
           {"P4": -0.013592126632825916}, dh=1e-9, dq=1e-12)  # the control does not fire


#: A reservoir feeding J1, and J2 beyond it (the pipes from J1 on follow).
R1_J1_J2 = """
[JUNCTIONS]
J1  0  10
J2  0  5
[RESERVOIRS]
R1  60
[PIPES]
P1  R1  J1  500  200  100
"""

SI_PSI = R1_J1_J2 + """P2  J1  J2  500  200  100
P3  R1  J2  800  200  100
[CONTROLS]
LINK P3 CLOSED IF NODE J1 ABOVE 70
[OPTIONS]
Units LPS
Pressure {pressure}
[END]
"""


@pytest.mark.parametrize("pressure, fires", [("PSI", False), ("METERS", False),
                                             ("KPA", True)])
def test_si_flow_units_read_pressure_psi_as_metres(pressure, fires) -> None:
    """EPANET 2.2 (``adjustdata``) turns PRESSURE PSI into METERS with SI flow units: J1 at
    59.6 m is not above 70 (m); read as 70 psi (49.3 m) the control closed P3, 0.9 m off."""
    net = read_inp(SI_PSI.format(pressure=pressure))
    result = build_water(net).solve()
    eps = simulate_eps(net, duration=3600)
    heads = ({"J1": 58.87848563787937, "J2": 58.731871399240255} if fires else
             {"J1": 59.60612239224647, "J2": 59.62140175487192})
    _check(result, heads, {"P3": 0.0 if fires else 0.006474667238445441}, dh=1e-9, dq=1e-12)
    assert result.status("P3") == eps.status["P3"][0] == (0 if fires else 1)
    for node, h in heads.items():
        assert eps.heads[node][0] == pytest.approx(h, abs=1e-9), node


def test_pressure_units_and_si_keyword_are_read_as_epanet() -> None:
    assert read_inp(SI_PSI.format(pressure="METERS").replace("LPS", "SI")).flow_units == "LPS"
    with pytest.raises(FormatError, match=r":\d+: unknown pressure units 'BAR'"):
        read_inp(SI_PSI.format(pressure="BAR"))


@pytest.mark.parametrize("extra, problem", [
    ("[TIMES]\nDuration 1e308", "bad time"),
    ("[CONTROLS]\nLINK P1 CLOSED AT TIME 1e308", "bad control time"),
    ("[PUMPS]\nPU R1 J1 HEAD C\n[CURVES]\nC 1e308 30", "head curve 'C' .* overflows")])
def test_numbers_too_large_are_a_format_error(extra, problem) -> None:
    """OverflowError, not FormatError, came out of 3600 * 1e308 s (a time in hours) and of a
    1-point pump curve at 1e308 L/s (q1 ** C in EPANET's fit)."""
    with pytest.raises(FormatError, match=rf"<string>:\d+: {problem}"):
        read_inp(SI_PSI.format(pressure="METERS").replace("[END]", extra + "\n[END]"))


CLOSED_JOIN = R1_J1_J2 + """P2  J1  J2  500  200  100  0  CLOSED
[CONTROLS]
LINK P2 OPEN IF NODE J1 BELOW 100
[OPTIONS]
Units LPS
[END]
"""


def _disconnected(record) -> list:
    return [str(w.message) for w in record if "system disconnected" in str(w.message)]


def test_a_link_closed_in_the_file_joins_its_junction_for_a_control_to_open() -> None:
    """J2 hangs on P2, CLOSED in the file; the control opens P2 in the t = 0 solve, as EPANET
    and simulate_eps do. The snapshot counted only links open at t = 0 and refused J2."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        result = build_water(read_inp(CLOSED_JOIN)).solve()
        eps = simulate_eps(read_inp(CLOSED_JOIN), duration=3600)
    assert result.status("P2") == 1 and eps.status["P2"][0] == 1
    for node in ("J1", "J2"):
        assert result.head(node) == pytest.approx(eps.heads[node][0], abs=1e-9), node
    assert result.flow("P2") == pytest.approx(0.005, abs=1e-12)
    assert result.head("J2") == pytest.approx(58.7318711721, abs=1e-6) and not _disconnected(record)


def test_a_demand_junction_that_only_a_closed_link_joins_is_named_not_refused() -> None:
    """Without the control, J2's 5 L/s pass closed P2 (dh = CBIG q: -5.4e6 m at J2), as in
    EPANET, which warns that the system is disconnected; so do the snapshot, the
    extended-period run and a sweep (the build refused the network). No demand, no warning."""
    text = CLOSED_JOIN.replace("LINK P2 OPEN IF NODE J1 BELOW 100", "")
    with pytest.warns(RuntimeWarning, match=r"system disconnected at t = 0 \(0:00:00\): "
                                            r"junction\(s\) 'J2' with demand"):
        result = build_water(read_inp(text)).solve()
    assert result.status("P2") == 0 and result.flow("P2") == 0.0 and result.head("J2") < -5e6
    with pytest.warns(RuntimeWarning, match=r"at t = 0 s \(0:00:00\): junction\(s\) 'J2'"):
        simulate_eps(read_inp(text), duration=3600)
    with pytest.warns(RuntimeWarning, match=r"in sweep member\(s\) 0, 1: junction\(s\) 'J2'"):
        build_water(read_inp(text)).sweep([1.0, 2.0])
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        idle = build_water(read_inp(text.replace("J2  0  5", "J2  0  0"))).solve()
    assert idle.head("J2") == pytest.approx(idle.head("J1"), abs=1e-9) and not _disconnected(record)


def _edited(kind: str, model) -> None:
    """One user edit to a built graph of PRESSURE_CONTROL (plus P6, closed in the file)."""
    g = model.graph
    if kind == "speed":
        g.pumps["PU1"].speed = 0.8
    elif kind == "roughness":
        g.pipes["P1"].roughness = 80.0
    elif kind == "demand":
        g.junctions["J2"].demand = 0.01
    else:
        g.pipes["P6"].status = 1.0


FILE_EDITS = {"speed": ("PU1  R1  J3  HEAD C1", "PU1  R1  J3  HEAD C1  SPEED 0.8"),
              "roughness": ("P1  R1  J1  500  200  100", "P1  R1  J1  500  200  80"),
              "demand": ("J2  0  5", "J2  0  10"),
              "status": ("P6  J1  J3  500  100  100  0  CLOSED", "P6  J1  J3  500  100  100")}


@pytest.mark.parametrize("kind", list(FILE_EDITS))
def test_edits_to_the_graph_hold_when_a_control_re_solves(kind) -> None:
    """The control closes P4, so the snapshot is solved again: the graph edited after the
    build must solve as the file with the same change. The re-solve rebuilt every open pump
    at the file's speed (PU1 0.03662 m3/s at speed 1 instead of 0.03187 at 0.8) and every
    link at the file's status."""
    base = PRESSURE_CONTROL.replace("[PUMPS]", "P6  J1  J3  500  100  100  0  CLOSED\n[PUMPS]")
    old, new = FILE_EDITS[kind]
    model = build_water(read_inp(base))
    _edited(kind, model)
    result, reference = model.solve(), build_water(read_inp(base.replace(old, new))).solve()
    assert result.status("P4") == 0 and reference.status("P4") == 0  # the control fired
    _check(result, reference.heads(), reference.flows(), dh=1e-9, dq=1e-12)
    assert result.to_json()["status"] == reference.to_json()["status"]
