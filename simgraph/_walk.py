"""The refs table: flatten a whole reachable object graph from its root, column by column.

Nodes are numbered breadth-first by levels (root = 0). Within a level, nodes are grouped by
class in order of first appearance; a group is read field by field (declaration order), member
by member, and a node first seen there gets the next id. Children are emitted in that same
order. Reading a group as columns (one ``itemgetter`` over all members, one type check per
column, one id lookup per column) keeps the per-node Python cost small: this walk runs on
every call of a jitted function, so it is the dispatch overhead users pay. Where the C
accelerator is built, the whole walk runs in C (``_fastwalk.traverse``,
``simgraph/_fasttraverse.c``), calling back into this module only for rare values (see
``_HELPERS``), and any error is raised by running the Python walk, ``_traverse``, which is the
reference: both give identical results (tests/test_graph_fastwalk.py).

Aux data is a tuple of groups ``(class, member ids, static columns, column specs)``. A column
spec is ``CHILD`` (every member's value is a pytree child), node ids (every member's value is
a node), or ``("mixed", specs)`` with one spec per member: ``CHILD``, ``CHILD_REFS`` (a child
container holding ``NodeRef`` placeholders), a node id, or ``(container type or treedef, ids)``
(a container holding only references). Ids are local to one flatten, so graphs of the same
shape give equal aux data; nothing is kept between flattens. Every sequence of ids has the
canonical form of :func:`id_sequence`: consecutive runs are ``range`` objects, which JAX hashes
and compares in O(1) on every jit call (a tuple of 10^4 ints costs a pass each time).

The walk's index maps each node object to its id. Nodes hash by identity (``_node`` forbids
``__eq__``/``__hash__`` overrides), so no ``id()`` integer is made per lookup.
"""

from __future__ import annotations

import functools
import itertools
import operator
from typing import Any

import jax
import numpy as np

from . import _fields, _outside
from ._errors import GraphTypeError, at
from ._walk_errors import check_hashable, missing_field, not_a_node, path_of
from ._keys import NodeRef

try:  # optional C accelerator of the column reads below (same results)
    from . import _fastwalk
except ImportError:  # pragma: no cover - depends on the build
    _fastwalk = None

CHILD = -1
CHILD_REFS = -2
MIXED = "mixed"

_LEAF_TYPES = frozenset(
    {float, int, bool, complex, type(None), np.ndarray, np.float64, np.float32, np.int64,
     np.int32, np.bool_, np.complex128}
)  # jax arrays are matched by `_ARRAY_TYPES` (naming their concrete type would start a backend)
_ARRAY_TYPES = (jax.Array, jax.core.Tracer)
_get_dict = operator.attrgetter("__dict__")


def _node_base():
    global _BASE
    if _BASE is None:
        from ._node import ReffableTreeNode

        _BASE = ReffableTreeNode
    return _BASE


_BASE = None  # the node base class, imported lazily (``_node`` imports this module)


def traverse(root: Any) -> tuple[list, tuple, list]:
    """Return ``(children, aux, nodes)`` for the graph reachable from ``root``."""
    if _fastwalk is not None:  # the whole walk in C (simgraph/_fasttraverse.c), same results
        try:
            return _fastwalk.traverse(root, _node_base(), _LEAF_TYPES, _ARRAY_TYPES, _HELPERS)
        except Exception:  # noqa: BLE001 - any error: the Python walk raises it, with its path
            pass
    return _traverse(root)


def _traverse(root: Any) -> tuple[list, tuple, list]:
    """The walk in Python (column reads in C where built): the reference of ``traverse``."""
    base = _node_base()
    index = {root: 0}
    nodes = [root]
    children: list = []
    groups: list = []
    ctx = (root, index, nodes, children, base)
    lo = 0
    while lo < len(nodes):
        hi = len(nodes)
        if hi - lo == 1:  # chains and the root: skip the column machinery
            groups.append(_single(nodes[lo], lo, ctx))
        else:
            for cls, members, objs in _by_class(nodes, lo, hi):
                groups.append(_group(cls, members, objs, ctx))
        lo = hi
    return children, tuple(groups), nodes


