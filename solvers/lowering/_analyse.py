"""`analyse`: sort a graph's nodes into kinds a column at a time (no Python step per node).

A node's kind key is ``(class, static values, one key per dynamic field)``. Each dynamic field
of a `sg.GroupStructure` is read as a column: members of one field shape (found by
``tuple.count`` or one dict pass, in C) form one numpy block, whose rows are the codes of
its items (a reference, or the code of the data leaf's shape and dtype, looked up in one
array of leaf codes). Rows are grouped with ``np.unique``; Python runs once per distinct
row, field shape and kind, never per node. Keys, kinds and their order are those a
node-by-node pass would give (members in node order, kinds in order of first member).
"""

from __future__ import annotations

import dataclasses
import itertools
import operator

import jax
import numpy as np

from ._kinds import (_ARRAYS, _NONE, _REF, Analysis, Column, FieldLayout, Kind, _Keys,
                     _label, _layout_x, field_names, subpaths)

_REF_CODE = -2  # an item referencing a node
_BAD_CODE = -1  # a data leaf that is neither an array nor a number
_START = operator.attrgetter("start")
_LEAF = jax.tree_util.tree_structure(0)
_NONE_DEF = jax.tree_util.tree_structure(None)


def analyse(st, leaves: list) -> tuple[Analysis, list]:
    """The kinds of the graph of structure ``st`` (an `sg.Structure`) with flat ``leaves``, and
    per kind the positions in ``leaves`` of each member's data leaves, shape (count, columns)."""
    codes = _LeafCodes(leaves)
    by_key: dict = {}  # kind key -> (index, [member arrays], [position blocks], [slot blocks])
    kind_of = np.empty(st.n_nodes, dtype=np.int64)
    for g in st.groups:
        _sort_group(g, codes, by_key)
    kinds, positions = [], []
    for key, (index, members, pos, slots) in by_key.items():
        kind = _make_kind(key, np.concatenate(members), np.concatenate(slots))
        kind_of[kind.members] = index  # members increase: groups come level by level
        kinds.append(kind)
        positions.append(np.concatenate(pos))
    _label(kinds)
    pos_of = np.empty(st.n_nodes, dtype=np.int64)
    for kind in kinds:
        pos_of[kind.members] = np.arange(kind.count)
    return _layout_x(kinds, kind_of, pos_of), positions


class _LeafCodes:
    """Every leaf's ``(shape, dtype)`` key as a small integer (``keys[code]``), computed per
    leaf type in one pass (only array leaves are looked at one by one); `_BAD_CODE` for a
    leaf that is no array or number. One spare entry past the end keeps gathers in range."""

    def __init__(self, leaves: list):
        self.leaves, self.keys, self.index, keys = leaves, [], {}, _Keys()
        types = list(map(type, leaves))
        by_type = {t: self.intern(keys.py[t]) for t in dict.fromkeys(types) if t in keys.py}
        codes = np.fromiter(map(by_type.get, types, [_BAD_CODE] * len(types)), np.int64, len(types))
        for i in np.flatnonzero(codes == _BAD_CODE).tolist():
            key = keys.leaf(leaves[i], None) if isinstance(leaves[i], _ARRAYS) else None
            if key is not None:
                codes[i] = self.intern(key)
        self.codes = np.append(codes, _BAD_CODE)

    def intern(self, key) -> int:
        code = self.index.get(key)
        if code is None:
            code = self.index[key] = len(self.keys)
            self.keys.append(key)
        return code


@dataclasses.dataclass
class _Column:
    """One field of a group: per member the code of its field key (``fkeys[code]``), the
    position of its first data leaf, and its items' node ids (-1: data or padding)."""

    codes: np.ndarray
    starts: np.ndarray
    refs: np.ndarray
    bad: tuple | None  # (member, leaf position) of the first leaf that is no data


