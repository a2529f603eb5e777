"""Kinds of nodes and their stacked data: the host-side half of lowering (the sort into kinds is `_analyse`).

A *kind* is a set of nodes with the same class, static values and field structure (which
fields hold references, containers of which shape, leaves of which shapes and dtypes). The
data leaves of a kind become *columns*: one stacked array per leaf position (parameters) or
one index array into ``x`` (unknowns). References become a per-kind table of node ids.
Concrete leaves are stacked with numpy on the host; traced leaves with ``jnp.stack``.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import simgraph as sg

from .._concrete import is_traced
from ._model_errors import ModelError

_REF = ("ref",)
_NONE = ("none",)
_PY_DTYPES = {float: np.float64, int: np.int64, bool: np.bool_, complex: np.complex128,
              **{t: t for t in (np.float64, np.float32, np.int64, np.int32, np.bool_, np.complex128)}}
_CANON: dict = {}


def canonical(dtype) -> np.dtype:
    """The dtype JAX will use for ``dtype`` under the current x64 setting (cached)."""
    key = (np.dtype(dtype), jax.config.jax_enable_x64)
    out = _CANON.get(key)
    if out is None:
        out = _CANON[key] = np.dtype(jax.dtypes.canonicalize_dtype(key[0]))
    return out


@dataclasses.dataclass(eq=False)
class Column:
    """One data leaf position of a kind: ``field`` + ``sub`` (path inside the field value)."""

    field: str
    sub: tuple
    shape: tuple
    dtype: np.dtype
    unknown: bool

    @property
    def label(self) -> str:
        return self.field + jax.tree_util.keystr(self.sub)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


@dataclasses.dataclass(eq=False)
class FieldLayout:
    """How to rebuild a field: ``items`` are ``("col", j)``, ``("ref", s)`` or ``("none",)``."""

    name: str
    treedef: Any  # None for a bare leaf, a reference or None; list/tuple or a PyTreeDef otherwise
    items: tuple


@dataclasses.dataclass(eq=False)
class Kind:
    """Nodes of one class/static/structure; ``slots[i, s]`` = node id of reference s of member i."""

    key: tuple
    cls: type
    statics: tuple
    fields: tuple  # FieldLayout per dynamic field
    columns: tuple  # Column per data leaf
    members: np.ndarray  # node ids, increasing
    slots: np.ndarray  # (count, n_slots) node ids
    label: str = ""
    xidx: dict = dataclasses.field(default_factory=dict)  # column index -> (count, size) x indices
    _slot_paths: tuple | None = None

    @property
    def count(self) -> int:
        return len(self.members)

    @property
    def n_slots(self) -> int:
        return self.slots.shape[1]

    @property
    def slot_paths(self) -> tuple:
        """Key path (tuple of keys) of each reference slot, relative to the node."""
        if self._slot_paths is None:
            paths = []
            for f in self.fields:
                attr = (jax.tree_util.GetAttrKey(f.name),)
                if f.treedef is None:
                    paths.extend(attr for item in f.items if item[0] == "ref")
                elif any(item[0] == "ref" for item in f.items):
                    subs = subpaths(f.treedef)
                    paths.extend(attr + sub for sub, item in zip(subs, f.items) if item[0] == "ref")
            self._slot_paths = tuple(paths)
        return self._slot_paths

    def method(self, name: str):
        return getattr(self.cls, name, None)


@dataclasses.dataclass(eq=False)
class Analysis:
    """The kinds of a graph, where each node sits, and the layout of ``x``."""

    kinds: list
    kind_of: np.ndarray  # (N,) kind index of each node
    pos_of: np.ndarray  # (N,) position of each node inside its kind
    x_start: np.ndarray  # (N,) offset of each node's unknowns in x
    x_size: np.ndarray  # (N,)
    n: int
    x_dtype: np.dtype

    @property
    def n_nodes(self) -> int:
        return len(self.kind_of)


@functools.lru_cache(maxsize=2)
def _python_keys(x64: bool) -> dict:
    """Keys of Python and numpy scalars under the x64 setting ``x64``."""
    return {t: ((), canonical(d)) for t, d in _PY_DTYPES.items()}


class _Keys:
    """Structure keys of leaves, with the dtype canonicalisation cached for one analysis."""

    def __init__(self):
        self.dtypes: dict = {}
        self.py = _python_keys(jax.config.jax_enable_x64)

    def leaf(self, v, where):
        """``(shape, canonical dtype)`` of a data leaf; ``where`` = (class, field) for errors."""
        key = self.py.get(type(v))
        if key is not None:
            return key
        if isinstance(v, (np.ndarray, np.generic, jax.Array)):
            dt = self.dtypes.get(v.dtype)
            if dt is None:
                dt = self.dtypes[v.dtype] = canonical(v.dtype)
            return (tuple(v.shape), dt)
        raise sg.GraphTypeError(
            f"{where[0].__name__}.{where[1]}: holds a {type(v).__name__}, which is neither an array, a number nor a "
            "node. Model data must be arrays or numbers; declare other metadata with sg.static()."
        )


_ARRAYS = (np.ndarray, np.generic, jax.Array)


_FIELD_NAMES: dict = {}


def field_names(cls: type) -> tuple[tuple, tuple, frozenset]:
    """``(dynamic, static, unknown)`` field names of a node class, from ``sg.fields`` (cached)."""
    out = _FIELD_NAMES.get(cls)
    if out is None:
        infos = sg.fields(cls)
        out = _FIELD_NAMES[cls] = (tuple(i.name for i in infos if i.kind != "static"),
                                   tuple(i.name for i in infos if i.kind == "static"),
                                   frozenset(i.name for i in infos if i.kind == "unknown"))
    return out


def subpaths(treedef) -> list:
    """Key paths (tuples of keys) of the leaves of ``treedef`` inside the value."""
    dummy = jax.tree_util.tree_unflatten(treedef, [0] * treedef.num_leaves)
    return [tuple(p) for p, _ in jax.tree_util.tree_flatten_with_path(dummy)[0]]


def _label(kinds) -> None:
    seen: dict = {}
    for kind in kinds:
        name = kind.cls.__name__
        seen[name] = seen.get(name, 0) + 1
        kind.label = name if seen[name] == 1 else f"{name}#{seen[name]}"


def _layout_x(kinds, kind_of, pos_of) -> Analysis:
    sizes = np.array([sum(c.size for c in k.columns if c.unknown) for k in kinds], dtype=np.int64)
    x_size = sizes[kind_of] if len(kinds) else np.zeros(0, np.int64)
    x_start = np.cumsum(x_size) - x_size
    dtypes = [c.dtype for k in kinds for c in k.columns if c.unknown]
    x_dtype = canonical(np.result_type(np.float32, *dtypes)) if dtypes else canonical(np.float64)
    for kind in kinds:
        offset = 0
        for j, col in enumerate(kind.columns):
            if col.unknown:
                start = x_start[kind.members][:, None] + offset
                kind.xidx[j] = start + np.arange(col.size, dtype=np.int64)[None, :]
                offset += col.size
    return Analysis(kinds, kind_of, pos_of, x_start, x_size, int(x_size.sum()), x_dtype)


def gather(an: Analysis, positions: list, leaves: list):
    """``(x0, params)`` from a graph's flat leaves (``jax.tree_util.tree_leaves`` order) into the
    stacked per-kind layout of ``an``; None if a leaf's shape or dtype differs from the layout
    (the graph then needs a new analysis). Numbers, numpy leaves and concrete CPU arrays are
    stacked on the host into numpy params, other jax arrays on the device (one compiled
    gather per layout: no accelerator leaf leaves the device)."""
    columns = _uniform_columns(an, positions, leaves)
    if columns is None:
        columns = _columns(an, positions, leaves)
        if columns is None:
            return None
    x_pieces, params = [], {}
    for ki, kind in enumerate(an.kinds):
        cols = params[kind.label] = {}
        for j, col in enumerate(kind.columns):
            if col.unknown:
                x_pieces.append((kind.xidx[j], columns[ki, j]))
            else:  # host values stay numpy: a jitted solve takes them with its own transfer
                cols[col.label] = columns[ki, j]
    return _assemble_x(an, x_pieces), params


def _uniform_columns(an: Analysis, positions: list, leaves: list) -> dict | None:
    """The columns when every leaf is a number of one type and every column is of its
    dtype (the common case: one host array of all leaves, indexed per column); else None."""
    types = set(map(type, leaves))
    key = _python_keys(jax.config.jax_enable_x64).get(types.pop()) if len(types) == 1 else None
    if key is None or any((c.shape, c.dtype) != key for kind in an.kinds for c in kind.columns):
        return None
    flat = np.asarray(leaves, dtype=key[1])
    return {(ki, j): flat[pos[:, j]] for ki, (kind, pos) in enumerate(zip(an.kinds, positions))
            for j in range(len(kind.columns))}


def _columns(an: Analysis, positions: list, leaves: list) -> dict | None:
    """The columns, each checked against the layout; None at the first mismatch."""
    keys, host, device = _Keys(), {}, {}
    for ki, (kind, pos) in enumerate(zip(an.kinds, positions)):
        for j, col in enumerate(kind.columns):
            values = list(map(leaves.__getitem__, pos[:, j].tolist()))
            if not _matches(values, col, keys):
                return None
            if any(isinstance(v, jax.Array) for v in values):
                if not readable_on_host(values):
                    device[ki, j] = values
                    continue
                values = [np.asarray(v) for v in values]
            host[ki, j] = np.asarray(values, dtype=col.dtype).reshape((kind.count,) + col.shape)
    if device:
        dtypes = tuple(an.kinds[ki].columns[j].dtype for ki, j in device)
        host.update(zip(device, _stack_on_device(tuple(device.values()), dtypes)))
    return host


def readable_on_host(values: list) -> bool:
    """Whether every array among ``values`` is a concrete CPU array: reading one costs
    less than a microsecond, a compiled stacking call on the device ~15 us. Elsewhere
    (an accelerator, a tracer) the values are stacked on the device."""
    return all(not isinstance(v, jax.Array)
               or (not is_traced(v) and next(iter(v.devices())).platform == "cpu")
               for v in values)


def _matches(values: list, col: Column, keys: _Keys) -> bool:
    """Whether every value has the column's shape and (canonical) dtype."""
    expect = (col.shape, col.dtype)
    types = set(map(type, values))
    if all(t in keys.py for t in types):
        return all(keys.py[t] == expect for t in types)
    try:
        return all(keys.leaf(v, (object, col.field)) == expect for v in values)
    except sg.GraphTypeError:
        return False


