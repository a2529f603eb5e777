"""Tolerances that the unknowns' floating-point type can meet.

The defaults (``rtol = 1e-10``) suit float64. In float32 (JAX's default: ``jax_enable_x64``
off) no step is ever that small relative to x, and a well-posed solve would iterate to a
failure; so every ``rtol`` below ``RTOL_EPS`` units of the dtype's machine epsilon is
raised to it (float64 keeps its tolerances: 1e-10 is far above 100 eps there), up to
``RTOL_CAP``.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax.numpy as jnp

from ._method import AbstractRootMethod

#: The smallest rtol a solve uses, in units of the unknowns' machine epsilon.
RTOL_EPS = 100
#: ...but never above this: in half precision 100 eps is a tenth of x (float16) or most of
#: it (bfloat16), and a Newton step that long is not "small": it would end the solve as
#: converged far from the root.
RTOL_CAP = 1e-2


def for_dtype(method: AbstractRootMethod, dtype) -> AbstractRootMethod:
    """``method`` (and the methods inside it) with every rtol raised to what ``dtype`` can
    resolve; the same object when nothing changes (no recompilation). Kept per method and
    dtype: the walk costs more than a small warm solve's dispatch."""
    try:
        return _for_dtype_kept(method, jnp.dtype(dtype))
    except TypeError:  # a method configured with something unhashable
        return _for_dtype(method, dtype)


def _for_dtype(method: AbstractRootMethod, dtype) -> AbstractRootMethod:
    return _raise_rtol(method, min(RTOL_EPS * float(jnp.finfo(dtype).eps), RTOL_CAP))


_for_dtype_kept = functools.lru_cache(maxsize=64)(_for_dtype)


def _raise_rtol(obj: Any, floor: float) -> Any:
    if isinstance(obj, tuple):
        new = tuple(_raise_rtol(item, floor) for item in obj)
        return obj if all(a is b for a, b in zip(new, obj)) else new
    if not (isinstance(obj, AbstractRootMethod) and dataclasses.is_dataclass(obj)):
        return obj
    changes = {}
    for field in dataclasses.fields(obj):
        value = getattr(obj, field.name)
        if field.name == "rtol" and isinstance(value, (int, float)) and value < floor:
            changes["rtol"] = floor
        elif isinstance(value, (AbstractRootMethod, tuple)):
            new = _raise_rtol(value, floor)
            if new is not value:
                changes[field.name] = new
    return dataclasses.replace(obj, **changes) if changes else obj
