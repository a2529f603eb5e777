"""Checks of a solve's host inputs before JAX converts them: values that JAX would change
without a word (int64 wrapped to int32 while ``jax_enable_x64`` is off) are refused, naming
the leaf. The checks read dtypes only, and values only where a narrowing could wrap them."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np


def check_integer_range(host: np.ndarray, where: str) -> None:
    """Refuse integers that JAX's narrower type would wrap (int64 values beyond int32 with
    ``jax_enable_x64`` off: 2**40 became 0, and that member "converged" at a wrong answer).
    ``where`` names the values (``"solve_batch values for 'Cubic.c'"``, ``"solve x0"``)."""
    if host.dtype.kind not in "iu" or host.size == 0:
        return
    want = np.dtype(jax.dtypes.canonicalize_dtype(host.dtype))
    if want.itemsize >= host.dtype.itemsize:
        return
    info = np.iinfo(want)
    low, high = host.min(), host.max()
    if low < info.min or high > info.max:
        raise ValueError(
            f"{where} range over [{low}, {high}], beyond {want} "
            f"([{info.min}, {info.max}]), which JAX narrows {host.dtype} to while "
            "jax_enable_x64 is off: enable it (jax.config.update('jax_enable_x64', True)) or "
            "pass the values as floats.")


def check_flat_inputs(entry: str, x0: Any, params: Any = None) -> None:
    """`check_integer_range` for ``x0`` and every leaf of ``params`` held as numpy integers
    (JAX arrays are narrowed already) of the call ``entry`` (``"solve_batch"``); nothing is
    read while ``jax_enable_x64`` is on."""
    if jax.config.jax_enable_x64:
        return
    if isinstance(x0, (list, tuple)):
        x0 = np.asarray(x0)
    if _wide_integers(x0):
        check_integer_range(np.asarray(x0), f"{entry} x0")
    leaves = jax.tree_util.tree_leaves(params)
    if not any(_wide_integers(leaf) for leaf in leaves):
        return
    for path, leaf in jax.tree_util.tree_leaves_with_path(params):
        if _wide_integers(leaf):
            check_integer_range(np.asarray(leaf), f"{entry} params{jax.tree_util.keystr(path)}")


def _wide_integers(leaf: Any) -> bool:
    """A numpy integer array or scalar of more than 32 bits (what x64-off JAX narrows), or
    a Python int beyond int32 (which JAX refuses with an OverflowError of its own)."""
    if type(leaf) is int:
        return not -2**31 <= leaf < 2**31
    dtype = getattr(leaf, "dtype", None)
    return (isinstance(leaf, (np.ndarray, np.generic)) and dtype.kind in "iu"
            and dtype.itemsize > 4)
