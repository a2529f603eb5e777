"""The founding example against its analytic answers: x = c/m, dx/dm = -c/m^2."""
from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from scenarios import equations as eq
import solvers
from solvers import solve, solve_batch

PROVIDERS = {"m": 2.0, "k": -4.0}
EQUATIONS = {"a": (1.0, "m"), "b": (3.0, "m"), "c": (-5.0, "m"), "d": (8.0, "k")}
NEWTON = solvers.Newton()  # compiles faster than the default polyalgorithm


def _graph(m=PROVIDERS["m"]):
    return eq.build_equations({"m": m, "k": PROVIDERS["k"]}, EQUATIONS)


@pytest.fixture(scope="module")
def solved():
    return eq.solve_equations(_graph())


def test_solution_is_c_over_m(solved):
    assert bool(solved.solution.converged)
    for name, (c, provider) in EQUATIONS.items():
        assert solved.x(name) == pytest.approx(c / PROVIDERS[provider], rel=1e-12, abs=1e-14)
    assert solved.to_json()["x"]["d"] == pytest.approx(-2.0, rel=1e-12)


def test_providers_stay_shared_and_the_input_is_untouched(solved):
    graph = _graph()
    assert graph.equations[0].gradient is graph.equations[1].gradient is graph.provider("m")
    out = solved.graph
    assert out.equation("a").gradient is out.equation("c").gradient is out.provider("m")
    assert out.equation("d").gradient is not out.provider("m")
    again = eq.solve_equations(graph, solver=NEWTON)
    assert float(graph.equation("a").x) == 0.0 and float(graph.provider("m").value) == 2.0
    assert again.x("b") == pytest.approx(1.5)


def test_batch_over_all_constants_in_one_solve():
    graph = _graph()
    rng = np.random.default_rng(0)
    constants = rng.normal(size=(7, len(EQUATIONS))) * 10
    paths = {f".equations[{i}].constant": constants[:, i] for i in range(len(EQUATIONS))}
    sol = solve_batch(graph, paths, solver=NEWTON)
    assert np.all(np.asarray(sol.converged))
    slopes = np.array([PROVIDERS[p] for _, p in EQUATIONS.values()])
    xs = np.stack([np.asarray(e.x) for e in sol.system.equations], axis=-1)
    np.testing.assert_allclose(xs, constants / slopes, rtol=1e-12, atol=1e-13)


def test_sweep_of_a_shared_slope_moves_only_its_equations():
    values = np.linspace(0.5, 3.0, 6)
    sweep = eq.sweep_equations(_graph(), "m", values, solver=NEWTON)
    assert sweep.converged and sweep.x("a").shape == (6,)
    np.testing.assert_allclose(sweep.x("b"), 3.0 / values, rtol=1e-12)
    np.testing.assert_allclose(sweep.x("c"), -5.0 / values, rtol=1e-12)
    np.testing.assert_allclose(sweep.x("d"), np.full(6, -2.0), rtol=1e-12)
    doc = sweep.to_json()
    assert doc["parameter"] == "m" and len(doc["sweep"]) == 6
    assert doc["sweep"][2]["x"]["a"] == pytest.approx(1.0 / values[2], rel=1e-12)


def test_grad_of_the_solution_with_respect_to_a_shared_slope():
    def x_b(m):
        return solve(_graph(m)).system.equation("b").x

    m = 2.0
    assert float(jax.grad(x_b)(m)) == pytest.approx(-3.0 / m ** 2, rel=1e-10)
    # every derivative at once, through sg.split/merge, leaving the graph alone
    graph = _graph()
    grads = eq.sensitivities(graph, solver=NEWTON)
    for name, (c, provider) in EQUATIONS.items():
        for p, value in PROVIDERS.items():
            expected = -c / value ** 2 if p == provider else 0.0
            assert grads[p][name] == pytest.approx(expected, rel=1e-10, abs=1e-14)
    assert float(graph.provider("m").value) == 2.0


def test_vmap_of_grad_over_slopes():
    ms = jnp.linspace(1.0, 4.0, 4)
    dx = jax.vmap(jax.grad(lambda m: solve(_graph(m), NEWTON).system.equation("a").x))(ms)
    np.testing.assert_allclose(dx, -1.0 / ms ** 2, rtol=1e-10)


