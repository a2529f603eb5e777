"""Groups of elements that one vmapped trace can evaluate, and the view objects they see.

A group is a set of nodes of one kind whose neighbourhoods look alike: the same kinds at each
reference slot and the same aliasing (which slots are the same node, e.g. ``a is b``). A
method sees *views*: instances of the real classes built with ``object.__new__`` whose fields
hold one element's (vmapped) values. References of the element are views too; references of
those are presented only when a method reads them (found by probing: an unexpanded reference
is a trap that asks for expansion), and nothing beyond two hops.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from . import _kinds
from ._model_errors import LoweringError

METHODS = ("residual", "contributions", "step_limit")


@dataclasses.dataclass(eq=False)
class Slot:
    """One node position in an element's neighbourhood: ``path`` = () self, (s,), (s, s2)."""

    path: tuple
    kind: int
    alias: int  # index of the first slot holding the same node (itself if none earlier)
    rows: np.ndarray  # (c,) positions inside its kind
    nodes: np.ndarray  # (c,) node ids
    identity: bool = False  # rows == arange(kind count): no gather needed


@dataclasses.dataclass(eq=False)
class Group:
    """Nodes of one kind evaluated by one vmapped call of their methods."""

    kind: int
    rows: np.ndarray  # positions of the members in their kind
    expanded: frozenset  # hop-1 slots whose own references are presented
    slots: list
    child: dict  # (slot index, reference s) -> slot index
    res_shape: tuple | None = None
    out_dtypes: tuple = ()
    con_targets: tuple = ()  # slot index of each contribution's target
    con_shapes: tuple = ()
    has_step: bool = False

    @property
    def count(self) -> int:
        return len(self.rows)


class NeedHop(Exception):
    """Internal: a method read a reference of a hop-1 view that was not presented."""

    def __init__(self, slot: int):
        super().__init__(slot)
        self.slot = slot


class _Trap:
    """Stands for a reference that was not presented; any use raises."""

    __slots__ = ("_where", "_hop")

    def __init__(self, where: str, hop: int | None):
        self._where, self._hop = where, hop

    def _fail(self, *_, **__):
        if self._hop is not None:
            raise NeedHop(self._hop)
        raise LoweringError(
            f"a model method reads `{self._where}`, three references away from the element. "
            "Grouped evaluation presents nodes up to two references away; read the value through "
            "a closer reference, or use evaluation='objectwise' (slow for large graphs)."
        )

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        self._fail()

    @property
    def __class__(self):  # read by isinstance(): a class test is a use too
        self._fail()

    __getitem__ = __iter__ = __len__ = __bool__ = __call__ = __array__ = __jax_array__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _fail
    __rtruediv__ = __neg__ = __pow__ = __float__ = __lt__ = __gt__ = __le__ = __ge__ = _fail

    def __repr__(self) -> str:
        return f"<reference {self._where} not presented>"


def _alias(ids: np.ndarray) -> np.ndarray:
    """For each row and column: the first column holding the same id."""
    c, n = ids.shape
    order = np.argsort(ids, axis=1, kind="stable")
    srt = np.take_along_axis(ids, order, 1)
    start = np.ones((c, n), dtype=bool)
    start[:, 1:] = srt[:, 1:] != srt[:, :-1]
    pos = np.where(start, np.arange(n)[None, :], 0)
    np.maximum.accumulate(pos, axis=1, out=pos)
    alias = np.empty_like(order)
    np.put_along_axis(alias, order, np.take_along_axis(order, pos, 1), 1)
    return alias


def _neighbourhood(an, k: int, rows: np.ndarray, expanded: frozenset):
    """Node-id matrix (c, L) and slot paths for members ``rows`` of kind ``k``."""
    kind = an.kinds[k]
    hop1 = kind.slots[rows]
    cols, paths = [kind.members[rows]], [()]
    for s in range(hop1.shape[1]):
        cols.append(hop1[:, s])
        paths.append((s,))
    for s in sorted(expanded):
        target = an.kinds[an.kind_of[hop1[0, s]]]
        hop2 = target.slots[an.pos_of[hop1[:, s]]]
        for s2 in range(hop2.shape[1]):
            cols.append(hop2[:, s2])
            paths.append((s, s2))
    return np.stack(cols, axis=1), paths


