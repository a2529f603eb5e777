"""Kinds of nodes and their stacked data: the host-side half of lowering (the sort into kinds is `_analyse`).

A *kind* is a set of nodes with the same class, static values and field structure (which
fields hold references, containers of which shape, leaves of which shapes and dtypes). The
data leaves of a kind become *columns*: one stacked array per leaf position (parameters) or
one index array into ``x`` (unknowns). References become a per-kind table of node ids.
Gathering a graph's values into this layout is `_gather`.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from typing import Any

import jax
import numpy as np

import simgraph as sg

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


#: The methods a lowering calls on each class: a structure is lowered, and its programs are
#: compiled, for the functions these names held then (`hooks`, `HookProbe`).
HOOKS = ("residual", "contributions", "step_limit", "charge", "next_breakpoint")


def hooks(classes: tuple) -> tuple:
    """The hook functions of ``classes`` now (None where a class has none, or a field of
    that name): part of the lowering's cache key, so a method assigned to a class after a
    solve (``Cls.residual = f``) gets its own lowering and compiled programs."""
    found = [getattr(cls, name, None) for cls in classes for name in HOOKS]
    return tuple([f if callable(f) else None for f in found])


class HookProbe:
    """Tells, in about a microsecond, whether any class on the classes' MROs has had a hook
    name assigned or deleted since the probe was made (read on every structure-cache hit).
    The namespaces are live views, and the values read at first are kept (so their ids
    stay unique): an unchanged class gives the very same objects."""

    def __init__(self, classes):
        bases = dict.fromkeys(c for cls in classes for c in cls.__mro__ if c is not object)
        self._views = tuple(vars(c) for c in bases for _ in HOOKS)
        self._names = HOOKS * len(bases)
        self._seen = self._read()

    def _read(self) -> list:
        return list(map(_view_get, self._views, self._names))

    def unchanged(self) -> bool:
        return all(map(operator.is_, self._read(), self._seen))


_view_get = type(vars(object)).get  # mappingproxy.get


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
            if jax.dtypes.issubdtype(v.dtype, jax.dtypes.extended):
                return _extended(v, where)
            dt = self.dtypes.get(v.dtype)
            if dt is None:
                if v.dtype.hasobject:
                    return _object_array(where)
                dt = self.dtypes[v.dtype] = canonical(v.dtype)
            return (tuple(v.shape), dt)
        raise sg.GraphTypeError(
            f"{where[0].__name__}.{where[1]}: holds a value of type {type(v).__name__}, which "
            "is neither an array, a number nor a node. Model data must be arrays or numbers; "
            "declare other metadata with sg.static()."
        )


def _extended(v, where):
    """None for a first pass (``where`` None: the leaf is then no data); else the error."""
    if where is None:
        return None
    what = "a PRNG key array" if jax.dtypes.issubdtype(v.dtype, jax.dtypes.prng_key) else "an array"
    raise sg.GraphTypeError(
        f"{where[0].__name__}.{where[1]}: holds {what} of dtype {v.dtype}, which cannot be "
        "model data (parameters are stacked and differentiated as numbers). Store its "
        "numbers instead (for a key: jax.random.key_data(key)) and rebuild it where it is "
        "used (jax.random.wrap_key_data)."
    )


def _object_array(where):
    """None for a first pass (as `_extended`); else the error: a numpy array of Python
    objects (nodes, strings) is one opaque value JAX cannot trace, inside a list or a dict
    too (a field set to one directly is refused where it is set)."""
    if where is None:
        return None
    raise sg.GraphTypeError(
        f"{where[0].__name__}.{where[1]}: holds a numpy array of dtype object, which JAX "
        "cannot trace. Hold nodes in a plain list (they stay in the graph, their references "
        "shared) and numbers in a numeric array (np.asarray(value, dtype=float))."
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
