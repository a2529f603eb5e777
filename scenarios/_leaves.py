"""Graph leaves from a builder's entries. Concrete values are computed with NumPy and go to
the device in one transfer: an eager ``jnp`` operation compiles a program (once per process,
milliseconds each, and a first run pays for every distinct one). Traced values (a builder
called under ``jit`` or ``grad``) take the ``jnp`` path."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


def numpy_or_jnp(*values: Any):
    """``np`` when every value among ``values`` (any nesting) can be read now, else ``jnp``."""
    try:
        for value in jax.tree_util.tree_leaves(values):
            np.asarray(value)
    except jax.errors.TracerArrayConversionError:
        return jnp
    return np


def leaf(value: Any, dtype: Any = float) -> jax.Array:
    """``jnp.asarray(value, dtype)``, without compiling anything for a concrete value."""
    try:
        host = np.asarray(value, dtype=jnp.result_type(dtype))
    except jax.errors.TracerArrayConversionError:
        return jnp.asarray(value, dtype=dtype)
    return jax.device_put(host)
