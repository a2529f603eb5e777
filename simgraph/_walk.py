"""The refs table: flatten a whole reachable object graph from its root, and rebuild it.

Flattening numbers every distinct node in breadth-first, field-declaration order (root = 0).
Aux data is a tuple with one entry per node, ``(class, static values, field specs)``, where a
field spec is ``CHILD`` (the value is a pytree child), ``CHILD_REFS`` (a child container
holding ``NodeRef`` placeholders), an int ``k >= 0`` (a reference to node k), or
``(treedef, ids)`` (a container holding only references). Ids are local to one flatten, so
graphs of the same shape give equal aux data; nothing is stored between flattens.
"""

from __future__ import annotations

import collections
from typing import Any

import jax
import numpy as np

from . import _codegen, _fields
from ._errors import GraphError, GraphTypeError, at
from ._keys import NodePathKey, NodeRef

CHILD = -1
CHILD_REFS = -2

_LEAF_TYPES = frozenset(
    {float, int, bool, complex, type(None), np.ndarray, np.float64, np.float32, np.int64,
     np.int32, np.bool_, np.complex128, type(jax.numpy.zeros(()))}
)


def _node_base():
    from ._node import ReffableTreeNode

    return ReffableTreeNode


def walk(root: Any) -> tuple[list, tuple, list]:
    """Return ``(children, entries, nodes)`` for the graph reachable from ``root``."""
    index = {id(root): 0}
    nodes = [root]
    children: list = []
    entries: list = []
    for node in nodes:  # grows while we iterate: breadth-first
        cls = type(node)
        walker = cls.__dict__["__sg_walker__"] or _make_walker(cls)
        walker(node, root, index, nodes, children, entries)
    return children, tuple(entries), nodes


def _make_walker(cls: type):
    base = _node_base()
    refkinds = refkinds_of(cls)
    env = dict(
        LEAF=_LEAF_TYPES, ARRAY=jax.Array, BASE=base, container=_flatten_container,
        missing_field=_missing_field, not_a_node=_not_a_node, check_hashable=_check_hashable,
    )
    cls.__sg_walker__ = walker = _codegen.make_walker(cls, refkinds, env)
    return walker


def refkinds_of(cls: type) -> tuple[int, ...]:
    """Which fields must hold nodes, from the annotations (resolved once per class)."""
    kinds = cls.__dict__["__sg_refkinds__"]
    if kinds is None:
        kinds = cls.__sg_refkinds__ = _fields.reference_kinds(cls, _node_base())
    return kinds


def _flatten_container(value, index, nodes, children, base):
    if type(value) is list or type(value) is tuple:
        spec = _node_sequence(value, index, nodes, base)
        if spec is not None:
            return spec
    leaves, treedef = jax.tree_util.tree_flatten(value, is_leaf=lambda x: isinstance(x, base))
    if not any(isinstance(leaf, base) for leaf in leaves):
        children.append(value)
        return CHILD
    ids = []
    for leaf in leaves:
        if isinstance(leaf, base):
            k = index.get(id(leaf))
            if k is None:
                k = index[id(leaf)] = len(nodes)
                nodes.append(leaf)
            ids.append(k)
        else:
            ids.append(None)
    if all(k is not None for k in ids):
        return (treedef, tuple(ids))
    marked = [NodeRef(k) if k is not None else leaf for k, leaf in zip(ids, leaves)]
    children.append(jax.tree_util.tree_unflatten(treedef, marked))
    return CHILD_REFS


def _node_sequence(seq, index, nodes, base):
    """Fast path for a plain list/tuple of nodes (e.g. ``equations: list``): spec ``(type, ids)``."""
    ids = []
    append = ids.append
    for x in seq:
        if not isinstance(x, base):
            return None
        k = index.get(id(x))
        if k is None:
            k = index[id(x)] = len(nodes)
            nodes.append(x)
        append(k)
    return (type(seq), tuple(ids))


def unflatten(entries: tuple, children) -> Any:
    """Rebuild a graph: one new object per id, references wired to the new objects."""
    nodes = [object.__new__(entry[0]) for entry in entries]
    it = iter(children)
    for node, (cls, statics, specs) in zip(nodes, entries):
        layout = cls.__sg_layout__
        d = node.__dict__
        for name, spec in zip(layout.dynamic, specs):
            if type(spec) is int:
                if spec >= 0:
                    d[name] = nodes[spec]
                elif spec == CHILD:
                    d[name] = next(it)
                else:
                    d[name] = _swap_refs(next(it), nodes)
            else:
                d[name] = _rebuild_container(spec, nodes)
        for name, value in zip(layout.static, statics):
            d[name] = value
    return nodes[0]