def _sort_group(g, codes: _LeafCodes, by_key: dict) -> None:
    """Add the members of group ``g`` to the kinds in ``by_key`` (made on first use)."""
    fkeys: dict = {}
    columns = [_column(f, codes, fkeys) for f in g.fields]
    _raise_first_bad(g, columns, codes)
    table = list(fkeys)
    rows = np.column_stack([_static_codes(g.statics)] + [c.codes for c in columns])
    distinct, first, inverse = _distinct_rows(rows)
    sizes = np.bincount(inverse, minlength=len(distinct))
    ends = np.cumsum(sizes)
    order = np.argsort(inverse, kind="stable") if len(distinct) > 1 else np.arange(len(inverse))
    nodes = np.asarray(g.nodes, dtype=np.int64)
    for u in np.argsort(first).tolist():
        sel = order[ends[u] - sizes[u]:ends[u]]  # increasing: the sort is stable
        fk = tuple(table[c] for c in distinct[u, 1:].tolist())
        key = (g.cls, g.statics[first[u]], fk)
        entry = by_key.get(key)
        if entry is None:
            entry = by_key[key] = (len(by_key), [], [], [])
        entry[1].append(nodes[sel])
        pos, slots = [], []
        for c, k in zip(columns, fk):
            n_data, ref_items = _items(k)
            pos.append(c.starts[sel, None] + np.arange(n_data, dtype=np.int64))
            slots.append(c.refs[sel][:, ref_items])
        entry[2].append(np.concatenate(pos, axis=1) if pos else np.zeros((len(sel), 0), np.int64))
        entry[3].append(np.concatenate(slots, axis=1) if slots else np.zeros((len(sel), 0), np.int64))


def _distinct_rows(rows: np.ndarray) -> tuple:
    """``(distinct rows, first member of each, row of each member)`` of a small-int matrix
    (``np.unique(axis=0)`` with fast paths: one row, or one column, is the common case)."""
    if (rows == rows[:1]).all():
        return rows[:1], np.zeros(1, np.int64), np.zeros(len(rows), np.int64)
    if rows.shape[1] > 1:  # number the rows by mixed radix, then one 1-D unique
        radix = [np.unique(col, return_inverse=True)[1].reshape(-1) for col in rows.T]
        sizes = [int(r.max()) + 1 for r in radix]
        if np.prod(sizes, dtype=np.float64) < 2.0 ** 62:
            flat = np.ravel_multi_index(radix, sizes)
            _, first, inverse = np.unique(flat, return_index=True, return_inverse=True)
            return rows[first], first, inverse.reshape(-1)
        _, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
        return rows[first], first, inverse.reshape(-1)
    _, first, inverse = np.unique(rows[:, 0], return_index=True, return_inverse=True)
    return rows[first], first, inverse.reshape(-1)


def _static_codes(rows: tuple) -> np.ndarray:
    """A code per member for its row of static values (equal rows, equal codes)."""
    if rows.count(rows[0]) == len(rows):
        return np.zeros(len(rows), np.int64)
    index = dict.fromkeys(rows)
    for i, row in enumerate(index):
        index[row] = i
    return np.fromiter(map(index.__getitem__, rows), np.int64, len(rows))


def _column(f, codes: _LeafCodes, fkeys: dict) -> _Column:
    """The `_Column` of field ``f`` (an `sg.FieldStructure`); field keys interned in ``fkeys``."""
    count = len(f.shapes)
    starts = np.fromiter(map(_START, f.leaves), np.int64, count)
    out = _Column(np.empty(count, np.int64), starts, None, None)
    parts = _by_shape(f.shapes)
    width = max(shape.num_leaves for shape, _ in parts)
    out.refs = np.full((count, width), -1, np.int64)
    for shape, sel in parts:
        refs = _refs_array(f.refs if sel is None else [f.refs[i] for i in sel.tolist()], shape.num_leaves)
        items = _item_codes(refs, starts if sel is None else starts[sel], codes)
        _code_rows(shape, items, sel, out, codes, fkeys)
        out.refs[slice(None) if sel is None else sel, :refs.shape[1]] = refs
    return out


def _refs_array(refs, width: int) -> np.ndarray:
    """Rows of equal length ``width`` as an int array (read in one C pass)."""
    return np.fromiter(itertools.chain.from_iterable(refs), np.int64, len(refs) * width).reshape(len(refs), width)


def _by_shape(shapes: tuple) -> list:
    """``[(shape, member indices)]``; indices None when every member has the one shape."""
    if shapes.count(shapes[0]) == len(shapes):
        return [(shapes[0], None)]
    index = dict.fromkeys(shapes)
    for i, shape in enumerate(index):
        index[shape] = i
    ids = np.fromiter(map(index.__getitem__, shapes), np.int64, len(shapes))
    return [(shape, np.flatnonzero(ids == i)) for i, shape in enumerate(index)]


def _item_codes(refs: np.ndarray, starts: np.ndarray, codes: _LeafCodes) -> np.ndarray:
    """Per member and item: `_REF_CODE` for a reference, else its data leaf's code."""
    data = refs < 0
    offset = np.cumsum(data, axis=1) - 1  # the item's index among the member's data leaves
    leaf = np.minimum(starts[:, None] + np.maximum(offset, 0), len(codes.codes) - 1)
    return np.where(data, codes.codes[leaf], _REF_CODE)


