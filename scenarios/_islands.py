"""Islands of a network with no reference node (reservoir, tank, slack bus), found before Newton.

An island without a reference leaves its potentials (heads, voltage angles) defined only up to
a constant, so the Jacobian is singular for any values. For a tree-shaped island the System's
structural check sees it, but not for an island with a loop, so the domains check topology.
"""
from __future__ import annotations

from typing import Hashable, Iterable, Sequence

import simgraph as sg

__all__ = ["IslandError", "islands_without_reference"]


class IslandError(sg.GraphError):
    """Part of a network has no reference node; ``nodes`` names its nodes."""

    def __init__(self, message: str, nodes: tuple):
        super().__init__(message)
        self.nodes = nodes


def islands_without_reference(nodes: Sequence[Hashable], edges: Iterable[tuple[Hashable, Hashable]],
                              references: Iterable[Hashable]) -> list[list[Hashable]]:
    """The connected components (lists of nodes, in ``nodes`` order) that hold no reference."""
    parent = {n: n for n in nodes}

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for a, b in edges:
        parent[find(a)] = find(b)
    anchored = {find(r) for r in references}
    islands: dict = {}
    for n in nodes:
        root = find(n)
        if root not in anchored:
            islands.setdefault(root, []).append(n)
    return list(islands.values())


def shown(names: Sequence, limit: int = 8) -> str:
    """``'a', 'b' and 3 more`` for messages."""
    head = ", ".join(repr(n) for n in names[:limit])
    return head + (f" and {len(names) - limit} more" if len(names) > limit else "")
