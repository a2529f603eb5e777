"""Graph-level solve and solve_batch: sharing, batching, jit/vmap/grad, failures."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simgraph as sg
import solvers


class Provider(sg.ReffableTreeNode):
    value: jax.Array


class Equation(sg.ReffableTreeNode):
    constant: jax.Array
    gradient: Provider
    x: jax.Array = sg.unknown(default=0.0)

    def residual(self):
        return self.gradient.value * self.x - self.constant


def founding(constants=(1.0, 4.0, 9.0), slopes=(2.0, 3.0)):
    providers = [Provider(jnp.asarray(s)) for s in slopes]
    return sg.Bundle(*[Equation(jnp.asarray(c), providers[i % len(providers)]) for i, c in enumerate(constants)])


def test_solve_returns_solved_graph_with_sharing():
    graph = founding()
    sol = solvers.solve(graph)
    assert bool(sol.converged) and int(sol.result) == int(solvers.RESULTS.successful)
    out = sol.system
    assert out[0].gradient is out[2].gradient and out[0].gradient is not graph[0].gradient
    np.testing.assert_allclose([float(e.x) for e in out], [0.5, 4.0 / 3.0, 4.5])
    assert float(graph[0].x) == 0.0  # user's graph untouched
    np.testing.assert_allclose(sol.value(graph[1]), [4.0 / 3.0])


def test_solve_inside_jit_vmap_grad():
    def x_of(slope, c):
        graph = founding(constants=(c, 2.0 * c), slopes=(slope,))
        return solvers.solve(graph).system[1].x

    np.testing.assert_allclose(jax.jit(x_of)(2.0, 3.0), 3.0)
    np.testing.assert_allclose(jax.vmap(x_of, in_axes=(None, 0))(2.0, jnp.arange(3.0)), jnp.arange(3.0))
    g = jax.grad(x_of)(2.0, 3.0)  # x = 2c/m -> dx/dm = -2c/m^2
    np.testing.assert_allclose(g, -6.0 / 4.0, rtol=1e-8)


def test_solve_batch_by_key_path_and_filter():
    graph = founding()
    sol = solvers.solve_batch(graph, {"items[0].constant": jnp.linspace(1.0, 5.0, 7)})
    assert sol.x.shape == (7, 3) and bool(jnp.all(sol.converged))
    np.testing.assert_allclose(sol.x[:, 0], jnp.linspace(1.0, 5.0, 7) / 2.0)
    np.testing.assert_allclose(sol.x[:, 1], 4.0 / 3.0)
    batched = sol.system
    assert batched[0].gradient is batched[2].gradient
    sol2 = solvers.solve_batch(graph, {Provider: jnp.asarray([1.0, 2.0])})
    np.testing.assert_allclose(sol2.x[:, 0], [1.0, 0.5])


def test_solve_batch_nan_member_reported_others_converge():
    graph = founding()
    values = jnp.asarray([1.0, jnp.nan, 3.0])
    sol = solvers.solve_batch(graph, {".items[0].constant": values})
    assert np.asarray(sol.converged).tolist() == [True, False, True]
    assert int(sol.result[1]) == int(solvers.RESULTS.nonfinite_input)
    with pytest.raises(solvers.SolveError, match="1"):
        sol.raise_if_failed()


def test_singular_graph_fails_with_code():
    graph = founding(constants=(1.0, 2.0), slopes=(0.0,))
    sol = solvers.solve(graph)
    assert not bool(sol.converged)
    assert "singular" in sol.message().lower() or int(sol.result) != 0
