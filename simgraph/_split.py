"""Split a graph into (state, structure) by a filter, and merge them back.

``state`` is a plain ``dict`` from key path (``".equations[1].gradient.value"``) to leaf, so
it can be differentiated, optimised or batched with any JAX library; ``structure`` is a pytree
holding the graph's treedef and the leaves that were not selected.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, Union

import jax

from ._errors import GraphError, GraphTypeError
from ._query import LeafInfo, leaves_with_owners, require_node

Filter = Union[None, type, str, Callable[[LeafInfo], bool], tuple]


def leaf_filter(where: Filter) -> Callable[[LeafInfo], bool]:
    """Turn a filter spec into a predicate on :class:`LeafInfo`.

    ``None`` selects everything; a node class selects the leaves of nodes of that class; a
    string selects a field name (``"value"``), a class-qualified one
    (``"GradientProvider.value"``) or, holding ``[`` or starting with ``.``, a key path
    (``".items[0].constant"``, the leading dot optional) and the leaves under it
    (``".items[0]"``: that node's); ``"unknown"``-kind leaves are selected with
    ``sg.is_unknown``; a tuple selects the union of its members.
    """
    if where is None:
        return lambda info: True
    if isinstance(where, type):
        return lambda info: isinstance(info.node, where)
    if isinstance(where, str) and (where.startswith(".") or "[" in where):
        path = where if where.startswith((".", "[")) else "." + where
        return lambda info: info.path == path or info.path.startswith((path + ".", path + "["))
    if isinstance(where, str):
        cls_name, _, field = where.rpartition(".")
        if cls_name:
            return lambda info: info.field == field and type(info.node).__name__ == cls_name
        return lambda info: info.field == field
    if isinstance(where, tuple):
        preds = [leaf_filter(w) for w in where]
        return lambda info: any(p(info) for p in preds)
    if callable(where):
        return where
    raise TypeError(
        f"filter must be None, a node class, a field name, a callable(LeafInfo) or a tuple of "
        f"these; got {type(where).__name__}"
    )


def is_unknown(info: LeafInfo) -> bool:
    """Filter selecting the leaves of ``sg.unknown()`` fields."""
    return info.kind == "unknown"


class GraphStructure:
    """The part of a split graph that is not in the state: treedef and unselected leaves."""

    def __init__(self, treedef, selected: tuple[bool, ...], paths: tuple[str, ...], rest: list):
        self.treedef = treedef
        self.selected = selected
        self.paths = paths
        self.rest = rest

    def __repr__(self) -> str:
        n = sum(self.selected)
        return f"GraphStructure({n} state leaves, {len(self.rest)} other leaves)"


jax.tree_util.register_pytree_node(
    GraphStructure,
    lambda s: (s.rest, (s.treedef, s.selected, s.paths)),
    lambda aux, rest: GraphStructure(aux[0], aux[1], aux[2], list(rest)),
)


def split(graph: Any, where: Filter = None) -> tuple[dict[str, Any], GraphStructure]:
    """Return ``(state, structure)``: selected leaves by key path, and everything else."""
    require_node(graph, "a graph's root node to split")
    pred = leaf_filter(where)
    treedef = jax.tree_util.tree_structure(graph)
    state, rest, selected, paths = {}, [], [], []
    for info, leaf in leaves_with_owners(graph):
        chosen = bool(pred(info))
        selected.append(chosen)
        paths.append(info.path)
        if chosen:
            state[info.path] = leaf
        else:
            rest.append(leaf)
    return state, GraphStructure(treedef, tuple(selected), tuple(paths), rest)


def merge(structure: GraphStructure, state: dict[str, Any]) -> Any:
    """Rebuild a new graph from a structure and a state dict (inverse of :func:`split`)."""
    if not isinstance(structure, GraphStructure) or not isinstance(state, Mapping):
        raise GraphTypeError(
            f"merge takes the (structure, state) that sg.split returned, as merge(structure, "
            f"state); got ({type(structure).__name__}, {type(state).__name__}).")
    expected = {p for p, s in zip(structure.paths, structure.selected) if s}
    missing = sorted(expected - state.keys())
    extra = sorted(state.keys() - expected)
    if missing or extra:
        raise GraphError(
            f"state does not match the structure: missing {missing[:5]}, unexpected {extra[:5]}. "
            "Merge a state with the structure it was split with."
        )
    rest = iter(structure.rest)
    leaves = [state[p] if s else next(rest) for p, s in zip(structure.paths, structure.selected)]
    return jax.tree_util.tree_unflatten(structure.treedef, leaves)
