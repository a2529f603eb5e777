"""Errors raised by simgraph. Each says what is wrong, where (a key path), and what to do."""

from __future__ import annotations


class GraphError(ValueError):
    """Base class for structural errors in an object graph."""


class GraphTypeError(GraphError, TypeError):
    """A field holds a value of the wrong kind (e.g. a non-node in a reference field)."""


class StructureMismatchError(GraphError):
    """Two graphs that must have the same structure do not; the message says where."""


class GraphFileError(GraphError):
    """A saved graph file cannot be read: truncated, another version, or not matching."""


def at(path: str) -> str:
    """Render a key path for a message (the root is shown as `<root>`)."""
    return path if path else "<root>"
