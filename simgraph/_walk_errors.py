"""Errors the graph walk raises, each naming where in the graph it happened (a key path
found by a second walk, only once something is wrong)."""

from __future__ import annotations

from typing import Any

from ._errors import GraphError, GraphTypeError, at


def path_of(root: Any, target: Any) -> str:
    """The key path of ``target`` in the graph of ``root`` (for error messages only)."""
    from ._tables import path_of as _path_of

    return _path_of(root, target)


def missing_field(root, objs, name) -> GraphError:
    """A node of ``objs`` lacks field ``name``."""
    node = next(o for o in objs if name not in o.__dict__)
    path = at(path_of(root, node))
    return GraphError(
        f"{path}: {type(node).__name__} has no value for field {name!r}. Set it (fields are "
        "declared by annotation and must all hold a value before the graph is used)."
    )


def not_a_node(root, node, name, value) -> GraphTypeError:
    """Reference field ``name`` of ``node`` holds ``value``, which is not a node."""
    path = at(path_of(root, node) + f".{name}")
    want = type(node).__dataclass_fields__[name].type
    want = getattr(want, "__name__", want)
    return GraphTypeError(
        f"{path}: reference field {name!r} of {type(node).__name__} must hold a node "
        f"({want}), got {type(value).__name__}. Pass a node object, or change the "
        "annotation if this field holds data."
    )


def check_hashable(root, cls, objs, statics) -> None:
    """Refuse static values that cannot be part of a (hashed) structure."""
    for name, column in zip(cls.__sg_layout__.static, statics):
        for node, value in zip(objs, column):
            try:
                hash(value)
            except TypeError:
                path = at(path_of(root, node) + f".{name}")
                raise GraphTypeError(
                    f"{path}: static field {name!r} holds an unhashable "
                    f"{type(value).__name__}. Static values are part of the structure and must "
                    "be hashable: use a tuple or frozenset, or declare the field as state."
                ) from None
    hash(statics)
