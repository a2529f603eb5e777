"""A new user's misuse of the core and time-domain APIs: each answer is a clear error or an
honest result code, never a raw JAX/numpy exception nor "successful" at wrong output."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simgraph as sg
import solvers
from test_solve_graph import Equation, Provider
# dv/dt = -v (Decay), t - v (Driven), -k v (Relax)
from test_transient_arguments import Decay, Driven, Relax

R = solvers.TRANSIENT_RESULTS


def _system():
    slope = Provider(jnp.asarray(2.0))
    return sg.Bundle(Equation(jnp.asarray(1.0), slope), Equation(jnp.asarray(3.0), slope))


TIMES = np.asarray([0.0, 0.5, 1.0])


@pytest.mark.parametrize("t_eval, t0", [
    (TIMES[::-1], 0.0),                       # decreasing
    (np.asarray([0.0, 0.5, 0.5, 1.0]), 0.0),  # repeated
    (np.asarray([0.0, np.nan, 1.0]), 0.0),    # not finite
    (TIMES, 0.5),                             # output before the start
    (TIMES, np.nan),                          # start not finite
])
def test_traced_times_that_cannot_be_served_are_reported_not_successful(t_eval, t0):
    # Under jit the times are traced and the eager checks cannot run: the run claimed
    # "successful" with the operating point at t_eval[0] (or NaN) as the output.
    run = jax.jit(lambda g, t, t0: solvers.simulate(g, t, t0=t0))
    sol = run(Driven(solvers.Clock()), jnp.asarray(t_eval), jnp.asarray(t0))
    assert int(sol.result) == int(R.invalid_times), sol.message()
    assert np.all(np.isnan(np.asarray(sol.x)))
    assert "t_eval" in sol.message() and "increasing" in sol.message()


def test_traced_valid_times_still_succeed():
    run = jax.jit(lambda g, t: solvers.simulate(g, t, initial="given",
                                                integrator=solvers.Integrator(rtol=1e-6)))
    sol = run(Decay(), jnp.asarray(TIMES))
    assert int(sol.result) == int(R.successful)
    np.testing.assert_allclose(np.asarray(sol.x)[:, 0], np.exp(-TIMES), rtol=1e-3)


@pytest.mark.parametrize("t0, message", [
    (np.nan, "t0 must be a finite time"),
    (np.asarray([0.0, 1.0]), "t0 must be one time"),
])
def test_simulate_refuses_a_start_time_it_cannot_use(t0, message):
    # NaN: "t_eval starts at 0, before the run starts (t0 = nan)"; an array: numpy's
    # "Only scalar arrays can be converted to Python scalars".
    with pytest.raises(ValueError, match=message):
        solvers.simulate(Decay(), TIMES, t0=t0, initial="given")


def test_transient_raise_if_failed_raises_solve_error_with_the_member():
    sol = solvers.simulate_batch(Relax(), {".k": jnp.asarray([1.0, 2.0])}, TIMES,
                                 initial="given", integrator=solvers.Integrator(max_steps=2))
    with pytest.raises(solvers.SolveError, match="max_steps_reached") as info:
        sol.raise_if_failed()
    assert info.value.index == 0 and info.value.code is R.max_steps_reached


def test_simulate_throw_under_jit_raises_from_the_run():
    # raise_if_failed read the traced result with numpy: TracerArrayConversionError.
    tight = solvers.Integrator(max_steps=2)
    run = jax.jit(lambda g: solvers.simulate(g, TIMES, initial="given", integrator=tight,
                                             throw=True).x)
    with pytest.raises(jax.errors.JaxRuntimeError, match="SolveError: .*max_steps_reached"):
        jax.block_until_ready(run(Decay()))
    ok = jax.jit(lambda g: solvers.simulate(g, TIMES, initial="given", throw=True).x)(Decay())
    assert np.all(np.isfinite(np.asarray(ok)))


def test_transient_message_under_jit_says_to_read_it_outside():
    with pytest.raises(TypeError, match="concrete values.*outside"):
        jax.jit(lambda g: solvers.simulate(g, TIMES, initial="given").message())(Decay())


def test_integrator_takes_numpy_integers_and_names_a_bad_tolerance():
    # np.int64(100) was refused as "must be an integer >= 1, got np.int64(100)".
    assert solvers.Integrator(max_steps=np.int64(100)) == solvers.Integrator(max_steps=100)
    with pytest.raises(ValueError, match=r"Integrator\(rtol=...\) must be a positive number"):
        solvers.Integrator(rtol="tight")


def test_solution_member_index_errors_say_what_to_pass():
    batch = solvers.solve_batch(_system(), {".items[0].constant": jnp.asarray([1.0, 2.0])})
    with pytest.raises(TypeError, match="member index must be an integer"):
        batch.message(1.0)
    with pytest.raises(IndexError, match="member \\(5,\\) is out of range"):
        batch.message((5,))


def test_structure_of_a_non_node_names_what_was_passed():
    with pytest.raises(sg.GraphTypeError, match="got int"):
        sg.structure(3)


def test_assigning_a_string_to_a_data_field_is_refused_where_it_is_set():
    # The constructor refused it, an assignment did not: sg.update then copied it into the
    # live graph and the solve failed far away.
    eq = _system()[0]
    with pytest.raises(sg.GraphTypeError, match=r"Equation.constant holds a str.*sg.static"):
        eq.constant = "1.0"
    assert float(eq.constant) == 1.0


def test_split_by_key_path_selects_that_leaf():
    # A key path (as solve_batch takes) was read as 'Class.field' and selected nothing.
    state, rest = sg.split(_system(), ".items[1].constant")
    assert list(state) == [".items[1].constant"]
    state, _ = sg.split(_system(), "items[0].gradient")
    assert list(state) == [".items[0].gradient.value"]
    assert float(sg.merge(rest, {".items[1].constant": 5.0})[1].constant) == 5.0


class Ramp(sg.ReffableTreeNode):
    """v = t, whose "corner" is returned as the time asked (not strictly after it)."""

    clock: solvers.Clock
    v: jax.Array = sg.unknown(default=0.0)

    def residual(self):
        return self.v - self.clock.t

    def next_breakpoint(self, t):
        return t


def test_a_breakpoint_at_the_time_asked_is_no_corner():
    # Stepping to it took steps of ever smaller size until max_steps_reached at t = 2e-8,
    # whose advice (raise max_steps) could not help.
    sol = solvers.simulate(Ramp(solvers.Clock()), TIMES)
    assert int(sol.result) == int(R.successful), sol.message()
    np.testing.assert_allclose(np.asarray(sol.x)[:, 0], TIMES, atol=1e-9)


class Corner(sg.ReffableTreeNode):
    """v = a 1 ns step at 0.25, its corners declared."""

    clock: solvers.Clock
    v: jax.Array = sg.unknown(default=0.0)

    def residual(self):
        return self.v - jnp.clip((self.clock.t - 0.25) / 1e-9, 0.0, 1.0)

    def next_breakpoint(self, t):
        corners = jnp.asarray([0.25, 0.25 + 1e-9], jnp.result_type(t))
        return jnp.min(jnp.where(corners > t, corners, jnp.inf))


def test_a_breakpoint_at_the_time_asked_hides_no_other_elements_corner():
    # The earliest answer over all elements was taken first, then refused: the Ramp's t
    # hid the step's corner at 0.25, which the run no longer landed on.
    clock = solvers.Clock()
    sol = solvers.simulate(sg.Bundle(Ramp(clock), Corner(clock)), TIMES,
                           integrator=solvers.Integrator(save_steps=True))
    assert int(sol.result) == int(R.successful), sol.message()
    steps = np.asarray(sol.steps_t)[: int(sol.n_steps) + 1]
    assert 0.25 in steps and 0.25 + 1e-9 in steps


def test_batch_values_that_are_not_numbers_and_empty_values_name_the_entry():
    # Text values gave JAX's "Dtype <U1 is not a valid JAX array type" without the key;
    # simulate_batch's errors named solve_batch.
    with pytest.raises(TypeError, match=r"solve_batch values for '.items\[0\].constant' are "
                       "not numbers"):
        solvers.solve_batch(_system(), {".items[0].constant": ["a", "b"]})
    with pytest.raises(ValueError, match=r"chunk_size must be a positive number .* got 1\.5"):
        solvers.simulate_batch(Relax(), {"k": np.ones(3)}, TIMES, chunk_size=1.5)  # was 1
    with pytest.raises(ValueError, match=r"^simulate_batch values are empty"):
        solvers.simulate_batch(Relax(), {"k": np.zeros(0)}, TIMES)
    with pytest.raises(ValueError, match=r"^simulate_batch needs at least one swept .*"
                       "solvers.simulate"):
        solvers.simulate_batch(Relax(), {}, TIMES)


class Scaled(sg.ReffableTreeNode):
    c: jax.Array
    x: jax.Array = sg.unknown(default=0.0)
    gain: float = sg.static(default=1.0)

    def residual(self):
        return self.x - self.c * self.gain


@pytest.mark.parametrize("key", [".items[0].gain", "Scaled.gain"])
def test_a_sweep_of_a_static_field_says_it_is_static(key):
    # It said "selects no parameter of this graph", as for a misspelt key.
    with pytest.raises(sg.GraphError, match=r"names Scaled\.gain, a static field.*data field"):
        solvers.solve_batch(sg.Bundle(Scaled(jnp.asarray(1.0))), {key: np.ones(2)})


def test_a_sweep_of_an_unknown_points_to_the_graph_and_x0():
    # It pointed a graph user to x0.at[system.locate(path)] alone, a flat-solve idiom.
    with pytest.raises(sg.GraphError, match=r"\.items\[0\]\.x is an unknown.*set the field "
                       r"before solving\) or from x0="):
        solvers.solve_batch(sg.Bundle(Scaled(jnp.asarray(1.0))), {"items[0].x": np.ones(2)})


def test_the_value_of_a_node_without_unknowns_is_refused():
    # It was an empty array, read as the node's value.
    graph = _system()
    sol = solvers.solve(graph)
    np.testing.assert_allclose(np.asarray(sol.value(graph[0])), [0.5])
    for where in (graph[0].gradient, ".items[0].gradient"):
        with pytest.raises(sg.GraphError, match="has no unknowns.*solution.system"):
            sol.value(where)
    provider = Provider(jnp.asarray(1.0))
    run = solvers.simulate(sg.Bundle(Decay(), provider), TIMES, initial="given")
    assert np.asarray(run.value(".items[0]")).shape == (len(TIMES), 1)
    with pytest.raises(sg.GraphError, match=r"this Provider has no unknowns"):
        run.value(provider)


@pytest.mark.parametrize("times", [["0", "1"], np.asarray([0.0, 1.0 + 1.0j])])
def test_output_times_that_are_not_real_numbers_are_refused(times):
    # Text was parsed as numbers and complex times silently cut to their real part.
    with pytest.raises(TypeError, match="t_eval must hold real numbers"):
        solvers.simulate(Decay(), times, initial="given")


def test_a_transient_batch_has_a_summary_and_its_earliest_failure():
    # Solution had summary() and worst_index(); TransientSolution had neither.
    cfg = solvers.Integrator(max_steps=40)
    sol = solvers.simulate_batch(Relax(), {"k": np.asarray([1.0, 1e4, 1e5])}, TIMES,
                                 initial="given", integrator=cfg)  # fast members run out
    codes = np.asarray(sol.result)
    assert codes[0] == int(R.successful) and (codes[1:] == int(R.max_steps_reached)).all()
    stops = np.asarray(sol.t_stop)
    assert sol.worst_index() == 1 + int(np.argmin(stops[1:]))
    text = sol.summary()
    assert text.startswith("3 run(s): 1 successful, 2 max_steps_reached\nearliest stop: "
                           f"member {sol.worst_index()}: max_steps_reached at t = ")
    one = solvers.simulate(Relax(), TIMES, initial="given")
    assert one.worst_index() is None and one.summary() == "1 run(s): 1 successful"
