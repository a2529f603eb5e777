"""Field declarations: state (traced), unknown (state a solver solves for), static (hashable).

Fields are declared by annotation, dataclass style. ``sg.static()`` and ``sg.unknown()`` return
``dataclasses.field`` objects tagged with their kind, so the usual ``default=`` and
``default_factory=`` work. An array default is allowed too (dataclasses reject it as
mutable), given to ``sg.field``/``sg.unknown`` or as a plain class attribute
(``u: jax.Array = jnp.zeros(2)``): a JAX array (immutable) is shared by every instance, a
NumPy array copied for each.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, Literal

import jax
import numpy as np

from ._errors import GraphTypeError

FieldKind = Literal["state", "unknown", "static"]
_KIND_KEY = "simgraph.kind"
_KINDS = ("state", "unknown", "static")


def field(
    *,
    kind: FieldKind = "state",
    default: Any = dataclasses.MISSING,
    default_factory: Any = dataclasses.MISSING,
    doc: str | None = None,
) -> Any:
    """Declare a field of a node with an explicit kind (``"state"``, ``"unknown"``, ``"static"``)."""
    if kind not in _KINDS:
        raise ValueError(f"field kind must be one of {_KINDS}, got {kind!r}")
    metadata = {_KIND_KEY: kind, "doc": doc}
    if _is_array(default):
        default, default_factory = dataclasses.MISSING, _array_factory(default)
    return dataclasses.field(default=default, default_factory=default_factory, metadata=metadata)


def _is_array(value: Any) -> bool:
    return isinstance(value, (np.ndarray, jax.Array))


def _array_factory(value: Any):
    """A ``default_factory`` for an array default: JAX arrays are immutable and shared, NumPy
    arrays are copied so that no two nodes share a mutable buffer."""
    return value.copy if isinstance(value, np.ndarray) else lambda: value


def wrap_array_defaults(cls: type) -> None:
    """Turn each plain array class attribute of ``cls``'s own annotated fields into a state
    field with a copying default factory, before ``dataclasses`` sees (and rejects) it."""
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        value = cls.__dict__.get(name, dataclasses.MISSING)
        if _is_array(value) and not _is_classvar(annotation):
            setattr(cls, name, field(default=value))


def _is_classvar(annotation: Any) -> bool:
    """``ClassVar`` annotations are class constants, not fields (as in ``dataclasses``)."""
    if isinstance(annotation, str):
        return annotation.replace("typing.", "").startswith("ClassVar")
    return annotation is typing.ClassVar or typing.get_origin(annotation) is typing.ClassVar


def static(default: Any = dataclasses.MISSING, *, default_factory: Any = dataclasses.MISSING) -> Any:
    """Declare static metadata: hashable, part of the structure (treedef), never traced."""
    return field(kind="static", default=default, default_factory=default_factory)


def unknown(default: Any = dataclasses.MISSING, *, default_factory: Any = dataclasses.MISSING) -> Any:
    """Declare array state that solvers solve for; its value is the start point."""
    return field(kind="unknown", default=default, default_factory=default_factory)


@dataclasses.dataclass(frozen=True)
class FieldInfo:
    """Public description of one declared field."""

    name: str
    kind: FieldKind
    annotation: Any
    doc: str | None = None


@dataclasses.dataclass(frozen=True)
class Layout:
    """Per-class field layout used by the flatten hot loop (computed once per class)."""

    dynamic: tuple[str, ...]  # state and unknown fields, declaration order
    static: tuple[str, ...]
    unknown: frozenset[str]
    infos: tuple[FieldInfo, ...]


def make_layout(cls: type) -> Layout:
    infos = []
    for f in dataclasses.fields(cls):
        kind = f.metadata.get(_KIND_KEY, "state")
        infos.append(FieldInfo(f.name, kind, f.type, f.metadata.get("doc")))
    dynamic = tuple(i.name for i in infos if i.kind != "static")
    static_names = tuple(i.name for i in infos if i.kind == "static")
    unknown_names = frozenset(i.name for i in infos if i.kind == "unknown")
    return Layout(dynamic, static_names, unknown_names, tuple(infos))


# Reference requirement of a field, from its annotation.
REF_ANY, REF_REQUIRED, REF_OPTIONAL = 0, 1, 2


def reference_kinds(cls: type, node_base: type) -> tuple[int, ...]:
    """For each dynamic field: must it hold a node (1), a node or None (2), or anything (0)?

    Annotations are resolved lazily (forward references to classes defined later are common
    in graphs with cycles); an annotation that cannot be resolved imposes no requirement.
    """
    layout: Layout = cls.__sg_layout__
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # e.g. a string annotation naming a local class: use what is resolved
        hints = {f.name: f.type for f in dataclasses.fields(cls) if not isinstance(f.type, str)}
    kinds = []
    for name in layout.dynamic:
        kinds.append(_reference_kind(hints.get(name), node_base))
    return tuple(kinds)


def _reference_kind(annotation: Any, node_base: type) -> int:
    if isinstance(annotation, type) and issubclass(annotation, node_base):
        return REF_REQUIRED
    if typing.get_origin(annotation) in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        args = typing.get_args(annotation)
        others = [a for a in args if a is not type(None)]
        if len(others) == 1 and len(args) == 2 and _reference_kind(others[0], node_base) == REF_REQUIRED:
            return REF_OPTIONAL
    return REF_ANY


def fields(cls_or_node: Any) -> tuple[FieldInfo, ...]:
    """The declared fields of a node class (or of a node's class), in declaration order."""
    cls = cls_or_node if isinstance(cls_or_node, type) else type(cls_or_node)
    layout = getattr(cls, "__sg_layout__", None)
    if layout is None:
        raise GraphTypeError(f"{cls.__name__} is not a simgraph.ReffableTreeNode subclass; "
                             "sg.fields takes a node class or a node")
    return layout.infos