def _rebuild_container(spec, nodes):
    kind, ids = spec
    if kind is list:
        return [nodes[k] for k in ids]
    if kind is tuple:
        return tuple([nodes[k] for k in ids])
    return jax.tree_util.tree_unflatten(kind, [nodes[k] for k in ids])


def _swap_refs(container, nodes):
    is_ref = lambda x: isinstance(x, NodeRef)  # noqa: E731
    return jax.tree_util.tree_map(lambda x: nodes[x.index] if is_ref(x) else x, container, is_leaf=is_ref)


def child_owners(entries: tuple) -> list[tuple[int, str, int]]:
    """For each child in flatten order: ``(node index, field name, spec)``."""
    owners = []
    for k, (cls, _, specs) in enumerate(entries):
        for name, spec in zip(cls.__sg_layout__.dynamic, specs):
            if spec == CHILD or spec == CHILD_REFS:
                owners.append((k, name, spec))
    return owners


def node_paths(entries: tuple, children: list) -> list[tuple]:
    """The breadth-first (shortest, first-visit) key path of every node."""
    paths: list = [None] * len(entries)
    paths[0] = ()
    child_iter = iter(children)
    for k, (cls, _, specs) in enumerate(entries):
        for name, spec in zip(cls.__sg_layout__.dynamic, specs):
            base = paths[k] + (jax.tree_util.GetAttrKey(name),)
            if spec == CHILD:
                next(child_iter)
            elif type(spec) is int and spec >= 0:
                if paths[spec] is None:
                    paths[spec] = base
            else:
                if spec == CHILD_REFS:
                    sub = jax.tree_util.tree_flatten_with_path(
                        next(child_iter), is_leaf=lambda x: isinstance(x, NodeRef))[0]
                    pairs = [(p, x.index) for p, x in sub if isinstance(x, NodeRef)]
                else:
                    dummy = _rebuild_container(spec, [NodeRef(i) for i in range(len(entries))])
                    sub = jax.tree_util.tree_flatten_with_path(
                        dummy, is_leaf=lambda x: isinstance(x, NodeRef))[0]
                    pairs = [(p, x.index) for p, x in sub]
                for p, target in pairs:
                    if paths[target] is None:
                        paths[target] = base + tuple(p)
    return paths


def flatten_with_keys(root: Any):
    """Flatten for ``jax.tree_util.tree_flatten_with_path``: each child keyed by its full path."""
    children, entries, _ = walk(root)
    paths = node_paths(entries, children)
    keyed = []
    for child, (k, name, _) in zip(children, child_owners(entries)):
        key = NodePathKey(paths[k] + (jax.tree_util.GetAttrKey(name),), k, name)
        keyed.append((key, child))
    return keyed, entries


def flatten(root: Any):
    children, entries, _ = walk(root)
    return children, entries


def path_of(root: Any, target: Any) -> str:
    """The key path of ``target`` in the graph of ``root`` (for error messages only)."""
    base = _node_base()
    queue = collections.deque([(root, ())])
    seen = {id(root)}
    while queue:
        node, path = queue.popleft()
        if node is target:
            return jax.tree_util.keystr(path)
        for name in type(node).__sg_layout__.dynamic:
            value = node.__dict__.get(name)
            subs = jax.tree_util.tree_flatten_with_path(value, is_leaf=lambda x: isinstance(x, base))[0]
            for p, leaf in subs:
                if isinstance(leaf, base) and id(leaf) not in seen:
                    seen.add(id(leaf))
                    queue.append((leaf, path + (jax.tree_util.GetAttrKey(name),) + tuple(p)))
    return "<unreachable>"


def _missing_field(root, node, name) -> GraphError:
    path = at(path_of(root, node))
    return GraphError(
        f"{path}: {type(node).__name__} has no value for field {name!r}. Set it (fields are "
        "declared by annotation and must all hold a value before the graph is used)."
    )


def _not_a_node(root, node, name, value) -> GraphTypeError:
    path = at(path_of(root, node) + f".{name}")
    want = type(node).__dataclass_fields__[name].type
    want = getattr(want, "__name__", want)
    return GraphTypeError(
        f"{path}: reference field {name!r} of {type(node).__name__} must hold a node "
        f"({want}), got {type(value).__name__}. Pass a node object, or change the "
        "annotation if this field holds data."
    )


def _check_hashable(root, node, names, statics) -> None:
    try:
        hash(statics)
    except TypeError:
        for name, value in zip(names, statics):
            try:
                hash(value)
            except TypeError:
                path = at(path_of(root, node) + f".{name}")
                raise GraphTypeError(
                    f"{path}: static field {name!r} holds an unhashable "
                    f"{type(value).__name__}. Static values are part of the structure and must "
                    "be hashable: use a tuple or frozenset, or declare the field as state."
                ) from None
        raise
