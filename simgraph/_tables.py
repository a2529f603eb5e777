"""Reading the refs table back: rebuild a graph, per-node entries, key paths of nodes.

``_walk`` produces the table column by column (the fast form JAX sees as aux data). This
module rebuilds graphs from it and expands it into one entry per node, ``(class, static
values, field specs)``, with the children in node-major order, which is the convenient form
for the helpers that compare, update, save or lower graphs.
"""

from __future__ import annotations

import collections
import contextlib
import gc
from typing import Any

import jax

from ._keys import NodePathKey, NodeRef
from . import _walk
from ._walk import CHILD, CHILD_REFS, _node_base, traverse


def unflatten(aux: tuple, children) -> Any:
    """Rebuild a graph: one new object per id, references wired to the new objects."""
    count = sum(len(g[1]) for g in aux)
    if count < _GC_PAUSE_NODES:
        return _rebuild(aux, children, count)
    with _gc_paused():
        return _rebuild(aux, children, count)


#: From this many nodes a rebuild runs with the cyclic garbage collector paused: its new
#: objects (none of them garbage yet) triggered a collection every 700 allocations, and the
#: older generations' collections walk JAX's whole heap: most of a 2000-node ladder's
#: rebuild. The allocations counted meanwhile trigger one young collection afterwards.
_GC_PAUSE_NODES = 256


@contextlib.contextmanager
def _gc_paused():
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _rebuild(aux: tuple, children, count: int) -> Any:
    if _walk._fastwalk is not None:  # the same, in C
        return _walk._fastwalk.unflatten(aux, children, count, _swap_refs)
    nodes: list = [None] * count
    new = object.__new__
    for cls, members, _, _ in aux:
        for k in members:
            nodes[k] = new(cls)
    children = children if type(children) is list else list(children)
    pos = 0
    for cls, members, statics, specs in aux:
        columns = []
        for spec in specs:
            if type(spec) is int:
                columns.append(children[pos:pos + len(members)])
                pos += len(members)
            elif type(spec[0]) is str:
                column, pos = _mixed_values(spec[1], children, pos, nodes)
                columns.append(column)
            else:
                columns.append(map(nodes.__getitem__, spec))
        columns.extend(statics)
        layout = cls.__sg_layout__
        names = layout.dynamic + layout.static
        for k, row in zip(members, zip(*columns)):
            nodes[k].__dict__.update(zip(names, row))
    return nodes[0]


def _mixed_values(specs: tuple, children: list, pos: int, nodes: list) -> tuple[list, int]:
    values = []
    for spec in specs:
        if type(spec) is int:
            if spec >= 0:
                values.append(nodes[spec])
            elif spec == CHILD:
                values.append(children[pos])
                pos += 1
            else:
                values.append(_swap_refs(children[pos], nodes))
                pos += 1
        else:
            values.append(_rebuild_container(spec, nodes))
    return values, pos


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


def expand(aux: tuple) -> tuple[tuple, list]:
    """Per-node entries ``(class, statics, specs)`` and the owner of each child, in flatten order."""
    entries: list = [None] * sum(len(group[1]) for group in aux)
    owners: list = []
    for cls, members, statics, specs in aux:
        per_member: list = [[] for _ in members]
        for name, spec in zip(cls.__sg_layout__.dynamic, specs):
            if type(spec) is int:
                for specs_of in per_member:
                    specs_of.append(CHILD)
                owners.extend((k, name, CHILD) for k in members)
            elif type(spec[0]) is str:
                for k, specs_of, s in zip(members, per_member, spec[1]):
                    specs_of.append(s)
                    if s == CHILD or s == CHILD_REFS:
                        owners.append((k, name, s))
            else:
                for specs_of, s in zip(per_member, spec):
                    specs_of.append(s)
        rows = list(zip(*statics)) if statics else [()] * len(members)
        for k, specs_of, row in zip(members, per_member, rows):
            entries[k] = (cls, row, tuple(specs_of))
    return tuple(entries), owners


def walk(root: Any) -> tuple[list, tuple, list]:
    """``(children, entries, nodes)``: children in node-major order, one entry per node."""
    children, aux, nodes = traverse(root)
    entries, owners = expand(aux)
    return node_major(children, owners, entries), entries, nodes


def node_major(children: list, owners: list, entries: tuple) -> list:
    position = {(k, name): i for i, (k, name, _) in enumerate(owners)}
    return [children[position[k, name]] for k, name, _ in child_owners(entries)]


def child_owners(entries: tuple) -> list[tuple[int, str, int]]:
    """For each child in node-major order: ``(node index, field name, spec)``."""
    owners = []
    for k, (cls, _, specs) in enumerate(entries):
        for name, spec in zip(cls.__sg_layout__.dynamic, specs):
            if spec == CHILD or spec == CHILD_REFS:
                owners.append((k, name, spec))
    return owners


def node_paths(entries: tuple, children: list) -> list[tuple]:
    """The shortest first-visit key path of every node (``children`` in node-major order)."""
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
                for p, target in _container_refs(spec, child_iter):
                    if paths[target] is None:
                        paths[target] = base + tuple(p)
    return paths


class _Placeholders:
    """``placeholders[k]`` is ``NodeRef(k)``: a container of references is rebuilt around its
    own ids only (a list of every node's placeholder made each path O(nodes): quadratic)."""

    def __getitem__(self, k: int) -> NodeRef:
        return NodeRef(k)


def _container_refs(spec, child_iter) -> list:
    is_ref = lambda x: isinstance(x, NodeRef)  # noqa: E731
    if spec == CHILD_REFS:
        sub = jax.tree_util.tree_flatten_with_path(next(child_iter), is_leaf=is_ref)[0]
        return [(p, x.index) for p, x in sub if is_ref(x)]
    dummy = _rebuild_container(spec, _Placeholders())
    return [(p, x.index) for p, x in jax.tree_util.tree_flatten_with_path(dummy, is_leaf=is_ref)[0]]


def flatten_with_keys(root: Any):
    """Flatten for ``jax.tree_util.tree_flatten_with_path``: each child keyed by its full path."""
    children, aux, _ = traverse(root)
    entries, owners = expand(aux)
    paths = node_paths(entries, node_major(children, owners, entries))
    keyed = [
        (NodePathKey(paths[k] + (jax.tree_util.GetAttrKey(name),), k, name), child)
        for child, (k, name, _) in zip(children, owners)
    ]
    return keyed, aux


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