def _code_rows(shape, items: np.ndarray, sel, out: _Column, codes: _LeafCodes, fkeys: dict) -> None:
    """Set ``out.codes`` of the members ``sel`` (all when None) of one field shape."""
    distinct, _, inverse = _distinct_rows(items)
    local = np.empty(len(distinct), np.int64)
    for u, row in enumerate(distinct.tolist()):
        if _BAD_CODE in row:
            local[u] = -1
            _note_bad(out, items, row, u, inverse, sel)
        else:
            local[u] = fkeys.setdefault(_field_key(shape, row, codes.keys), len(fkeys))
    out.codes[slice(None) if sel is None else sel] = local[inverse]


def _field_key(shape, row: list, keys: list):
    """A field's kind key: `_REF`, `_NONE`, a leaf key, or ``(shape, item keys)``."""
    if shape == _LEAF:
        return _REF if row[0] == _REF_CODE else keys[row[0]]
    if shape == _NONE_DEF:
        return _NONE
    if row.count(_REF_CODE) == len(row):  # e.g. a list of nodes
        return (shape, (_REF,) * len(row))
    return (shape, tuple(_REF if c == _REF_CODE else keys[c] for c in row))


def _note_bad(out: _Column, items, row: list, u: int, inverse, sel) -> None:
    """Remember the first member (and its first bad leaf) holding a leaf that is no data."""
    member = int(np.flatnonzero(inverse == u)[0])
    member = member if sel is None else int(sel[member])
    data_index = sum(1 for c in row[:row.index(_BAD_CODE)] if c != _REF_CODE)
    if out.bad is None or member < out.bad[0]:
        out.bad = (member, int(out.starts[member]) + data_index)


def _raise_first_bad(g, columns: list, codes: _LeafCodes) -> None:
    """Raise the error a node-by-node pass meets first (first member, then first field)."""
    bad = [(c.bad[0], j, c.bad[1]) for j, c in enumerate(columns) if c.bad is not None]
    if bad:
        _, j, leaf = min(bad)
        _Keys().leaf(codes.leaves[leaf], (g.cls, g.fields[j].name))  # raises sg.GraphTypeError
        raise AssertionError("unreachable")  # pragma: no cover


def _items(fkey) -> tuple[int, list]:
    """``(number of data leaves, indices of the reference items)`` of a field key."""
    if fkey == _REF:
        return 0, [0]
    if fkey == _NONE:
        return 0, []
    if isinstance(fkey[0], tuple):  # a bare leaf: (shape, dtype)
        return 1, []
    refs = [j for j, k in enumerate(fkey[1]) if k == _REF]
    return len(fkey[1]) - len(refs), refs


def _make_kind(key, members: np.ndarray, slots: np.ndarray) -> Kind:
    cls, statics, fkeys = key
    dynamic, _, unknowns = field_names(cls)
    fields, columns, n_slots = [], [], 0
    for name, fkey in zip(dynamic, fkeys):
        unknown = name in unknowns
        if fkey == _REF:
            fields.append(FieldLayout(name, None, (("ref", n_slots),)))
            n_slots += 1
        elif fkey == _NONE:
            fields.append(FieldLayout(name, None, (_NONE,)))
        elif isinstance(fkey[0], tuple):  # a bare leaf: (shape, dtype)
            fields.append(FieldLayout(name, None, (("col", len(columns)),)))
            columns.append(Column(name, (), fkey[0], fkey[1], unknown))
        else:
            treedef, leaf_keys = fkey
            if leaf_keys.count(_REF) == len(leaf_keys):  # e.g. a list of nodes
                items = tuple(zip(itertools.repeat("ref"), range(n_slots, n_slots + len(leaf_keys))))
                n_slots += len(leaf_keys)
            else:
                items, n_slots = _container_items(name, unknown, treedef, leaf_keys, columns, n_slots)
            fields.append(FieldLayout(name, treedef, items))
    return Kind(key, cls, statics, tuple(fields), tuple(columns), members, slots.reshape(len(members), n_slots))


def _container_items(name: str, unknown: bool, treedef, leaf_keys: tuple, columns: list, n_slots: int):
    """A container field's items; its data leaves appended to ``columns``."""
    items = []
    for sub, lk in zip(subpaths(treedef), leaf_keys):
        if lk == _REF:
            items.append(("ref", n_slots))
            n_slots += 1
        else:
            items.append(("col", len(columns)))
            columns.append(Column(name, sub, lk[0], lk[1], unknown))
    return tuple(items), n_slots
