"""The node classes defined in this process, by ``module:qualname``.

``simgraph.load`` instantiates only classes found here (or given by the caller): a saved file
names its classes, and resolving such a name by importing a module would run code chosen by
the file. Every ``ReffableTreeNode`` subclass registers itself when its class body runs.
"""

from __future__ import annotations

import weakref

_CLASSES: weakref.WeakValueDictionary[str, type] = weakref.WeakValueDictionary()


def class_name(cls: type) -> str:
    """The name a saved file records for ``cls``."""
    return f"{cls.__module__}:{cls.__qualname__}"


def register(cls: type) -> None:
    """Make ``cls`` loadable; a later class of the same name replaces it (a re-run cell)."""
    _CLASSES[class_name(cls)] = cls


def lookup(name: str) -> type | None:
    """The registered class called ``name`` (``module:qualname``), or None."""
    return _CLASSES.get(name)
