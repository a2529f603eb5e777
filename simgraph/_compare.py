"""Say where two graphs' structures differ (for stack, update and similar errors)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from . import _tables, _walk
from ._errors import at
from ._query import require_node


def structure_difference(a: Any, b: Any) -> str | None:
    """Describe the first place where graphs ``a`` and ``b`` differ in structure, or None."""
    require_node(a, "the first graph's root node")
    require_node(b, "the second graph's root node")
    ca, ea, na = _tables.walk(a)
    cb, eb, nb = _tables.walk(b)
    paths = _tables.node_paths(ea, ca)
    for k, (entry_a, entry_b) in enumerate(zip(ea, eb)):
        if entry_a != entry_b:
            return _entry_difference(at(jax.tree_util.keystr(paths[k])), entry_a, entry_b)
    if len(ea) != len(eb):
        return f"<root>: the graphs have {len(ea)} and {len(eb)} nodes"
    for (k, name, _), x, y in zip(_tables.child_owners(ea), ca, cb):
        if jax.tree_util.tree_structure(x) != jax.tree_util.tree_structure(y):
            where = at(jax.tree_util.keystr(paths[k]) + f".{name}")
            return f"{where}: the field's pytree structure differs ({_short(x)} vs {_short(y)})"
    return None


def leaf_shape_difference(graphs: list) -> str | None:
    """Describe the first leaf whose shape or dtype differs across same-structure graphs (a
    Python number counts as the dtype JAX gives it: 1.0 stacks with a float array)."""
    flat = [jax.tree_util.tree_flatten_with_path(g)[0] for g in graphs]
    for items in zip(*flat):
        shapes = [(jnp.shape(x), str(jnp.result_type(x))) for _, x in items]
        if any(s != shapes[0] for s in shapes):
            where = at(jax.tree_util.keystr(items[0][0]))
            return f"{where}: leaf shapes/dtypes differ: {shapes}"
    return None


def _entry_difference(where: str, a: tuple, b: tuple) -> str:
    (ca, sa, fa), (cb, sb, fb) = a, b
    if ca is not cb:
        return f"{where}: node class differs ({ca.__name__} vs {cb.__name__})"
    for name, x, y in zip(ca.__sg_layout__.static, sa, sb):
        if x != y:
            return f"{where}.{name}: static value differs ({x!r} vs {y!r})"
    for name, x, y in zip(ca.__sg_layout__.dynamic, fa, fb):
        if x != y:
            return f"{where}.{name}: {_spec_text(x)} vs {_spec_text(y)}"
    return f"{where}: node entries differ"


def _spec_text(spec: Any) -> str:
    if type(spec) is int:
        if spec >= 0:
            return f"a reference to node #{spec} (sharing pattern)"
        return "data" if spec == _walk.CHILD else "data holding references"
    return f"references {_tables._rebuild_container(spec, _Labels())!r}"


class _Labels:
    """Stands for the graph's nodes when a container of references is rebuilt for a message:
    ``labels[k]`` shows as ``<node #k>``, so the text has the container's type and keys."""

    def __getitem__(self, k: int) -> "_Label":
        return _Label(k)


class _Label:
    """One node of a rebuilt container, shown as ``<node #k>``."""

    def __init__(self, k: int):
        self.k = k

    def __repr__(self) -> str:
        return f"<node #{self.k}>"


def _short(x: Any) -> str:
    text = str(jax.tree_util.tree_structure(x))
    return text if len(text) < 60 else text[:57] + "..."
