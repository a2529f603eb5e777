"""Whether values exist now or are being traced, the one place solvers asks.

Host-side work (staging ``Default``'s fallbacks, raising ``SolveError``, numpy fast paths)
needs concrete values. JAX has no public predicate for "this array has a value", so the
answer uses its public tracer type here, once, instead of scattered checks.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax import lax

#: A host constant: ``stop_gradient`` turns it into a tracer inside staging transforms; outside
#: them it dispatches a primitive (~10 us), which `staging` skips when the trace is eager.
_PROBE = np.float32(0.0)


def is_traced(value: Any) -> bool:
    """True if ``value`` is a tracer of ``jit``, ``vmap``, ``grad`` or another transform."""
    return isinstance(value, jax.core.Tracer)


def is_traced_type(cls: type) -> bool:
    """True if values of type ``cls`` are tracers (to test the few types of many values)."""
    return issubclass(cls, jax.core.Tracer)


def is_concrete(tree: Any) -> bool:
    """True if no leaf of ``tree`` is traced: its values can be read on the host now."""
    return not any(map(is_traced_type, set(map(type, jax.tree_util.tree_leaves(tree)))))


def staging() -> bool:
    """True inside a transform that stages a program (``jit``, ``make_jaxpr``, a ``lax``
    loop's body): there even a fresh constant computation gives a tracer. Outside every
    transform the answer is False at once (the probe would dispatch a primitive: ~10 us)."""
    if _outside_transforms():
        return False
    return is_traced(lax.stop_gradient(_PROBE))


def _no_transform_check() -> bool:
    return False


def _eager_trace_check():
    """A check that the current trace is the eager one this module was imported under (JAX's
    public ``jax.extend.core.get_opaque_trace_state``); where JAX lacks it, one that always
    says "maybe not" (the probe then decides)."""
    try:
        from jax.extend.core import get_opaque_trace_state
        eager = get_opaque_trace_state(convention="nnx")
    except (ImportError, AttributeError, TypeError):  # pragma: no cover - older JAX
        return _no_transform_check
    return lambda: get_opaque_trace_state(convention="nnx") == eager


_outside_transforms = _eager_trace_check()
