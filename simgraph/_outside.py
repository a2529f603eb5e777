"""Places where a node would sit outside the graph, kept as the original object by every
transform: a static value or a dict key (structure, not data), or a container JAX does not
flatten (a list/tuple/dict subclass, a set, a numpy array of dtype object: one leaf). ``_node``
and ``_walk`` refuse them."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

_MAX_DEPTH = 64
_OPAQUE = (list, tuple, dict, set, frozenset)  # a leaf of these types is a subclass, or a set


def holds_node(value: Any, base: type, depth: int = 0) -> bool:
    """Whether a hashable value (a static value, a dict key) is a node, or a tuple or
    frozenset holding one."""
    if isinstance(value, base):
        return True
    return (depth < _MAX_DEPTH and isinstance(value, (tuple, frozenset))
            and any(holds_node(v, base, depth + 1) for v in value))


def hiding(leaves: list, types: set, base: type, any_object_array=None) -> Any:
    """The first of a container's ``leaves`` (of ``types``) that hides nodes, or None.
    ``any_object_array(leaves, np.ndarray)``, where given (``_fastwalk.any_object_array``, the
    C accelerator), says whether some leaf is an array of dtype object in one C pass."""
    if not any(issubclass(t, _OPAQUE) for t in types):
        if not any(issubclass(t, np.ndarray) for t in types):
            return None
        if any_object_array is not None:
            if not any_object_array(leaves, np.ndarray):  # numeric arrays, the usual case
                return None
            leaves = [x for x in leaves if isinstance(x, np.ndarray)]
        else:
            arrays = leaves if types == {np.ndarray} else [
                x for x in leaves if isinstance(x, np.ndarray)]
            if not any(map(_has_object, arrays)):  # numeric arrays: attrgetter's pass in C
                return None
            leaves = arrays
    return next((x for x in leaves if hides_nodes(x, base)), None)


_has_object = operator.attrgetter("dtype.hasobject")


def hides_nodes(leaf: Any, base: type, depth: int = 0) -> bool:
    """Whether ``leaf``, a leaf to JAX, is a list/tuple/dict subclass, a set or an object
    array that holds nodes (at any depth of such containers)."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(leaf, np.ndarray):
        if not leaf.dtype.hasobject:
            return False
        items = leaf.reshape(-1).tolist()
    elif isinstance(leaf, _OPAQUE):
        items = leaf.values() if isinstance(leaf, dict) else leaf
    else:
        return False
    return any(isinstance(v, base) or hides_nodes(v, base, depth + 1) for v in items)


NODE_KEYS = ("a dict is keyed by nodes, but keys are structure, not part of the graph: "
             "transforms would keep the original nodes as keys, not the graph's copies. Key it "
             "by a name (e.g. a str), or hold (node, value) pairs in a list.")


def hidden_message(leaf: Any) -> str:
    """Why ``leaf`` (a leaf to JAX) holding nodes is refused, and what to use instead."""
    if isinstance(leaf, np.ndarray):
        return ("a numpy array of dtype object holds nodes, but JAX takes the array as one "
                "opaque leaf, so transforms would leave the nodes out of the graph. Hold them "
                "in lists (`array.tolist()`), which keep their references shared.")
    kind = type(leaf).__name__
    return (f"a {kind} holds nodes, but JAX does not flatten a {kind} (it is not a registered "
            "pytree), so transforms would leave them out of the graph. Use a plain list, tuple "
            "or dict, or register the type with jax.tree_util.register_pytree_node.")
