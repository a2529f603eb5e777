"""Checking a user's Jacobian sparsity pattern against the residual, once per pattern.

A colored (compressed) Jacobian assumes every entry outside the pattern is zero. Where one is
not, Newton still converges (more slowly, on a wrong J), but the implicit derivative
``-J^{-1} dF/dp`` is silently wrong. So the first solve of a ``(fn, pattern)`` pair compares
``J v`` from one JVP with ``J v`` from the pattern's values, for a random ``v`` at the start;
a mismatch names the entries the pattern misses (one VJP of the worst row).
"""

from __future__ import annotations

import collections
from functools import partial
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from ._sparsity import SparsityError, SparsityPattern, pattern_matvec, sparse_jacobian

#: ``(fn, pattern)`` pairs already checked (bounded: the oldest is forgotten first).
_CHECKED: collections.OrderedDict = collections.OrderedDict()
_KEEP = 64


def check_pattern_once(fn: Callable, x0: jax.Array, params: Any,
                       pattern: SparsityPattern) -> None:
    """Raise `SparsityError` if ``pattern`` misses an entry of ``dF/dx`` that is nonzero at
    the concrete start ``x0``; each ``(fn, pattern)`` is checked at its first solve only."""
    key = (fn, pattern)
    try:
        if key in _CHECKED:
            return
    except TypeError:  # an unhashable callable cannot be a static argument: not checked
        return
    exact, assembled = _probe(fn, pattern, x0, params)
    exact, assembled = np.asarray(exact), np.asarray(assembled)
    scale = np.abs(exact) + np.abs(assembled) + np.finfo(exact.dtype).tiny
    gap = np.abs(exact - assembled) / scale
    if not np.all(np.isfinite(gap)):
        return  # no finite J at this start: the next solve checks again
    if gap.max(initial=0.0) > np.sqrt(np.finfo(exact.dtype).eps):
        raise SparsityError(_missing_message(fn, pattern, x0, params, int(np.argmax(gap))))
    _CHECKED[key] = True
    while len(_CHECKED) > _KEEP:
        _CHECKED.popitem(last=False)


@partial(jax.jit, static_argnums=(0, 1))
def _probe(fn, pattern: SparsityPattern, x0, params):
    """``(J v exact, J v from the pattern's values)`` for a fixed pseudo-random ``v``."""
    v = jax.random.uniform(jax.random.PRNGKey(0), x0.shape, x0.dtype, 0.5, 1.5)
    exact = jax.jvp(lambda y: fn(y, params), (x0,), (v,))[1]
    _, values = sparse_jacobian(fn, x0, params, pattern)
    return exact, pattern_matvec(pattern, values, v)


def _missing_message(fn, pattern: SparsityPattern, x0, params, row: int) -> str:
    """Which entries of ``row`` the pattern misses (the row's exact values by one VJP)."""
    _, pullback = jax.vjp(lambda y: fn(y, params), x0)
    seed = jnp.zeros(pattern.shape[0], x0.dtype).at[row].set(1.0)
    values = np.asarray(pullback(seed)[0])
    listed = set(pattern.cols[pattern.rows == row].tolist())
    missing = [j for j in np.flatnonzero(values).tolist() if j not in listed]
    shown = ", ".join(f"({row}, {j})" for j in missing[:8]) + (" ..." if len(missing) > 8 else "")
    return (f"the sparsity pattern misses Jacobian entries that are nonzero at x0: {shown or row}"
            f" (row {row} of dF/dx). A colored Jacobian takes every entry outside the pattern "
            "as zero, so Newton would use a wrong J and gradients would be wrong. Add them, or "
            "build the pattern from the model (SparsityPattern.from_dense(jax.jacfwd(fn)(x0, "
            "params) != 0) for a small system).")
