"""``Bundle``: a container node that roots several objects together so sharing across them survives."""

from __future__ import annotations

from typing import Any, Iterator

from ._node import ReffableTreeNode


class Bundle(ReffableTreeNode):
    """Roots several objects in one graph.

    Separate arguments of a JAX transform are flattened as separate roots, so an object
    shared between two arguments comes back as two copies. Pass ``sg.Bundle(a, b)`` instead
    and unpack it inside: ``a, b = bundle``.
    """

    items: tuple

    def __init__(self, *items: Any):
        self.items = tuple(items)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> Any:
        return self.items[i]
