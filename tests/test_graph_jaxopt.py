"""Graphs as jaxopt params and extra arguments: solves, sharing kept, vmap, implicit diff."""

import jax
import jax.flatten_util
import jax.numpy as jnp
import jaxopt
import numpy as np
import pytest

import simgraph as sg
from graph_models import Equation, GradientProvider


class Var(sg.ReffableTreeNode):
    value: jax.Array


class Unknowns(sg.ReffableTreeNode):
    """The params graph: variables, also reachable through an alias dict (sharing)."""

    vars: list
    alias: dict


def make_problem(constants, slopes=(2.0, 3.0)):
    providers = [GradientProvider(jnp.asarray(s)) for s in slopes]
    eqs = [Equation(c, providers[i % len(providers)], jnp.asarray(0.0)) for i, c in enumerate(constants)]
    vs = [Var(jnp.asarray(0.5)) for _ in constants]
    return sg.Bundle(*eqs), Unknowns(vs, {"first": vs[0], "last": vs[-1]})


def residual_vector(params: Unknowns, data: sg.Bundle) -> jax.Array:
    """Residual as one vector (jaxopt's least-squares solvers want an array)."""
    return jnp.stack([eq.gradient.value * v.value - eq.constant for eq, v in zip(data, params.vars)])


def residual(params: Unknowns, data: sg.Bundle) -> Unknowns:
    """Residual as a graph shaped like ``params`` (jaxopt's root finders map X -> X)."""
    return jax.tree_util.tree_structure(params).unflatten(list(residual_vector(params, data)))


def expected_solution(data):
    return np.array([float(eq.constant) / float(eq.gradient.value) for eq in data])


def check_sharing(sol: Unknowns):
    assert sol.alias["first"] is sol.vars[0] and sol.alias["last"] is sol.vars[-1]


class RavelledLM:
    """jaxopt's LevenbergMarquardt needs a 1-D params array: ravel the graph and back."""

    def __init__(self, **kw):
        self.kw = kw

    def run(self, init, data):
        flat, unravel = jax.flatten_util.ravel_pytree(init)
        fun = lambda v, d: residual_vector(unravel(v), d)  # noqa: E731
        out = jaxopt.LevenbergMarquardt(fun, **self.kw).run(flat, data)
        return out._replace(params=unravel(out.params))


SOLVERS = {
    "Broyden": lambda: jaxopt.Broyden(residual, tol=1e-12, maxiter=100),
    "GaussNewton": lambda: jaxopt.GaussNewton(residual_vector, tol=1e-12, maxiter=50),
    "LevenbergMarquardt": lambda: RavelledLM(tol=1e-12, maxiter=100),
    "ScipyRootFinding": lambda: jaxopt.ScipyRootFinding(method="hybr", optimality_fun=residual, tol=1e-12),
}


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_jaxopt_solves_graph_params_and_keeps_sharing(name):
    data, init = make_problem([jnp.asarray(c) for c in (1.0, 4.0, 9.0)])
    sol = SOLVERS[name]().run(init, data).params
    check_sharing(sol)
    np.testing.assert_allclose([float(v.value) for v in sol.vars], expected_solution(data), atol=1e-8)
    assert init.vars[0].value == 0.5  # the user's objects are untouched


@pytest.mark.parametrize("name", ["Broyden", "GaussNewton", "LevenbergMarquardt"])
def test_jaxopt_under_vmap_over_constants(name):
    def solve(c):
        data, init = make_problem([c, c + 1.0, 2.0 * c])
        sol = SOLVERS[name]().run(init, data).params
        return sol, jnp.stack([v.value for v in sol.vars])

    cs = jnp.linspace(1.0, 3.0, 4)
    sols, xs = jax.vmap(solve)(cs)
    check_sharing(sols)
    expected = np.stack([[c / 2.0, (c + 1.0) / 3.0, 2.0 * c / 2.0] for c in np.asarray(cs)])
    np.testing.assert_allclose(xs, expected, atol=1e-8)


@pytest.mark.parametrize("name", ["Broyden", "GaussNewton", "LevenbergMarquardt"])
def test_jaxopt_implicit_diff_matches_finite_differences(name):
    def objective(slope):
        data, init = make_problem([jnp.asarray(1.0), jnp.asarray(4.0), jnp.asarray(9.0)], slopes=(slope, 3.0))
        sol = SOLVERS[name]().run(init, data).params
        return sum(v.value ** 2 for v in sol.vars)

    g = jax.grad(objective)(2.0)
    h = 1e-5
    fd = (objective(2.0 + h) - objective(2.0 - h)) / (2 * h)
    # x0 = 1/s and x2 = 9/s share the provider: d/ds (1/s^2 + 81/s^2) = -164/s^3
    np.testing.assert_allclose(g, -164.0 / 8.0, rtol=1e-6)
    np.testing.assert_allclose(g, fd, rtol=1e-5)


def test_graph_with_shared_providers_as_params_gradient_accumulates():
    data, init = make_problem([jnp.asarray(1.0), jnp.asarray(4.0), jnp.asarray(9.0)])

    def loss(d):
        sol = jaxopt.GaussNewton(residual_vector, tol=1e-12, maxiter=50).run(init, d).params
        return sum(v.value for v in sol.vars)

    g = jax.grad(loss)(data)
    assert g[0].gradient is g[2].gradient
    # x = c / s: d/ds sum over equations using provider 0 = -(1 + 9)/4
    np.testing.assert_allclose(g[0].gradient.value, -10.0 / 4.0, rtol=1e-6)
