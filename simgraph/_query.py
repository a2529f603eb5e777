"""Read-only views of a graph: its nodes in canonical order and who owns each leaf."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax

from . import _tables, _walk
from ._errors import GraphTypeError


def nodes(root: Any) -> list:
    """Every node reachable from ``root``, in the canonical (flatten) order; root first."""
    require_node(root)
    return _walk.traverse(root)[2]


def require_node(root: Any, what: str = "the root node of a graph") -> None:
    """A ``GraphTypeError`` unless ``root`` is a node."""
    if not isinstance(root, _walk._node_base()):
        raise GraphTypeError(
            f"expected {what} (a ReffableTreeNode), got {type(root).__name__}; to pass "
            "several nodes, wrap them: sg.Bundle(a, b, ...).")


def flatten_nodes(root: Any) -> tuple[list, tuple, list]:
    """``(leaves, key, nodes)`` of the graph of ``root`` in one walk: the leaves in
    ``jax.tree_util.tree_leaves`` order, a hashable key that is equal exactly when the two
    graphs' treedefs are (like a treedef it holds the classes and static values, no node),
    and the nodes as :func:`nodes` lists them. One walk where ``tree_flatten`` and
    :func:`nodes` take two. ``root`` must be a node (wrap several in ``sg.Bundle``)."""
    require_node(root)
    children, aux, node_list = _walk.traverse(root)
    leaves, children_def = jax.tree_util.tree_flatten(children)
    return leaves, (type(root), aux, children_def), node_list


@dataclasses.dataclass(frozen=True)
class LeafInfo:
    """Where one leaf of a graph lives: its key path, owning node and field."""

    path: str
    node: Any
    field: str
    kind: str  # "state" or "unknown"


def leaves_with_owners(root: Any) -> list[tuple[LeafInfo, Any]]:
    """``(LeafInfo, leaf)`` for every leaf, in ``jax.tree_util.tree_leaves`` order."""
    require_node(root)
    _, entries, node_list = _tables.walk(root)
    out = []
    for path, leaf in jax.tree_util.tree_flatten_with_path(root)[0]:
        key = path[0]
        node = node_list[key.node_index]
        kind = "unknown" if key.field in type(node).__sg_layout__.unknown else "state"
        out.append((LeafInfo(jax.tree_util.keystr(path), node, key.field, kind), leaf))
    return out