def flatten(root: Any):
    children, aux, _ = traverse(root)
    return children, aux


def _by_class(nodes: list, lo: int, hi: int) -> list:
    level = nodes[lo:hi]
    types = list(map(type, level))
    if types.count(types[0]) == len(types):
        return [(types[0], id_sequence(range(lo, hi)), level)]
    by: dict = {}
    start = 0
    for t, run in itertools.groupby(types):  # classes mostly come in runs (dicts of one class)
        stop = start + len(list(run))
        members = by.setdefault(t, ([], []))
        members[0].extend(range(lo + start, lo + stop))
        members[1].extend(level[start:stop])
        start = stop
    return [(t, id_sequence(ks), objs) for t, (ks, objs) in by.items()]


def id_sequence(ids) -> tuple | range:
    """The canonical form of a sequence of node ids in aux data: ``range(a, a + n)`` when
    n >= 2 ids run consecutively upwards, else a tuple (``_fastwalk.c`` follows the same rule)."""
    if type(ids) is range and ids.step == 1:
        return ids if len(ids) >= 2 else tuple(ids)
    ids = tuple(ids)
    n = len(ids)
    if n >= 2 and ids[-1] - ids[0] == n - 1 and ids == tuple(range(ids[0], ids[0] + n)):
        return range(ids[0], ids[0] + n)
    return ids


def _group(cls: type, members: tuple, objs: list, ctx: tuple) -> tuple:
    plan = cls.__dict__["__sg_plan__"] or _make_plan(cls)
    names, refkinds, any_kinds, dynamic_getters, static_getters, _ = plan
    try:
        if _fastwalk:  # uniform columns are emitted in C; the rest come back as value lists
            results = _fastwalk.read_group(objs, names, any_kinds, _LEAF_TYPES, _ARRAY_TYPES,
                                           ctx[4], ctx[1], ctx[2], ctx[3])
            dicts = list(map(_get_dict, objs)) if static_getters else ()
        else:
            dicts = list(map(_get_dict, objs))
            columns = [tuple(map(getter, dicts)) for getter in dynamic_getters]
        statics = tuple([tuple(map(getter, dicts)) for getter in static_getters])
    except KeyError as e:
        raise missing_field(ctx[0], objs, e.args[0]) from None
    if _fastwalk:
        specs = [r if type(r) is not list else _fast_column(n, kind, r, objs, ctx)
                 for n, kind, r in zip(names, refkinds, results)]
    else:
        specs = [_column(n, kind, col, objs, ctx) for n, kind, col in zip(names, refkinds, columns)]
    if statics:
        try:
            hash(statics)
        except TypeError:
            check_hashable(ctx[0], cls, objs, statics)
    return (cls, members, statics, tuple(specs))


def _fast_column(name: str, kind: int, values: list, objs: list, ctx: tuple):
    """``_column`` with the uniform cases done in C (``simgraph/_fastwalk.c``)."""
    spec = _fastwalk.classify(values, kind == _fields.REF_ANY, _LEAF_TYPES, _ARRAY_TYPES,
                              ctx[4], ctx[1], ctx[2], ctx[3])
    return _mixed(name, kind, values, objs, ctx) if spec is None else spec


def _single(node: Any, k: int, ctx: tuple) -> tuple:
    """A group of one node, in the same form ``_group`` gives (fewer steps per node)."""
    cls = type(node)
    names, refkinds, _, _, static_getters, _ = cls.__dict__["__sg_plan__"] or _make_plan(cls)
    d = node.__dict__
    try:
        values = [d[name] for name in names]
        statics = tuple([(getter(d),) for getter in static_getters])
    except KeyError as e:
        raise missing_field(ctx[0], [node], e.args[0]) from None
    if statics:
        try:
            hash(statics)
        except TypeError:
            check_hashable(ctx[0], cls, [node], statics)
    specs = []
    for name, kind, value in zip(names, refkinds, values):
        if isinstance(value, ctx[4]):
            specs.append((_reference_id(value, ctx[1], ctx[2]),))
        else:
            spec = _element(value, name, kind, node, ctx)
            specs.append(spec if spec == CHILD else (MIXED, (spec,)))
    return (cls, (k,), statics, tuple(specs))


