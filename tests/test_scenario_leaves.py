"""``scenarios._leaves``: builders' leaves without eager programs for concrete values, the
``jnp`` path for traced ones."""

import jax
import jax.numpy as jnp
import numpy as np

from compile_count import compilations
from scenarios._leaves import leaf, numpy_or_jnp


def test_concrete_leaves_compile_nothing_and_match_jnp_asarray():
    values = [(0.25, float), ((1.5, -2.0, 7.0), float), ((True, False), bool), (3, float)]
    with compilations() as count:
        made = [leaf(value, dtype) for value, dtype in values]
    assert count[0] == 0
    for got, (value, dtype) in zip(made, values):
        want = jnp.asarray(value, dtype=dtype)
        assert isinstance(got, jax.Array)
        assert (got.dtype, got.shape) == (want.dtype, want.shape)
        np.testing.assert_array_equal(got, want)


def test_traced_values_take_the_jnp_path():
    assert numpy_or_jnp(1.0, [np.ones(2), {"a": jnp.ones(3)}]) is np

    def build(x):
        assert numpy_or_jnp([(1.0, x)]) is jnp
        return leaf((x, 2.0)) * 3.0

    np.testing.assert_array_equal(jax.jit(build)(1.5), [4.5, 6.0])
    np.testing.assert_array_equal(jax.grad(lambda x: build(x)[0])(1.5), 3.0)
