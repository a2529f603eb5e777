"""Graphs through plain JAX transforms: jit, vmap, grad, jacfwd, lax control flow, tree_map."""

import jax
import jax.numpy as jnp
import numpy as np

import simgraph as sg
from graph_models import Equation, GradientProvider, make_system


def test_jit_returns_graph_with_sharing():
    system = make_system(4, 2)
    out = jax.jit(lambda s: s)(system)
    assert out.equations[0].gradient is out.equations[2].gradient is out.providers[0]
    assert out.equations[0].gradient is not system.providers[0]


def test_vmap_over_whole_graph_and_partial_in_axes():
    system = make_system(4, 2)
    batched = sg.stack([system, system, system])
    losses = jax.vmap(lambda s: s.loss())(batched)
    np.testing.assert_allclose(losses, jnp.full(3, system.loss()))

    # batch only the constants: in_axes is a graph of the same shape with 0 / None leaves
    is_const = lambda p: jax.tree_util.keystr(p).endswith(".constant")  # noqa: E731
    axes = jax.tree_util.tree_map_with_path(lambda p, _: 0 if is_const(p) else None, system)
    graph_batch = jax.tree_util.tree_map_with_path(
        lambda p, x: x + jnp.arange(5.0) if is_const(p) else x, system)
    out = jax.vmap(lambda s: s.loss(), in_axes=(axes,))(graph_batch)
    assert out.shape == (5,)
    np.testing.assert_allclose(out[0], system.loss())

    def shift_first(s):
        s.equations[0].constant = s.equations[0].constant * 2.0
        return s

    res = jax.vmap(shift_first, in_axes=(axes,), out_axes=axes)(graph_batch)
    assert res.equations[0].gradient is res.providers[0]
    assert jnp.shape(res.providers[0].value) == ()  # unbatched field stays unbatched
    assert jnp.shape(res.equations[1].constant) == (5,)


def test_graph_created_inside_vmap():
    def build(c):
        p = GradientProvider(c * 2.0)
        return sg.Bundle(Equation(c, p, 1.0), Equation(c + 1.0, p, 2.0))

    out = jax.vmap(build)(jnp.arange(3.0))
    assert out[0].gradient is out[1].gradient
    np.testing.assert_allclose(out[0].gradient.value, jnp.arange(3.0) * 2.0)


def test_grad_accumulates_on_shared_provider():
    p = GradientProvider(jnp.asarray(2.0))
    eqs = sg.Bundle(Equation(jnp.asarray(1.0), p, jnp.asarray(3.0)), Equation(jnp.asarray(5.0), p, jnp.asarray(4.0)))

    def loss(b):
        return sum((e.constant - e.gradient.value * e.x) ** 2 for e in b)

    g = jax.grad(loss)(eqs)
    assert g[0].gradient is g[1].gradient  # gradient is a graph of the same shape
    expected = 2 * (1.0 - 6.0) * -3.0 + 2 * (5.0 - 8.0) * -4.0
    np.testing.assert_allclose(g[0].gradient.value, expected)
    jac = jax.jacfwd(loss)(eqs)
    np.testing.assert_allclose(jac[0].gradient.value, expected)


def test_lax_cond_scan_while_carry_graphs():
    system = make_system(3, 1)

    def step(s, _):
        for eq in s.equations:
            eq.x = eq.x + 1.0
        s.providers[0].value = s.providers[0].value * 2.0
        return s, s.loss()

    final, losses = jax.lax.scan(step, system, None, length=4)
    assert final.equations[0].gradient is final.providers[0]
    np.testing.assert_allclose(final.equations[2].x, 4.5)
    assert losses.shape == (4,)

    def body(s):
        s.providers[0].value = s.providers[0].value + 1.0
        return s

    out = jax.lax.while_loop(lambda s: s.providers[0].value < 10.0, body, system)
    assert out.equations[1].gradient is out.providers[0]
    np.testing.assert_allclose(out.providers[0].value, 10.0)

    picked = jax.lax.cond(True, lambda s: s, lambda s: body(s), system)
    assert picked.equations[0].gradient is picked.providers[0]


def test_tree_map_over_two_graphs():
    a, b = make_system(3, 2), make_system(3, 2)
    c = jax.tree_util.tree_map(lambda x, y: x + y, a, b)
    assert c.equations[2].gradient is c.providers[0]
    np.testing.assert_allclose(c.equations[2].constant, 4.0)


def test_user_objects_untouched_by_transforms():
    system = make_system(3, 1)
    before = [float(e.x) for e in system.equations]
    jax.jit(lambda s: jax.tree_util.tree_map(lambda x: x * 0 + 7.0, s))(system)
    assert [float(e.x) for e in system.equations] == before
