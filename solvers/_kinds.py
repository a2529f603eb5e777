"""Sort a graph's nodes into kinds and stack their data: the host-side half of lowering.

A *kind* is a set of nodes with the same class, static values and field structure (which
fields hold references, containers of which shape, leaves of which shapes and dtypes). The
data leaves of a kind become *columns*: one stacked array per leaf position (parameters) or
one index array into ``x`` (unknowns). References become a per-kind table of node ids.
Concrete leaves are stacked with numpy on the host; traced leaves with ``jnp.stack``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import simgraph as sg
from simgraph import _tables, _walk

from ._concrete import is_concrete, is_traced, is_traced_type
from ._model_errors import ModelError

_REF = ("ref",)
_NONE = ("none",)
_PY_DTYPES = {float: np.float64, int: np.int64, bool: np.bool_, complex: np.complex128}
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
    sample: Any = None  # the first member (for key paths of reference slots, computed lazily)
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
                    subs = _subpaths(self.sample.__dict__[f.name])
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


def _is_node(v) -> bool:
    return isinstance(v, sg.ReffableTreeNode)


def _subpaths(value) -> list:
    return [tuple(p) for p, _ in jax.tree_util.tree_flatten_with_path(value, is_leaf=_is_node)[0]]


class _Keys:
    """Structure keys of leaves, with the dtype canonicalisation cached for one analysis."""

    def __init__(self):
        self.dtypes: dict = {}
        self.py = {t: ((), canonical(d)) for t, d in _PY_DTYPES.items()}

    def leaf(self, v, where):
        """``(shape, canonical dtype)`` of a data leaf; ``where()`` names it in errors."""
        key = self.py.get(type(v))
        if key is not None:
            return key
        if isinstance(v, (np.ndarray, np.generic, jax.Array)):
            dt = self.dtypes.get(v.dtype)
            if dt is None:
                dt = self.dtypes[v.dtype] = canonical(v.dtype)
            return (tuple(v.shape), dt)
        raise sg.GraphTypeError(
            f"{where()}: holds a {type(v).__name__}, which is neither an array, a number nor a "
            "node. Model data must be arrays or numbers; declare other metadata with sg.static()."
        )

    def container(self, v, where, index):
        """Key, data leaves and reference ids of a container field."""
        leaves, treedef = jax.tree_util.tree_flatten(v, is_leaf=_is_node)
        keys, data, refs = [], [], []
        for leaf in leaves:
            if _is_node(leaf):
                keys.append(_REF)
                refs.append(index()[id(leaf)])
            else:
                keys.append(self.leaf(leaf, where))
                data.append(leaf)
        return (treedef, tuple(keys)), data, refs


_ARRAYS = (np.ndarray, np.generic, jax.Array)


def _describe(node, entry, keys: _Keys, index):
    """``(kind key, data leaves, ref ids)`` of one node, using the walk's field specs."""
    cls, statics, specs = entry
    d = node.__dict__
    fkeys, data, refs = [], [], []
    py = keys.py
    for name, spec in zip(cls.__sg_layout__.dynamic, specs):
        if type(spec) is not int:  # a container holding only references
            fkeys.append((spec[0], (_REF,) * len(spec[1])))
            refs.extend(spec[1])
        elif spec >= 0:
            fkeys.append(_REF)
            refs.append(spec)
        else:
            v = d[name]
            key = py.get(type(v))
            if key is not None:
                fkeys.append(key)
                data.append(v)
            elif v is None:
                fkeys.append(_NONE)
            elif spec == _walk.CHILD and isinstance(v, _ARRAYS):
                fkeys.append(keys.leaf(v, None))
                data.append(v)
            else:
                key, d_, r_ = keys.container(v, lambda: f"{cls.__name__}.{name}", index)
                fkeys.append(key)
                data.extend(d_)
                refs.extend(r_)
    return (cls, statics, tuple(fkeys)), data, refs


