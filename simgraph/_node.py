"""``ReffableTreeNode``: a dataclass-like Python object that is a pytree keeping shared references.

Subclasses declare fields by annotation and are registered with JAX automatically. When JAX
flattens a node it flattens the node's whole reachable graph into a refs table (see
``_walk``), so references shared inside the graph come back shared, and cycles survive.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import numpy as np

from . import _fields, _outside, _registry, _tables, _walk
from ._errors import GraphTypeError


class ReffableTreeNode:
    """Base class for graph nodes: equations, providers, pipes, junctions, buses, ...

    Example::

        class Provider(sg.ReffableTreeNode):
            value: jax.Array

        class Equation(sg.ReffableTreeNode):
            constant: jax.Array
            gradient: Provider            # a reference; many equations may share one
            name: str = sg.static(default="")

    Nodes are ordinary mutable objects outside transforms, compare by identity, and are
    rebuilt (with relative identity intact) by every unflatten.
    """

    __sg_layout__: _fields.Layout

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _check_identity_semantics(cls)
        _fields.wrap_array_defaults(cls)
        dataclasses.dataclass(cls, eq=False, repr=False)
        cls.__sg_layout__ = _fields.make_layout(cls)
        cls.__sg_names__ = frozenset(i.name for i in cls.__sg_layout__.infos)
        cls.__sg_statics__ = frozenset(cls.__sg_layout__.static)
        cls.__sg_refkinds__ = None
        cls.__sg_plan__ = None
        jax.tree_util.register_pytree_with_keys(
            cls, _tables.flatten_with_keys, _unflatten, flatten_func=_walk.flatten
        )
        _registry.register(cls)

    def __post_init__(self) -> None:
        check_fields(self)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in type(self).__sg_names__ and not _settable_on_class(type(self), name):
            raise _undeclared(type(self), name)
        if name in type(self).__sg_statics__:
            if _outside.holds_node(value, ReffableTreeNode):
                raise _node_in_static(type(self), name)
        elif type(value) is np.ndarray and value.dtype.hasobject:
            raise _object_array(type(self), name, value)
        elif isinstance(value, (str, bytes)):
            raise _string_data(type(self), name, value)
        object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        layout = type(self).__sg_layout__
        parts = []
        for info in layout.infos:
            value = self.__dict__.get(info.name, "<unset>")
            parts.append(f"{info.name}={_short_repr(value)}")
        return f"{type(self).__name__}({', '.join(parts)})"


def _check_identity_semantics(cls: type) -> None:
    """Nodes compare and hash by identity: the graph walk keys its index by the node objects
    (sharing means "the same object"), so a value-based ``__eq__``/``__hash__`` would merge
    distinct nodes or make them unhashable."""
    if cls.__hash__ is not object.__hash__ or cls.__eq__ is not object.__eq__:
        raise GraphTypeError(
            f"{cls.__qualname__} overrides __eq__ or __hash__, but simgraph nodes compare and hash "
            "by identity (shared references are found by identity). Remove the override and "
            "compare nodes' values with a method of another name, e.g. `same_values(other)`; "
            "remove a @dataclasses.dataclass decorator, which adds them (node classes are "
            "dataclasses already)."
        )


def _settable_on_class(cls: type, name: str) -> bool:
    """A property (or other data descriptor) of the class may be assigned through."""
    return hasattr(getattr(cls, name, None), "__set__")


def _undeclared(cls: type, name: str) -> AttributeError:
    """Flatten carries declared fields only: an ad-hoc attribute would vanish in every
    transform and fail far away, so it is refused where it is set."""
    declared = ", ".join(i.name for i in cls.__sg_layout__.infos) or "none"
    return AttributeError(
        f"{cls.__name__} has no field {name!r} (declared fields: {declared}). JAX transforms "
        f"carry declared fields only; declare it in the class body, e.g. `{name}: jax.Array`, "
        f"or `{name}: str = sg.static(default=...)` for metadata."
    )


def _node_in_static(cls: type, name: str) -> GraphTypeError:
    """A node in static metadata would be kept as the original object by every transform
    (outside the graph: sharing with the graph's copy lost) and kept alive by jit's cache."""
    return GraphTypeError(
        f"{cls.__name__}.{name} is a static field and cannot hold a node: transforms would "
        "keep the original object, not the graph's copy. Declare it as a data field "
        f"(`{name}: OtherNode`), which keeps references shared through transforms."
    )


def _unflatten(entries: tuple, children) -> Any:
    return _tables.unflatten(entries, children)


def check_fields(node: ReffableTreeNode) -> None:
    """Construction-time checks that give an early, local error for common mistakes."""
    cls = type(node)
    _check_identity_semantics(cls)  # again: a @dataclass decorator adds __eq__ after the class
    kinds = _walk.refkinds_of(cls)
    for name, refkind in zip(cls.__sg_layout__.dynamic, kinds):
        value = node.__dict__.get(name)
        if refkind and not isinstance(value, ReffableTreeNode):
            if not (value is None and refkind == _fields.REF_OPTIONAL):
                want = cls.__dataclass_fields__[name].type
                raise GraphTypeError(
                    f"{cls.__name__}.{name} is a reference field and must hold a node "
                    f"({getattr(want, '__name__', want)}), got {type(value).__name__}. Pass the "
                    "node object itself, or change the annotation if this field holds data."
                )
        if isinstance(value, (str, bytes)):
            raise _string_data(cls, name, value)


def _string_data(cls: type, name: str, value: Any) -> GraphTypeError:
    """A string in a data field is no array: JAX cannot trace it."""
    return GraphTypeError(
        f"{cls.__name__}.{name} holds a {type(value).__name__}, which JAX cannot trace. "
        f"Declare it as static metadata: `{name}: str = sg.static()`; for a number, pass "
        "the number itself (1.0, not '1.0')."
    )


def _object_array(cls: type, name: str, value: np.ndarray) -> GraphTypeError:
    """A numpy array of Python objects is one opaque leaf: JAX cannot trace it, and nodes
    inside it would be left out of the graph (their sharing lost)."""
    nodes = any(isinstance(v, ReffableTreeNode) for v in value.reshape(-1).tolist())
    fix = ("Hold the nodes in a list (`array.tolist()`), which keeps them in the graph and "
           "their references shared" if nodes else
           "Convert it to numbers, e.g. `np.asarray(value, dtype=float)`")
    return GraphTypeError(
        f"{cls.__name__}.{name} holds a numpy array of dtype object"
        f"{' holding nodes' if nodes else ''}, which JAX cannot trace. {fix}."
    )


def _short_repr(value: Any) -> str:
    if isinstance(value, ReffableTreeNode):
        return f"<{type(value).__name__} at {id(value):#x}>"
    if isinstance(value, (jax.Array, np.ndarray)):
        if value.size > 6:
            return f"{value.dtype}{list(value.shape)}"
        try:
            return np.array2string(np.asarray(value), separator=", ")
        except jax.errors.TracerArrayConversionError:  # traced: no values to show
            return repr(value)
    if isinstance(value, (list, tuple)) and len(value) > 0:
        inner = ", ".join(_short_repr(v) for v in value[:4])
        one = len(value) == 1 and isinstance(value, tuple)
        more = ", ..." if len(value) > 4 else "," if one else ""
        return f"[{inner}{more}]" if isinstance(value, list) else f"({inner}{more})"
    if isinstance(value, dict) and len(value) > 0:  # nodes in dicts: never repr'd in full
        inner = ", ".join(f"{k!r}: {_short_repr(v)}" for k, v in list(value.items())[:4])
        return f"{{{inner}{', ...' if len(value) > 4 else ''}}}"
    return repr(value)
