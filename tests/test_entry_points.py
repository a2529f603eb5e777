"""The two entry points, solve and solve_batch, each take a graph, a System or a flat function
and return one Solution type; wrong inputs raise errors that say what to pass."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simgraph as sg
import solvers
from solvers import RESULTS

jax.config.update("jax_enable_x64", True)


class Square(sg.ReffableTreeNode):
    c: jax.Array
    x: jax.Array = sg.unknown(default=1.0)

    def residual(self):
        return self.x ** 2 - self.c


def square(x, c):
    return x ** 2 - c


NEWTON = solvers.Newton()
GRAPH = Square(jnp.asarray(4.0))
CS = jnp.asarray([4.0, 9.0, -1.0, jnp.nan])   # two roots, no real root, a NaN input


def single(kind):
    if kind == "flat":
        return solvers.solve(square, jnp.ones(1), jnp.asarray(4.0), solver=NEWTON)
    problem = GRAPH if kind == "graph" else solvers.System.build(GRAPH)
    return solvers.solve(problem, NEWTON)


def batch(kind):
    if kind == "flat":
        return solvers.solve_batch(square, jnp.ones(1), CS, params_axes=0, solver=NEWTON)
    problem = GRAPH if kind == "graph" else solvers.System.build(GRAPH)
    return solvers.solve_batch(problem, {"c": CS}, NEWTON)


KINDS = ("graph", "system", "flat")


@pytest.mark.parametrize("entry", [single, batch], ids=["solve", "solve_batch"])
def test_three_inputs_give_one_answer_and_one_type(entry):
    graph, system, flat = (entry(kind) for kind in KINDS)
    for sol in (graph, system, flat):
        assert type(sol) is solvers.Solution
        np.testing.assert_array_equal(sol.x, graph.x)
        np.testing.assert_array_equal(sol.result, graph.result)
        np.testing.assert_array_equal(sol.iterations, graph.iterations)
    assert flat.lowered is None and graph.lowered is not None
    np.testing.assert_allclose(graph.system.x, system.system.x)


def test_batch_codes_per_member():
    sol = batch("graph")
    codes = [RESULTS(int(c)) for c in sol.result]
    assert codes[:2] == [RESULTS.successful] * 2 and codes[3] is RESULTS.nonfinite_input
    assert codes[2] is not RESULTS.successful
    np.testing.assert_allclose(sol.x[:2, 0], [2.0, 3.0])
    assert "4 member(s)" in sol.summary() and sol.worst_index() in (2, 3)


def test_flat_spellings_are_the_flat_forms():
    one = solvers.solve_flat(square, jnp.ones(1), jnp.asarray(4.0), solver=NEWTON)
    many = solvers.solve_flat_batch(square, jnp.ones(1), CS, solver=NEWTON)
    np.testing.assert_array_equal(one.x, single("flat").x)
    np.testing.assert_array_equal(many.result, batch("flat").result)
    assert solvers.FlatSolution is solvers.Solution and isinstance(one, solvers.FlatSolution)


@pytest.mark.parametrize("read", [lambda s: s.system, lambda s: s.params,
                                  lambda s: s.value(".x"), lambda s: s.diagnose(),
                                  lambda s: s.to_frame()])
def test_a_flat_solution_has_no_graph(read):
    with pytest.raises(AttributeError, match="flat function.*read the unknowns from .x"):
        read(single("flat"))


def test_flat_failure_raises_without_a_diagnosis():
    sol = solvers.solve(square, jnp.ones(1), jnp.asarray(-1.0), solver=NEWTON)
    with pytest.raises(solvers.SolveError) as err:
        sol.raise_if_failed()
    assert "Diagnosis" not in str(err.value) and err.value.code is RESULTS(int(sol.result))


def test_graph_part_survives_replace_jit_and_flat():
    sol = single("graph")
    moved = dataclasses.replace(sol, x=jnp.full(1, 3.0))
    assert moved.lowered is sol.lowered and float(moved.system.x) == 3.0
    assert sol.flat.lowered is None and type(sol.flat) is solvers.Solution
    out = jax.jit(lambda c: solvers.solve(Square(c), NEWTON))(jnp.asarray(9.0))
    assert float(out.system.x) == pytest.approx(3.0) and out.lowered is not None
    swept = jax.jit(lambda c: solvers.solve_batch(GRAPH, {"c": c}, NEWTON))(CS[:2])
    np.testing.assert_allclose(swept.system.x, [2.0, 3.0])


def test_flat_solve_under_transforms():
    def root(c):
        return solvers.solve(square, jnp.ones(1), c, solver=NEWTON).x[0]

    assert float(jax.jit(root)(4.0)) == pytest.approx(2.0)
    assert float(jax.grad(root)(4.0)) == pytest.approx(0.25)  # d sqrt(c) / dc
    np.testing.assert_allclose(jax.vmap(root)(jnp.asarray([4.0, 9.0])), [2.0, 3.0])


@pytest.mark.parametrize("call, message", [
    (lambda: solvers.solve(square), "missing a required argument: 'x0'.*pass x0"),
    (lambda: solvers.solve(square, None), "x0 is missing"),
    (lambda: solvers.solve_batch(square, jnp.ones(1)), "missing a required argument: 'params'"),
    (lambda: solvers.solve([GRAPH]), "takes a graph .*got list"),
    (lambda: solvers.solve_batch(3.0, {}), "takes a graph .*got float"),
    (lambda: solvers.solve(Square), "the class Square \\(pass an instance\\)"),
    (lambda: solvers.solve(GRAPH, jnp.ones(1)), "solver must be a method object"),
    (lambda: solvers.solve(GRAPH, sovler=NEWTON), "unexpected keyword.*solvers.solve\\(graph"),
    (lambda: solvers.solve_batch(GRAPH, CS), "takes \\{key: values\\}.*got"),
    (lambda: solvers.solve_batch(square, jnp.ones(1), CS, sparse=1), "solve_batch\\(fn, x0"),
])
def test_wrong_inputs_say_what_to_pass(call, message):
    with pytest.raises(TypeError, match=message):
        call()


def test_a_system_is_already_lowered():
    with pytest.raises(ValueError, match="lowered already.*System.build"):
        solvers.solve(solvers.System.build(GRAPH), evaluation="objectwise")