def test_reader_round_trip_and_errors(tmp_path):
    text = json.dumps({"providers": {"m": 2.0},
                       "equations": {"e": {"constant": 4.0, "provider": "m"}}})
    graph = eq.read_equations(text + "\n")
    assert graph.equation_names == ("e",) and float(graph.equation("e").constant) == 4.0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"providers": {"m": 2.0},
                               "equations": {"e": {"constant": 1.0, "provider": "q"}}}))
    with pytest.raises(eq.FormatError, match=r"bad.json: \.equations\.e\.provider: unknown "
                                             r"provider \"q\".*one of the providers defined: m"):
        eq.read_equations(bad)
    bad.write_text('{"providers": {"m": 2.0},\n "equations": {,}}')
    with pytest.raises(eq.FormatError, match=r"bad.json:2: invalid JSON"):
        eq.read_equations(bad)
    bad.write_text(json.dumps({"providers": {"m": 0}, "equations": {}}))
    with pytest.raises(eq.FormatError, match=r"\.providers\.m: a slope of 0"):
        eq.read_equations(bad)
    with pytest.raises(KeyError, match="no equation or provider named 'zz'"):
        eq.parameter_path(_graph(), "zz")


def test_run_report_on_the_shipped_example():
    report = eq.run()
    doc = report.json
    assert report.converged and doc["converged"] is True
    graph = eq.read_equations(eq.EXAMPLE)
    for name, e in zip(graph.equation_names, graph.equations):
        c, m = float(e.constant), float(e.gradient.value)
        assert doc["x"][name] == pytest.approx(c / m, rel=1e-12)
        assert doc["dx_dm"][name] == pytest.approx(-c / m ** 2, rel=1e-10)
    assert "x[e1]" in report.table()


def test_a_name_for_a_provider_and_an_equation_is_refused(tmp_path):
    """``parameter_path`` took the name for the equation, so the run's sensitivities failed
    with a bare ``KeyError: '.equations[0].constant'`` and a sweep of the slope swept c."""
    path = tmp_path / "same.json"
    path.write_text(json.dumps({"providers": {"e": 2.0},
                                "equations": {"e": {"constant": 1.0, "provider": "e"}}}))
    with pytest.raises(eq.FormatError, match=r"\.equations\.e: the name \"e\" is also used "
                                             r"in \.providers"):
        eq.read_equations(path)
    with pytest.raises(ValueError, match="'e' names a provider and an equation"):
        eq.build_equations({"e": 2.0}, {"e": (1.0, "e")})


def test_a_solution_beyond_the_floats_is_refused_by_the_reader():
    """A subnormal slope: x = c / m overflowed and the run said only 'not converged'."""
    text = json.dumps({"providers": {"m": 1e-320},
                       "equations": {"e": {"constant": 1.0, "provider": "m"}}}) + "\n"
    with pytest.raises(eq.FormatError, match=r"\.equations\.e: its solution x = c / m"):
        eq.read_equations(text)


def test_small_constants_are_solved_not_taken_for_zero():
    """max|F| <= 1e-10 accepted the start x = 0 of m x = 1e-12 (0 steps, converged, and
    dx/dm = 0 instead of -1e-12)."""
    graph = eq.build_equations({"m": 1.0}, {"e": (1e-12, "m")})
    result = eq.solve_equations(graph)
    assert result.x("e") == pytest.approx(1e-12, rel=1e-12)
    assert eq.sensitivities(result.graph)["m"]["e"] == pytest.approx(-1e-12, rel=1e-10)
    sweep = eq.sweep_equations(eq.build_equations({"m": 2.0}, {"e": (1.0, "m")}), "e",
                               [1e-13, 1.0])
    np.testing.assert_allclose(sweep.x("e"), [5e-14, 0.5], rtol=1e-12)


def test_run_gives_no_sensitivities_where_the_solve_failed():
    """They were NaN (JSON ``NaN``) beside ``converged: false``."""
    report = eq.run(solver=solvers.LevenbergMarquardt(max_steps=1))
    assert not report.converged and set(report.json["dx_dm"].values()) == {None}
    assert "no sensitivities dx/dm: the solve did not converge" in report.table()
