"""A graph's structure as public, typed records: what libraries built on simgraph read.

``structure(root)`` (or ``structure(treedef)``) describes everything about a graph except its
leaf values: which nodes there are (numbered in the canonical flatten order, root = 0), their
classes and static values, and for every dynamic field of every node the shape of its value,
the nodes it references and where its data leaves sit in ``jax.tree_util.tree_leaves(root)``.
It is computed from the treedef alone (no node object, no leaf is read), so it is equal for
graphs of equal structure and is cached by treedef: a library can key its own analysis by a
`Structure` (hashable) and, on a hit, read only the leaves that ``tree_flatten`` returns.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import threading
from collections import OrderedDict
from typing import Any

import jax

from . import _children
from ._errors import GraphTypeError
from ._keys import NodeRef
from ._walk import CHILD, _node_base

#: How many structures ``structure`` keeps (least recently used dropped first).
CACHE_SIZE = 32
_CACHE: OrderedDict = OrderedDict()
_LOCK = threading.Lock()
_LEAF = jax.tree_util.tree_structure(0)
_NUM_LEAVES = operator.attrgetter("num_leaves")
_DATA = object()  # stands for a data leaf while a container's references are read


@dataclasses.dataclass(frozen=True)
class FieldStructure:
    """One dynamic field of the nodes of a group, member by member.

    ``shapes[i]``: the pytree structure of member i's value, each referenced node counted as
    one leaf (a bare number or array is one leaf; ``None`` has none). ``refs[i]``: for each leaf
    of that structure, the id of the node it references, or -1 for a data leaf. ``leaves[i]``:
    the positions of member i's data leaves in the root's flatten order."""

    name: str
    kind: str  # "state" or "unknown"
    shapes: tuple
    refs: tuple
    leaves: tuple


@dataclasses.dataclass(frozen=True)
class GroupStructure:
    """Nodes of one class met together by the breadth-first walk.

    ``nodes``: their ids; ``statics[i]``: member i's static values, named by ``static_names``;
    ``fields``: the dynamic (state and unknown) fields in declaration order."""

    cls: type
    nodes: tuple
    static_names: tuple
    statics: tuple
    fields: tuple


@dataclasses.dataclass(frozen=True, eq=False)
class Structure:
    """The structure of a graph (see the module docstring); equal and hashing as ``treedef``."""

    treedef: Any
    groups: tuple
    n_nodes: int
    n_leaves: int

    def __eq__(self, other) -> bool:
        return isinstance(other, Structure) and (self is other or self.treedef == other.treedef)

    def __hash__(self) -> int:
        return hash(self.treedef)


def structure(root_or_treedef: Any) -> Structure:
    """The `Structure` of a graph, from its root node or from ``jax.tree_util.tree_structure``
    of it (cached by treedef: graphs of equal structure share one record)."""
    treedef = root_or_treedef
    if not isinstance(treedef, jax.tree_util.PyTreeDef):
        if not isinstance(root_or_treedef, _node_base()):
            raise GraphTypeError(
                "sg.structure needs the root node of a graph (a ReffableTreeNode) or its "
                f"treedef; got {type(root_or_treedef).__name__}. To describe several nodes, "
                "wrap them: sg.structure(sg.Bundle(a, b, ...)).")
        treedef = jax.tree_util.tree_structure(root_or_treedef)
    with _LOCK:  # threads: another one may drop the entry between a get and a move
        cached = _CACHE.get(treedef)
        if cached is not None:
            _CACHE.move_to_end(treedef)
            return cached
    out = _read(treedef)
    with _LOCK:
        _CACHE[treedef] = out
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    return out


def _read(treedef) -> Structure:
    data = treedef.node_data()
    if data is None or not (isinstance(data[0], type) and issubclass(data[0], _node_base())):
        raise GraphTypeError(f"sg.structure needs the root node of a graph (a ReffableTreeNode) "
                             f"or its treedef; got the treedef {treedef}.")
    reader = _Reader(treedef, _n_children(data[1]))
    groups = tuple(reader.group(*g) for g in data[1])
    return Structure(treedef, groups, sum(len(g.nodes) for g in groups), treedef.num_leaves)


def _n_children(groups) -> int:
    """How many children the walk emitted, counted from its aux groups."""
    n = 0
    for _, members, _, specs in groups:
        for spec in specs:
            if type(spec) is int:
                n += len(members)
            elif type(spec[0]) is str:
                n += sum(1 for s in spec[1] if type(s) is int and s < 0)
    return n


@functools.lru_cache(maxsize=None)
def _data_refs(n: int) -> tuple:
    return (-1,) * n


class _Reader:
    """Reads the walk's aux groups in the order their children were emitted, a column at a
    time (the children's treedefs and leaf counts from `_children.read`)."""

    def __init__(self, treedef, n_children: int):
        self.children, self.starts = _children.read(treedef, n_children)
        self.next = 0
        self.offset = 0  # leaf position of the next child

    def group(self, cls, members, statics, specs) -> GroupStructure:
        layout = cls.__sg_layout__
        fields = tuple(self.column(name, "unknown" if name in layout.unknown else "state", spec, len(members))
                       for name, spec in zip(layout.dynamic, specs))
        rows = tuple(zip(*statics)) if statics else ((),) * len(members)
        return GroupStructure(cls, members, layout.static, rows, fields)

    def column(self, name: str, kind: str, spec, count: int) -> FieldStructure:
        if type(spec) is int:  # every member's value is a child
            return FieldStructure(name, kind, *self.children_of(count))
        if type(spec[0]) is str:  # mixed: one spec per member
            per = [self.member(s) for s in spec[1]]
            shapes, refs, leaves = zip(*per) if per else ((), (), ())
            return FieldStructure(name, kind, tuple(shapes), tuple(refs), tuple(leaves))
        empty = range(self.offset, self.offset)  # every member's value is a node
        return FieldStructure(name, kind, (_LEAF,) * count, tuple(zip(spec)), (empty,) * count)

    def children_of(self, count: int) -> tuple:
        """``(shapes, refs, leaves)`` of the next ``count`` children, one per member."""
        i, j = self.next, self.next + count
        if count == 0:
            return (), (), ()
        self.next, self.offset = j, self.starts[j]
        starts = self.starts[i:j + 1]
        leaves = tuple(map(range, starts[:-1], starts[1:]))
        if self.children is None:
            return (_LEAF,) * count, ((-1,),) * count, leaves
        shapes = tuple(self.children[i:j])
        return shapes, tuple(map(_data_refs, map(_NUM_LEAVES, shapes))), leaves

    def member(self, spec) -> tuple:
        if type(spec) is int:
            if spec >= 0:
                return _LEAF, (spec,), range(self.offset, self.offset)
            return self.child() if spec == CHILD else self.child_with_refs()
        kind, ids = spec
        shape = kind if isinstance(kind, jax.tree_util.PyTreeDef) else jax.tree_util.tree_structure(kind([0] * len(ids)))
        return shape, tuple(ids), range(self.offset, self.offset)

    def _take(self):
        i = self.next
        self.next += 1
        start, self.offset = self.starts[i], self.starts[i + 1]
        child = _LEAF if self.children is None else self.children[i]
        return child, range(start, self.offset)

    def child(self) -> tuple:
        child, leaves = self._take()
        return child, _data_refs(child.num_leaves), leaves

    def child_with_refs(self) -> tuple:
        """A container holding data and references: references become leaves of its shape."""
        child, leaves = self._take()
        value = jax.tree_util.tree_unflatten(child, [_DATA] * child.num_leaves)
        parts, shape = jax.tree_util.tree_flatten(value, is_leaf=lambda x: isinstance(x, NodeRef))
        return shape, tuple(p.index if isinstance(p, NodeRef) else -1 for p in parts), leaves