@functools.partial(jax.jit, static_argnums=1)
def _stack_on_device(columns: tuple, dtypes: tuple) -> list:
    return [jnp.stack([jnp.asarray(v, dtype) for v in values]) for values, dtype in zip(columns, dtypes)]


#: a host array onto the device through a compiled identity: less than half of what
#: ``jnp.asarray``'s dispatch costs (x0 of a small graph, on every build)
_to_device = jax.jit(lambda host: host)


def _assemble_x(analysis: Analysis, pieces: list):
    if not any(isinstance(v, jax.Array) for _, v in pieces):
        x0 = np.zeros(analysis.n, dtype=analysis.x_dtype)
        for idx, values in pieces:
            x0[idx] = np.asarray(values).reshape(idx.shape)
        return _to_device(x0)
    indices, values = zip(*pieces)
    return _scatter_x(values, indices, analysis.n, np.dtype(analysis.x_dtype))


@functools.partial(jax.jit, static_argnums=(2, 3))
def _scatter_x(values: tuple, indices: tuple, n: int, dtype) -> jax.Array:
    """x0 from device columns in one compiled call (eager ``.at[].set``s cost ~0.3 ms each)."""
    x0 = jnp.zeros(n, dtype)
    for idx, column in zip(indices, values):
        x0 = x0.at[idx].set(jnp.reshape(column, idx.shape).astype(dtype))
    return x0


