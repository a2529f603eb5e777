"""Key-path entries for graph leaves and placeholders for references inside containers."""

from __future__ import annotations

from typing import Any

import jax


class NodePathKey:
    """One key entry standing for the whole path from the root to a node's field.

    ``jax.tree_util.keystr`` joins entries with ``str``, so a leaf's path prints as
    ``.equations[1].gradient.value``. ``node_index`` is the node's flatten-local id and
    ``field`` the field name, so helpers can find the owner of each leaf.
    """

    __slots__ = ("path", "node_index", "field")

    def __init__(self, path: tuple, node_index: int, field: str):
        self.path = path
        self.node_index = node_index
        self.field = field

    def __str__(self) -> str:
        return jax.tree_util.keystr(self.path)

    def __repr__(self) -> str:
        return f"NodePathKey({str(self)!r})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, NodePathKey) and self.path == other.path

    def __hash__(self) -> int:
        return hash(self.path)


class NodeRef:
    """Placeholder for a reference inside a container that also holds leaves.

    Registered as a pytree node without children, so JAX keeps the id in its treedef and
    rebuilds the placeholder; unflatten then swaps it for the rebuilt node.
    """

    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index

    def __repr__(self) -> str:
        return f"NodeRef({self.index})"


jax.tree_util.register_pytree_node(NodeRef, lambda r: ((), r.index), lambda index, _: NodeRef(index))