def _make_plan(cls: type) -> tuple:
    """Field names, reference kinds (and which may hold anything), column getters and static
    field names of a class (computed once per class)."""
    layout = cls.__sg_layout__
    getters = lambda names: tuple(map(operator.itemgetter, names))  # noqa: E731
    kinds = refkinds_of(cls)
    any_kinds = tuple(kind == _fields.REF_ANY for kind in kinds)
    plan = (layout.dynamic, kinds, any_kinds, getters(layout.dynamic), getters(layout.static),
            layout.static)
    cls.__sg_plan__ = plan
    return plan


def refkinds_of(cls: type) -> tuple[int, ...]:
    """Which fields must hold nodes, from the annotations (resolved once per class)."""
    kinds = cls.__dict__["__sg_refkinds__"]
    if kinds is None:
        kinds = cls.__sg_refkinds__ = _fields.reference_kinds(cls, _node_base())
    return kinds


def _column(name: str, kind: int, column: tuple, objs: list, ctx: tuple):
    types = set(map(type, column))
    if kind == _fields.REF_ANY and (types <= _LEAF_TYPES or all(map(_is_leaf_type, types))):
        ctx[3].extend(column)
        return CHILD
    if _all_nodes(types, ctx[4]):
        return _reference_ids(column, ctx[1], ctx[2])
    return _mixed(name, kind, column, objs, ctx)


def _mixed(name: str, kind: int, column, objs: list, ctx: tuple):
    specs = tuple([_element(v, name, kind, obj, ctx) for v, obj in zip(column, objs)])
    # Canonical form: what a column holds decides its spec, not how its values were found.
    return CHILD if specs.count(CHILD) == len(specs) else (MIXED, specs)


def _all_nodes(types: set, base: type) -> bool:
    if len(types) == 1:
        return issubclass(next(iter(types)), base)
    return all(issubclass(t, base) for t in types)


def _is_leaf_type(t: type) -> bool:
    return t in _LEAF_TYPES or issubclass(t, _ARRAY_TYPES)


def _reference_ids(column: tuple, index: dict, nodes: list) -> tuple:
    """Ids of a column of nodes; nodes not seen yet get new ids in first-appearance order."""
    ids = list(map(index.get, column))
    if None not in ids:
        return id_sequence(ids)
    start = len(nodes)
    if ids.count(None) == len(ids) and len(dict.fromkeys(column)) == len(column):
        index.update(zip(column, range(start, start + len(column))))  # all new and distinct
        nodes.extend(column)
        return id_sequence(range(start, start + len(column)))
    new = list(itertools.filterfalse(index.__contains__, dict.fromkeys(column)))
    index.update(zip(new, range(start, start + len(new))))  # first-appearance order
    nodes.extend(new)
    return id_sequence(map(index.__getitem__, column))


def _reference_id(value: Any, index: dict, nodes: list) -> int:
    k = index.get(value)
    if k is None:
        k = index[value] = len(nodes)
        nodes.append(value)
    return k


def _element(value: Any, name: str, kind: int, obj: Any, ctx: tuple):
    """The spec of one member's value in a column that is not uniform."""
    root, index, nodes, children, base = ctx
    if isinstance(value, base):
        return _reference_id(value, index, nodes)
    if kind == _fields.REF_REQUIRED or (kind == _fields.REF_OPTIONAL and value is not None):
        raise not_a_node(root, obj, name, value)
    if value is None or _is_leaf_type(type(value)):
        children.append(value)
        return CHILD
    try:
        return _container(value, index, nodes, children, base)
    except _Refused as e:
        raise GraphTypeError(f"{at(path_of(root, obj) + '.' + name)}: {e.args[0]}") from None


