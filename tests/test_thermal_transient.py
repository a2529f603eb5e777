"""A heated plate warming up (heat capacity on the thermal network) to the steady state that
the DC solve finds, with the closed form of a first-order system."""
import numpy as np
import pytest

from scenarios.thermal import build_thermal, simulate_thermal, solve_thermal

G, C, Q, T_SINK = 2.0, 500.0, 100.0, 300.0


def plate(capacity=True):
    return build_thermal({"plate": T_SINK, "sink": T_SINK},
                         conduction={"mount": ("plate", "sink", G)},
                         fixed={"base": ("sink", T_SINK)}, loads={"heater": ("plate", Q)},
                         capacities={"mass": ("plate", C)} if capacity else {})


def test_plate_warms_to_the_steady_state():
    steady = solve_thermal(plate()).temperature("plate")
    assert steady == pytest.approx(T_SINK + Q / G)  # capacities do not change the DC solve
    tau = C / G
    times = np.linspace(0.0, 10 * tau, 41)
    run = simulate_thermal(plate(), times)
    assert run.converged
    closed = T_SINK + Q / G * -np.expm1(-times / tau)
    np.testing.assert_allclose(run.temperature("plate"), closed, atol=1e-2)
    assert run.temperature("plate")[-1] == pytest.approx(steady, abs=5e-3)


def test_no_capacity_no_dynamics():
    with pytest.raises(ValueError, match="no heat capacities"):
        simulate_thermal(plate(capacity=False), [0.0, 1.0])