def _row_labels(keys: np.ndarray) -> np.ndarray:
    """Label each row of a small-int matrix by its distinct value (first-seen order not kept)."""
    c, w = keys.shape
    if w == 0 or c == 0:
        return np.zeros(c, np.int64)
    base = int(keys.max()) + 1
    if w * np.log2(max(base, 2)) < 62:  # pack each row into one int64: a fast 1-D unique
        packed = (keys.astype(np.int64) * (base ** np.arange(w, dtype=np.int64))[None, :]).sum(axis=1)
        return np.unique(packed, return_inverse=True)[1].reshape(-1)
    return np.unique(keys, axis=0, return_inverse=True)[1].reshape(-1)


def split(an, k: int, rows: np.ndarray, expanded: frozenset) -> list:
    """Partition members ``rows`` of kind ``k`` into groups with identical neighbourhoods."""
    first = _row_labels(an.kind_of[an.kinds[k].slots[rows]]) if expanded else np.zeros(len(rows), np.int64)
    groups = []
    for part in np.unique(first).tolist():
        sub = rows[first == part]
        ids, paths = _neighbourhood(an, k, sub, expanded)
        labels = _row_labels(np.concatenate([an.kind_of[ids], _alias(ids)], axis=1))
        for g in np.unique(labels).tolist():
            mask = labels == g
            groups.append(_make_group(an, k, sub[mask], ids[mask], paths, expanded))
    return groups


def _make_group(an, k, rows, ids, paths, expanded) -> Group:
    alias = _alias(ids[:1])[0]
    slots, index = [], {}
    for j, path in enumerate(paths):
        nodes = ids[:, j]
        kind = int(an.kind_of[nodes[0]])
        pos = an.pos_of[nodes]
        ident = len(pos) == an.kinds[kind].count and bool(np.all(pos == np.arange(len(pos))))
        slots.append(Slot(path, kind, int(alias[j]), pos, nodes, ident))
        index[path] = j
    child = {}
    for j, path in enumerate(paths):
        if len(path) < 2:
            for s in range(an.kinds[slots[j].kind].n_slots):
                if path + (s,) in index:
                    child[(j, s)] = index[path + (s,)]
    return Group(k, rows, expanded, slots, child)


def slot_where(an, group: Group, j: int) -> str:
    """``self.a.terms[1]``: how a method reaches slot ``j``."""
    keys, at = (), 0
    for s in group.slots[j].path:
        keys += an.kinds[group.slots[at].kind].slot_paths[s]
        at = group.child[(at, s)]
    return "self" + jax.tree_util.keystr(keys)


def make_views(an, group: Group, data: list) -> list:
    """Build the view objects of one element from its per-slot column values."""
    views = []
    for j, slot in enumerate(group.slots):
        views.append(views[slot.alias] if slot.alias != j else object.__new__(an.kinds[slot.kind].cls))
    for j, slot in enumerate(group.slots):
        if slot.alias != j:
            continue
        kind = an.kinds[slot.kind]
        d = views[j].__dict__
        for name, value in zip(_kinds.field_names(kind.cls)[1], kind.statics):
            d[name] = value

        def ref(s, j=j, kind=kind):
            c = group.child.get((j, s))
            if c is not None:
                return views[c]
            path = group.slots[j].path
            hop = path[0] if len(path) == 1 else None
            same = _presented_as(an, group, j, s, hop)
            if same is not None:
                return views[same]
            where = slot_where(an, group, j) + jax.tree_util.keystr(kind.slot_paths[s])
            return _Trap(where, hop)

        for f in kind.fields:
            d[f.name] = _kinds.build_field(f, data[j], ref)
    return views


def _presented_as(an, group: Group, j: int, s: int, hop: int | None) -> int | None:
    """The presented slot that reference ``s`` of slot ``j`` is for every member (so
    ``self.port.a is self.a`` holds where it holds in the graph), or None if it is none of
    them. Raises `NeedHop` where it is a presented node for some members only: no one view
    answers ``is`` for all of them, so the reference must be presented itself."""
    ids = an.kinds[group.slots[j].kind].slots[group.slots[j].rows, s]
    for i, slot in enumerate(group.slots):
        if slot.alias == i:
            same = slot.nodes == ids
            if same.all():
                return i
            if hop is not None and same.any():
                raise NeedHop(hop)
    return None


def abstract_data(an, group: Group, batched: bool = True) -> list:
    """ShapeDtypeStructs standing for the gathered data of a group (for probing/tracing)."""
    lead = (group.count,) if batched else ()
    data = []
    for j, slot in enumerate(group.slots):
        if slot.alias != j:
            data.append(None)
            continue
        cols = an.kinds[slot.kind].columns
        data.append([jax.ShapeDtypeStruct(lead + c.shape, an.x_dtype if c.unknown else c.dtype) for c in cols])
    return data
