"""Stack same-shape graphs into one batched graph, and unstack it; write a copy back in place."""

from __future__ import annotations

from typing import Any, Sequence

import jax
import jax.numpy as jnp

from . import _tables, _walk
from ._compare import leaf_shape_difference, structure_difference
from ._errors import GraphError, GraphTypeError, StructureMismatchError
from ._node import ReffableTreeNode
from ._query import require_node


def stack(graphs: Sequence[Any], axis: int = 0) -> Any:
    """One graph whose every leaf is the stack of the graphs' leaves (for ``vmap``)."""
    if isinstance(graphs, ReffableTreeNode):
        raise GraphTypeError("stack takes a sequence of graphs' root nodes, got one node; "
                             "pass a list: sg.stack([graph_a, graph_b, ...]).")
    graphs = list(graphs)
    if not graphs:
        raise ValueError("stack needs at least one graph")
    for k, graph in enumerate(graphs):
        require_node(graph, f"graphs[{k}] to be the root node of a graph")
    flat = [jax.tree_util.tree_flatten(g) for g in graphs]
    treedef = flat[0][1]
    for k, (_, td) in enumerate(flat[1:], start=1):
        if td != treedef:
            where = structure_difference(graphs[0], graphs[k])
            raise StructureMismatchError(
                f"cannot stack: graphs[{k}] differs from graphs[0] at {where}. Stacked graphs "
                "need the same classes, static values, sharing pattern and field structure."
            )
    shapes = leaf_shape_difference(graphs)
    if shapes:
        raise StructureMismatchError(f"cannot stack: {shapes}. Pad or group graphs by shape.")
    _check_axis(graphs[0], flat[0][0], axis)
    columns = zip(*(leaves for leaves, _ in flat))
    return jax.tree_util.tree_unflatten(treedef, [jnp.stack(col, axis=axis) for col in columns])


def _check_axis(graph: Any, leaves: list, axis: int) -> None:
    """A ``GraphError`` naming the first leaf with too few dimensions for a new ``axis``."""
    ndims = [jnp.ndim(x) + 1 for x in leaves]  # once stacked
    bad = next((i for i, n in enumerate(ndims) if not -n <= axis < n), None)
    if bad is not None:
        path = jax.tree_util.keystr(jax.tree_util.tree_flatten_with_path(graph)[0][bad][0])
        raise GraphError(
            f"cannot stack along axis {axis}: {path} (shape {jnp.shape(leaves[bad])}) has "
            f"{ndims[bad]} dimension(s) once stacked. Give an axis every stacked leaf has "
            "(axis=0 always works).")


def unstack(graph: Any, axis: int = 0) -> list:
    """Split a batched graph along ``axis`` into independent graphs."""
    require_node(graph, "a batched graph's root node")
    leaves, treedef = jax.tree_util.tree_flatten(graph)
    if not leaves:
        raise ValueError("cannot unstack a graph without leaves")
    n = _batch_size(graph, leaves, axis)
    return [
        jax.tree_util.tree_unflatten(treedef, [jnp.take(x, i, axis=axis) for x in leaves])
        for i in range(n)
    ]


def _batch_size(graph: Any, leaves: list, axis: int) -> int:
    """The common size of every leaf along ``axis``, or a ``StructureMismatchError`` naming
    the first leaf without that axis or of another size than the first leaf's."""
    def size(x):
        shape = jnp.shape(x)
        return shape[axis] if -len(shape) <= axis < len(shape) else None

    sizes = [size(x) for x in leaves]
    bad = next((i for i, s in enumerate(sizes) if s is None or s != sizes[0]), None)
    if bad is None:
        return sizes[0]
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(graph)[0]]
    found = (f"has no axis {axis}" if sizes[bad] is None else
             f"has size {sizes[bad]} on axis {axis}, where {paths[0]} has {sizes[0]}")
    raise StructureMismatchError(
        f"cannot unstack: {paths[bad]} (shape {jnp.shape(leaves[bad])}) {found}. unstack "
        "splits a batched graph (from sg.stack, vmap or solve_batch), whose every leaf has "
        "the batch axis; give the axis that holds it.")


def update(live: Any, transformed: Any) -> Any:
    """Write the state of ``transformed`` (e.g. a jit output) into ``live`` in place.

    The user's objects keep their identities; only data fields change. Both graphs must have
    the same structure and leaf shapes (a batched copy, such as ``solve_batch``'s
    ``.system``, cannot go into one graph); nothing is modified if they do not. Returns
    ``live``.
    """
    require_node(live, "the live graph's root node")
    require_node(transformed, "the transformed graph's root node")
    children_live, entries_live, nodes_live = _tables.walk(live)
    children_new, entries_new, nodes_new = _tables.walk(transformed)
    if entries_live != entries_new or any(
        jax.tree_util.tree_structure(a) != jax.tree_util.tree_structure(b)
        for a, b in zip(children_live, children_new)
    ):
        where = structure_difference(live, transformed)
        raise StructureMismatchError(
            f"cannot update: the transformed graph differs at {where}. Update a graph from a "
            "transformed copy of itself."
        )
    _refuse_new_shapes(live, transformed, children_live, children_new)
    new_index = {id(n): k for k, n in enumerate(nodes_new)}
    base = ReffableTreeNode
    writes = []
    for k, name, spec in _tables.child_owners(entries_new):
        value = nodes_new[k].__dict__[name]
        if spec == _walk.CHILD_REFS:
            value = jax.tree_util.tree_map(
                lambda x: nodes_live[new_index[id(x)]] if isinstance(x, base) else x,
                value, is_leaf=lambda x: isinstance(x, base))
        writes.append((nodes_live[k], name, value))
    for node, name, value in writes:
        node.__dict__[name] = value
    return live


def _refuse_new_shapes(live: Any, transformed: Any, children_live: list, children_new: list):
    """A ``StructureMismatchError`` at the first leaf whose shape ``update`` would change."""
    is_node = lambda x: isinstance(x, ReffableTreeNode)  # noqa: E731 (references: no shape)
    old = jax.tree_util.tree_leaves(children_live, is_leaf=is_node)
    new = jax.tree_util.tree_leaves(children_new, is_leaf=is_node)
    if all(is_node(a) or jnp.shape(a) == jnp.shape(b) for a, b in zip(old, new)):
        return
    pairs = zip(jax.tree_util.tree_flatten_with_path(live)[0],
                jax.tree_util.tree_leaves(transformed))
    path, a, b = next((p, a, b) for (p, a), b in pairs if jnp.shape(a) != jnp.shape(b))
    raise StructureMismatchError(
        f"cannot update: {jax.tree_util.keystr(path)} has shape {jnp.shape(a)} but the "
        f"transformed graph holds shape {jnp.shape(b)} there. A batched graph (from vmap or "
        "solve_batch) holds every member: take one first (sg.unstack(batched)[i]); to "
        "resize a field, assign it on its node.")