def abstract_params(an: Analysis) -> dict:
    """``ShapeDtypeStruct``s standing for the params of ``an`` (for tracing without values)."""
    return {kind.label: {c.label: jax.ShapeDtypeStruct((kind.count,) + c.shape, c.dtype)
                         for c in kind.columns if not c.unknown} for kind in an.kinds}


def check_unknown_dtypes(analysis: Analysis) -> None:
    """Unknowns must be real numbers (Newton needs real derivatives with respect to them)."""
    for kind in analysis.kinds:
        for col in kind.columns:
            if col.unknown and not np.issubdtype(col.dtype, np.number):
                raise ModelError(
                    f"{kind.cls.__name__}.{col.label} is an unknown of dtype {col.dtype}; unknowns "
                    "must be numbers. Give it a numeric start value (e.g. 0.0)."
                )
            if col.unknown and np.issubdtype(col.dtype, np.complexfloating):
                raise ModelError(
                    f"{kind.cls.__name__}.{col.label} is an unknown of complex dtype {col.dtype}; "
                    "unknowns must be real. Split it into two real unknowns (real and imaginary "
                    "parts) with a real residual for each."
                )


def build_field(f: FieldLayout, cols, ref):
    """A field's value from its columns' values and ``ref(s)`` for reference slot s."""
    if f.treedef is None:
        item = f.items[0]
        if item[0] == "col":
            return cols[item[1]]
        return ref(item[1]) if item[0] == "ref" else None
    leaves = [cols[i] if t == "col" else ref(i) for t, i in f.items]
    if f.treedef is list or f.treedef is tuple:  # the walk's fast spec for plain sequences of nodes
        return f.treedef(leaves)
    return jax.tree_util.tree_unflatten(f.treedef, leaves)


def node_paths(an: Analysis) -> list:
    """The breadth-first key path (tuple of keys) of every node, as ``sg`` prints it (cached)."""
    cached = getattr(an, "_paths", None)
    if cached is not None:
        return cached
    paths: list = [None] * an.n_nodes
    paths[0] = ()
    for k in range(an.n_nodes):
        kind = an.kinds[an.kind_of[k]]
        for s, t in enumerate(kind.slots[an.pos_of[k]].tolist()):
            if paths[t] is None:
                paths[t] = paths[k] + kind.slot_paths[s]
    an._paths = paths
    return paths


def node_path(an: Analysis, k: int) -> str:
    """Key path string of node ``k`` (``<root>`` for the root)."""
    return jax.tree_util.keystr(node_paths(an)[k]) or "<root>"
