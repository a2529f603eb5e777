"""A warning when a graph's element kinds multiply: nearly one kind per node.

Nodes are evaluated together per kind (class, static values, field structure), and each
kind is traced and compiled on its own. A static field that differs from node to node (a
``name``, an id) silently makes every node its own kind: the grouping then buys nothing
and compile time grows with the graph.
"""

from __future__ import annotations

import os
import sys
import warnings

import simgraph as sg

#: Classes with fewer nodes than this are never warned about (a few kinds cost little).
MIN_NODES = 32
#: Warn when a class has at least this many kinds per node.
KINDS_PER_NODE = 0.5


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside this package (the user's call)."""
    here = os.path.dirname(os.path.abspath(__file__))
    level, frame = 1, sys._getframe(2)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(here):
        frame, level = frame.f_back, level + 1
    return level


def warn_if_kinds_multiply(kinds) -> None:
    """Warn for each class whose nodes fall into nearly as many kinds as there are nodes,
    naming the static fields whose values differ."""
    by_class: dict = {}
    for kind in kinds:
        by_class.setdefault(kind.cls, []).append(kind)
    for cls, group in by_class.items():
        nodes = sum(kind.count for kind in group)
        if nodes < MIN_NODES or len(group) < KINDS_PER_NODE * nodes:
            continue
        names = [f.name for f in sg.fields(cls) if f.kind == "static"]
        varying = [name for i, name in enumerate(names)
                   if len({kind.statics[i] for kind in group}) > 1]
        why = (f"their static field(s) {', '.join(varying)} differ from node to node"
               if varying else "their field structure (leaf shapes, references) differs")
        warnings.warn(
            f"the {nodes} {cls.__name__} nodes fall into {len(group)} element kinds because "
            f"{why}; every kind is traced and compiled on its own, so compile time grows with "
            "the graph. Keep per-node labels outside the graph (a dict from name to node) and "
            "per-node numbers in ordinary data fields; see 'Static fields and kinds' in "
            "docs/guide-models.md.", stacklevel=_caller_level())
