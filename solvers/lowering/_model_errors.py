"""Errors about a model (a graph of equations) found while lowering it to a flat system.

Each says what is wrong, where (key paths of the nodes involved) and what to do. All are
``simgraph.GraphError`` subclasses, so ``except sg.GraphError`` catches every graph mistake.
"""

from __future__ import annotations

from simgraph import GraphError


class ModelError(GraphError):
    """Base class: the graph cannot be turned into a well-posed system ``F(x, params) = 0``."""


class MethodError(ModelError):
    """A model method (``residual``, ``contributions``, ``step_limit``) broke the protocol."""


class ContributionError(MethodError):
    """A contribution targets a node that is not a reference of the element, or has no
    ``residual``, or does not match that residual's shape."""


class LoweringError(ModelError):
    """Grouped (vmapped) evaluation is impossible for this graph; objectwise still works."""


class EquationCountError(ModelError):
    """The number of equations differs from the number of unknowns."""


class StructurallySingularError(ModelError):
    """No assignment of unknowns to equations exists: the Jacobian is singular for any values."""


class SingularComponentError(ModelError):
    """A part of the system has a numerically singular Jacobian (e.g. an island with no reference)."""


def listing(items: list[str], limit: int = 8) -> str:
    """``a, b, c and 12 more``: a short list for messages."""
    head = ", ".join(items[:limit])
    return head + (f" and {len(items) - limit} more" if len(items) > limit else "")