def analyse(root) -> tuple[Analysis, list, list]:
    """Walk the graph; return the kinds, per kind the per-member data leaves, and the nodes."""
    _, entries, nodes = _tables.walk(root)  # validates references and static hashability
    cache: dict = {}

    def index():
        if not cache:
            cache.update({id(node): k for k, node in enumerate(nodes)})
        return cache

    keys = _Keys()
    by_key: dict = {}
    kind_of = np.empty(len(nodes), dtype=np.int64)
    for k, (node, entry) in enumerate(zip(nodes, entries)):
        key, data, refs = _describe(node, entry, keys, index)
        group = by_key.get(key)
        if group is None:
            group = by_key[key] = (len(by_key), [], [], [])
        kind_of[k] = group[0]
        group[1].append(k)
        group[2].append(data)
        group[3].append(refs)
    kinds, datas = [], []
    for key, (_, members, data, refs) in by_key.items():
        kinds.append(_make_kind(key, members, refs, nodes[members[0]]))
        datas.append(data)
    _label(kinds)
    pos_of = np.empty(len(nodes), dtype=np.int64)
    for kind in kinds:
        pos_of[kind.members] = np.arange(kind.count)
    return _layout_x(kinds, kind_of, pos_of), datas, nodes


def _make_kind(key, members, refs, sample) -> Kind:
    cls, statics, fkeys = key
    infos = cls.__sg_layout__
    fields, columns, n_slots = [], [], 0
    for name, fkey in zip(infos.dynamic, fkeys):
        unknown = name in infos.unknown
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
            has_data = any(lk != _REF for lk in leaf_keys)
            subs = _subpaths(sample.__dict__[name]) if has_data else [None] * len(leaf_keys)
            items = []
            for sub, lk in zip(subs, leaf_keys):
                if lk == _REF:
                    items.append(("ref", n_slots))
                    n_slots += 1
                else:
                    items.append(("col", len(columns)))
                    columns.append(Column(name, sub, lk[0], lk[1], unknown))
            fields.append(FieldLayout(name, treedef, tuple(items)))
    slots = np.asarray(refs, dtype=np.int64).reshape(len(members), n_slots)
    return Kind(key, cls, statics, tuple(fields), tuple(columns), np.asarray(members, dtype=np.int64),
                slots, sample)


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


def stack_columns(analysis: Analysis, datas: list) -> tuple[Any, dict]:
    """Return ``(x0, params)``; params maps kind label -> {column label: stacked array}."""
    pieces, params = [], {}
    for kind, data in zip(analysis.kinds, datas):
        cols = {}
        for j, col in enumerate(kind.columns):
            stacked = _stack([row[j] for row in data], col)
            if col.unknown:
                pieces.append((kind.xidx[j], stacked))
            else:
                cols[col.label] = stacked
        params[kind.label] = cols
    return _assemble_x(analysis, pieces), params


def _stack(values: list, col: Column):
    shape = lambda k: (k,) + col.shape  # noqa: E731
    types = set(map(type, values))
    if not any(map(is_traced_type, types)):
        if any(issubclass(t, jax.Array) for t in types):
            values = jax.device_get(values)  # one batched transfer instead of one per leaf
        return jnp.asarray(np.asarray(values, dtype=col.dtype).reshape(shape(len(values))))
    traced = [i for i, v in enumerate(values) if is_traced(v)]
    if len(traced) == len(values):
        return jnp.stack([jnp.asarray(v, dtype=col.dtype) for v in values])
    rest = [i for i in range(len(values)) if not is_traced(values[i])]
    host = np.zeros(shape(len(values)), dtype=col.dtype)
    host[rest] = np.asarray(jax.device_get([values[i] for i in rest]), dtype=col.dtype).reshape(shape(len(rest)))
    tv = jnp.stack([jnp.asarray(values[i], dtype=col.dtype) for i in traced])
    return jnp.asarray(host).at[np.asarray(traced)].set(tv)


def _assemble_x(analysis: Analysis, pieces: list):
    if is_concrete([v for _, v in pieces]):
        x0 = np.zeros(analysis.n, dtype=analysis.x_dtype)
        for idx, values in pieces:
            x0[idx] = np.asarray(values).reshape(idx.shape)
        return jnp.asarray(x0)
    x0 = jnp.zeros(analysis.n, dtype=analysis.x_dtype)
    for idx, values in pieces:
        x0 = x0.at[idx].set(jnp.reshape(values, idx.shape).astype(analysis.x_dtype))
    return x0


def check_unknown_dtypes(analysis: Analysis) -> None:
    """Unknowns must be real floating point (Newton needs derivatives with respect to them)."""
    for kind in analysis.kinds:
        for col in kind.columns:
            if col.unknown and not np.issubdtype(col.dtype, np.number):
                raise ModelError(
                    f"{kind.cls.__name__}.{col.label} is an unknown of dtype {col.dtype}; unknowns "
                    "must be numbers. Give it a numeric start value (e.g. 0.0)."
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