def _container(value, index, nodes, children, base):
    if type(value) is list or type(value) is tuple:
        spec = _node_sequence(value, index, nodes, base)
        if spec is not None:
            return spec
    elif type(value) is dict:
        if not value:  # no leaves, so a child (what flattening it would find)
            children.append(value)
            return CHILD
        spec = _node_dict(value, index, nodes, base)
        if spec is not None:
            return spec
    leaves, treedef = _flatten_container(value, base)
    types = set(map(type, leaves))
    hiding = _outside.hiding(leaves, types, base,  # beside the nodes JAX sees, too
                             getattr(_fastwalk, "any_object_array", None))  # None: in Python
    if hiding is not None:
        raise _Refused(_outside.hidden_message(hiding))
    if not any(issubclass(t, base) for t in types):
        children.append(value)
        return CHILD
    ids = [_reference_id(leaf, index, nodes) if isinstance(leaf, base) else None for leaf in leaves]
    if all(k is not None for k in ids):
        return (treedef, id_sequence(ids))
    marked = [NodeRef(k) if k is not None else leaf for k, leaf in zip(ids, leaves)]
    children.append(jax.tree_util.tree_unflatten(treedef, marked))
    return CHILD_REFS


def _node_sequence(seq, index, nodes, base):
    """Fast path for a plain list/tuple of nodes (e.g. ``equations: list``): ``(type, ids)``."""
    if _fastwalk is not None:
        return None if (ids := _fastwalk.ref_ids(seq, base, index, nodes)) is None else (type(seq), ids)
    if not all(issubclass(t, base) for t in set(map(type, seq))):
        return None
    return (type(seq), _reference_ids(tuple(seq), index, nodes))


def _node_dict(d: dict, index, nodes, base):
    """Fast path for a dict of nodes (e.g. ``nodes: dict[str, Node]``): ``(treedef, ids)``.
    JAX orders a dict's leaves by sorted keys. With keys all str or all int (the usual cases)
    that is Python's own sort, and the dict's treedef depends only on the keys, so it is made
    once per set of keys (`_str_dict_treedef`); other keys are ordered by flattening the
    positions."""
    if _fastwalk is not None:
        found = _fastwalk.str_dict_ids(d, base, index, nodes)  # None: other keys
        if found is not None:
            return None if found is False else (_str_dict_treedef(found[0]), found[1])
        str_keys = False
    else:
        str_keys = (key_types := set(map(type, d))) == {str} or key_types == {int}
    if str_keys:
        keys = sorted(d)
        treedef = _str_dict_treedef(tuple(keys))
        ordered = list(map(d.__getitem__, keys))
    else:
        if any(_outside.holds_node(k, base) for k in d):
            raise _Refused(_outside.NODE_KEYS)
        order, treedef = _flatten_container(dict(zip(d, range(len(d)))), base)
        if treedef.num_leaves != len(d):
            return None
        values = list(d.values())
        ordered = list(map(values.__getitem__, order))
    spec = _node_sequence(ordered, index, nodes, base)
    return None if spec is None else (treedef, spec[1])


def _flatten_container(value, base):
    """``tree_flatten`` of a field's container (nodes are leaves); `_Refused` for a
    dict whose keys cannot be ordered (JAX sorts them: ``{"a": .., 0: ..}``)."""
    try:
        return jax.tree_util.tree_flatten(value, is_leaf=lambda x: isinstance(x, base))
    except ValueError:
        if not _has_unsortable_dict(value):
            raise
        raise _Refused("a dict has keys that cannot be sorted against each other (JAX "
                       "orders a dict's entries by sorted key): use keys of one type, e.g. "
                       "all str.") from None


def _has_unsortable_dict(value) -> bool:
    if type(value) in (list, tuple):
        return any(map(_has_unsortable_dict, value))
    if isinstance(value, dict):
        try:
            sorted(value)
        except TypeError:
            return True
        return any(map(_has_unsortable_dict, value.values()))
    return False


class _Refused(Exception):
    """A field's container cannot be part of a graph: what is wrong (`_element` says where)."""


@functools.lru_cache(maxsize=1024)
def _str_dict_treedef(keys: tuple):
    """The treedef of a dict with these (sorted; all str or all int) keys, each value one leaf.
    A pure function of the keys: caching it keeps nothing of any graph."""
    return jax.tree_util.tree_structure(dict.fromkeys(keys, 0))


# What the C walk (``_fastwalk.traverse``) calls back for the cases it leaves to Python.
_HELPERS = (_element, _make_plan, _str_dict_treedef, MIXED, _fields.REF_REQUIRED,
            _fields.REF_OPTIONAL)
