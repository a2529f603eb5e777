"""Save a graph to one ``.npz`` file (arrays + a JSON description) and load it back.

Sharing, cycles, dtypes and static data survive: arrays of ml_dtypes types (bfloat16,
float8_*, int4, ...), which ``.npy`` cannot describe, are stored as their raw bits (unsigned
integers of the same width) with the dtype's name, and only names in ``NAMED_DTYPES`` are
read back. No pickle is used, in either direction, and loading never runs code named by the
file: classes are recorded by ``module:qualname`` and found again only among the node
classes already defined in this process (or in ``classes=``).
Every part of the description is checked before it is used; a malformed file raises
:class:`GraphFileError` saying what is wrong.
"""

from __future__ import annotations

import collections
import json
import sys
import os
from typing import Any

import jax
import numpy as np

from . import _registry, _tables
from ._errors import GraphFileError, GraphTypeError, at
from ._named_dtypes import NAMED_DTYPES, bits, dtype_name
from ._npz_file import ARCHIVE_ERRORS, read_entry, reason, starts_like_zip, write_whole
from ._node import ReffableTreeNode, check_fields
from ._query import require_node

FORMAT = "simgraph-graph"
#: Written when the file holds an array of a named (ml_dtypes) dtype, so that an older simgraph
#: refuses it instead of reading the raw bits as integers; other files are still version 1.
VERSION = 2
_READS = (1, 2)
_META = "__simgraph__"
def save(path: str | os.PathLike, graph: Any) -> None:
    """Write ``graph`` (its root node) to ``path`` (a ``.npz`` file).

    Data fields may hold nodes, numeric arrays (bool, integer, float, complex, ml_dtypes),
    numbers, None, and lists, tuples and str-keyed dicts (or OrderedDicts) of these; static
    fields numbers, strings, None and tuples. Every value is checked before the file is opened: whatever
    :func:`load` could not read back (a string in a data field, a text, date, object or
    structured array, nesting deeper than 64 levels, another type) raises
    :class:`GraphFileError` naming its key path, and nothing is written. A root that is not a
    node raises :class:`GraphTypeError`.
    """
    require_node(graph, "a graph's root node to save")
    children, entries, nodes = _tables.walk(graph)
    paths = [jax.tree_util.keystr(p) for p in _tables.node_paths(entries, children)]
    index = {id(n): k for k, n in enumerate(nodes)}
    arrays: dict[str, np.ndarray] = {}
    named: set = set()
    described = [_Encoder(index, arrays, paths[k], named).node(node) for k, node in enumerate(nodes)]
    meta = {"format": FORMAT, "version": VERSION if named else 1, "nodes": described}
    arrays[_META] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    write_whole(path, arrays)


#: The deepest nesting of lists, tuples and dicts that :func:`load` reads (and save writes).
_MAX_DEPTH = 64
#: The array kinds stored as themselves: bool, signed/unsigned integer, float, complex.
_NUMERIC_KINDS = "biufc"


class _Encoder:
    """Tags one node's values for the description, refusing what :func:`load` would not read
    back (the mirror of :class:`_Decoder`)."""

    def __init__(self, index: dict, arrays: dict, node_path: str, named: set):
        self.index, self.arrays, self.node_path = index, arrays, node_path
        self.named = named  # the dtype names stored so far (all nodes)

    def node(self, node: ReffableTreeNode) -> dict:
        try:  # what load checks again on the rebuilt node (e.g. a reference field reassigned)
            check_fields(node)
        except GraphTypeError as e:
            raise GraphFileError(f"{at(self.node_path)}: cannot save: {e}") from None
        layout, state = type(node).__sg_layout__, node.__dict__
        return {"class": _registry.class_name(type(node)),
                "static": {n: self.static(state[n], n) for n in layout.static},
                "fields": {n: self.value(state[n], n) for n in layout.dynamic}}

    def value(self, v: Any, where: str, depth: int = 0) -> Any:
        self._check_depth(where, depth)
        if isinstance(v, ReffableTreeNode):
            return {"t": "ref", "v": self.index[id(v)]}
        if isinstance(v, (str, bytes)):
            raise self._refuse(where, f"a {type(v).__name__} in a data field, which JAX cannot "
                               "trace. Store strings as static fields (`name: str = sg.static()`)")
        if isinstance(v, (np.ndarray, np.generic, jax.Array)):
            return self.array(self._numpy(v, where), isinstance(v, np.generic), where)
        if v is None or isinstance(v, (bool, int, float, complex)):
            return self.static(v, where)
        if type(v) in (list, tuple):
            items = [self.value(x, f"{where}[{i}]", depth + 1) for i, x in enumerate(v)]
            return {"t": type(v).__name__, "v": items}
        if type(v) in _DICTS and all(isinstance(k, str) for k in v):
            return {"t": _DICTS[type(v)], "v": {k: self.value(x, f"{where}[{k!r}]", depth + 1)
                                                for k, x in v.items()}}
        raise self._unsupported(v, where)

    def array(self, a: np.ndarray, scalar: bool, where: str) -> dict:
        name = dtype_name(a.dtype)
        if name is None and a.dtype.kind not in _NUMERIC_KINDS:
            raise self._refuse(where, f"an array of dtype {a.dtype}, which is not numeric. "
                               "Convert it to a numeric array (e.g. dates to integer seconds), "
                               "or keep text as static fields")
        key = f"a{len(self.arrays)}"
        entry = {"t": "array", "k": key, "scalar": scalar}
        if name is not None:  # .npy would write these as raw void ('|V2'), unreadable
            a, entry["dtype"] = a.view(bits(a.dtype)), name
            self.named.add(name)
        self.arrays[key] = a
        return entry

    def _numpy(self, v: Any, where: str) -> np.ndarray:
        try:
            return np.asarray(v)
        except TypeError as e:  # e.g. a typed PRNG key: numpy has no dtype for it
            raise self._refuse(where, f"an array of dtype {v.dtype} ({e})") from None

    def static(self, v: Any, where: str, depth: int = 0) -> Any:
        self._check_depth(where, depth)
        if v is None:
            return {"t": "none"}
        if isinstance(v, (np.bool_, np.number)) and np.ndim(v) == 0:
            v = v.item()  # numpy scalars as the Python number they hold
        for tag, kind in _STATIC_TAGS:  # subclasses (IntEnum, np.float64, np.str_) as the base
            if isinstance(v, kind):
                return {"t": tag, "v": kind(v)}
        if isinstance(v, complex):
            return {"t": "complex", "v": [v.real, v.imag]}
        if isinstance(v, tuple):
            items = [self.static(x, f"{where}[{i}]", depth + 1) for i, x in enumerate(v)]
            return {"t": "tuple", "v": items}
        raise self._unsupported(v, where)

    def _check_depth(self, where: str, depth: int) -> None:
        if depth > _MAX_DEPTH:
            raise self._refuse(where.split("[")[0] + "[...]", f"lists, tuples or dicts nested "
                               f"deeper than {_MAX_DEPTH} levels. Flatten them, or convert the "
                               "data to an array")

    def _refuse(self, where: str, what: str) -> GraphFileError:
        return GraphFileError(f"{at(self.node_path)}.{where}: cannot save {what}.")

    def _unsupported(self, v: Any, where: str) -> GraphFileError:
        hint = (" (convert it to a plain list or tuple)" if isinstance(v, (list, tuple)) else
                " (its keys must be str)" if type(v) in _DICTS else
                " (convert it to a plain dict)" if isinstance(v, dict) else "")
        return self._refuse(where, f"a {type(v).__name__}{hint}. Saved graphs hold nodes, "
                            "numeric arrays, numbers, None, lists, tuples and str-keyed dicts in "
                            "data fields; numbers, strings, None and tuples in static fields")


#: Dict types a data field may hold, by tag; an OrderedDict is its own pytree node in JAX.
_DICTS = {dict: "dict", collections.OrderedDict: "odict"}
_STATIC_TAGS = (("bool", bool), ("int", int), ("float", float), ("str", str))


def load(path: str | os.PathLike, classes: dict[str, type] | None = None) -> Any:
    """Read a graph written by :func:`save`.

    Only node classes already defined in this process are instantiated (import the module
    that defines them first), or those in ``classes``, which maps ``module:qualname``,
    qualname or class name to a class. No module named by the file is ever imported.
    """
    meta, arrays = _read(path)
    described = _node_descriptions(meta, path)
    nodes = [object.__new__(_find_class(d["class"], classes, path)) for d in described]
    names = frozenset(arrays.files)  # a list: looking each array up in it was quadratic
    for k, (node, d) in enumerate(zip(nodes, described)):
        where = f"{path}: node #{k} ({d['class']})"
        _check_layout(type(node), d, where)
        decoder = _Decoder(nodes, arrays, names, where)
        values = {n: decoder.value(v, f".{n}", traced=True) for n, v in d["fields"].items()}
        values.update({n: decoder.value(v, f".{n}", traced=False) for n, v in d["static"].items()})
        node.__dict__.update(values)
    for k, node in enumerate(nodes):
        try:
            check_fields(node)
        except GraphTypeError as e:
            raise GraphFileError(f"{path}: node #{k}: {e}") from None
    return nodes[0]


def _read(path) -> tuple[dict, Any]:
    if not os.path.exists(path):
        raise GraphFileError(f"{path}: no such file.")
    if os.path.isdir(path) or not starts_like_zip(path):
        raise GraphFileError(f"{path}: not a simgraph graph file (not an .npz archive written by "
                             "simgraph.save).")
    try:
        data = np.load(path, allow_pickle=False)
        raw = bytes(read_entry(data, _META)) if _META in data.files else None
    except ARCHIVE_ERRORS as e:
        raise GraphFileError(f"{path}: not a readable simgraph file ({reason(e)}). It may be "
                             "truncated or damaged; save it again.") from None
    if raw is None:
        raise GraphFileError(f"{path}: no simgraph description inside; was it written by simgraph.save?")
    try:
        meta = json.loads(raw.decode())
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise GraphFileError(f"{path}: corrupt description ({reason(e)}); save the graph again.") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        kind = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise GraphFileError(f"{path}: not a simgraph graph file (format {kind!r}).")
    version = meta.get("version")
    if type(version) is not int or version not in _READS:
        raise GraphFileError(
            f"{path}: file version {version} is not supported by this simgraph "
            f"(reads versions {', '.join(map(str, _READS))}); load it with the simgraph "
            "version that wrote it."
        )
    return meta, data


def _node_descriptions(meta: dict, path) -> list[dict]:
    described = meta.get("nodes")
    if not isinstance(described, list) or not described:
        raise GraphFileError(f"{path}: the description lists no nodes; the file is corrupt.")
    for k, d in enumerate(described):
        ok = (isinstance(d, dict) and isinstance(d.get("class"), str)
              and isinstance(d.get("fields"), dict) and isinstance(d.get("static"), dict))
        if not ok:
            raise GraphFileError(f"{path}: node #{k} must have a 'class' name and 'fields' and "
                                 "'static' tables; the file is corrupt or edited.")
    return described


def _find_class(name: str, classes: dict | None, path) -> type:
    qualname = name.partition(":")[2]
    found = None
    if classes:
        found = next((classes[k] for k in (name, qualname, qualname.rpartition(".")[2])
                      if k in classes), None)
    found = found or _registry.lookup(name)
    if found is None:
        raise GraphFileError(
            f"{path}: class {name} is not defined in this process. Import the module that "
            f"defines it before loading, or pass load(..., classes={{'{qualname}': cls}}). "
            "(Loading never imports modules named by a file.)"
        )
    if not (isinstance(found, type) and issubclass(found, ReffableTreeNode)):
        raise GraphFileError(f"{path}: {name} is not a simgraph node class.")
    return found


def _check_layout(cls: type, d: dict, where: str) -> None:
    layout = cls.__sg_layout__
    if set(d["fields"]) != set(layout.dynamic) or set(d["static"]) != set(layout.static):
        raise GraphFileError(
            f"{where} was saved with fields {sorted(d['fields']) + sorted(d['static'])}, but "
            f"the class now has {sorted(layout.dynamic + layout.static)}. Load with the class "
            "version that saved it."
        )


class _Decoder:
    """Decodes one node's tagged values, checking every tag, type, index and depth."""

    MAX_DEPTH = _MAX_DEPTH

    def __init__(self, nodes: list, arrays, names: frozenset, where: str):
        self.nodes, self.arrays, self.names, self.where = nodes, arrays, names, where

    def value(self, v: Any, at_: str, traced: bool, depth: int = 0) -> Any:
        if depth > self.MAX_DEPTH:
            raise self._bad(at_, f"nesting deeper than {self.MAX_DEPTH} levels")
        if not isinstance(v, dict) or not isinstance(v.get("t"), str):
            raise self._bad(at_, "a value without a type tag")
        t, payload = v["t"], v.get("v")
        if t == "none":
            return None
        if t in _SCALARS and (t != "str" or not traced):
            return self._scalar(t, payload, at_)
        if t == "complex" and _is_pair(payload):
            return complex(*payload)
        if t in ("list", "tuple") and isinstance(payload, list) and (traced or t == "tuple"):
            items = [self.value(x, f"{at_}[{i}]", traced, depth + 1) for i, x in enumerate(payload)]
            return items if t == "list" else tuple(items)
        if traced and t in ("dict", "odict") and isinstance(payload, dict):
            items = {k: self.value(x, f"{at_}[{k!r}]", traced, depth + 1) for k, x in payload.items()}
            return items if t == "dict" else collections.OrderedDict(items)
        if traced and t == "ref":
            return self._ref(payload, at_)
        if traced and t == "array":
            return self._array(v, at_)
        place = "a traced field" if traced else "static metadata"
        raise self._bad(at_, f"a {t!r} value where {place} belongs")

    def _scalar(self, t: str, payload: Any, at_: str) -> Any:
        want = _SCALARS[t]
        if isinstance(payload, bool) and t != "bool" or not isinstance(payload, want):
            raise self._bad(at_, f"the tag {t!r} holding a {type(payload).__name__}")
        return payload

    def _ref(self, payload: Any, at_: str) -> Any:
        if isinstance(payload, bool) or not isinstance(payload, int) or not 0 <= payload < len(self.nodes):
            raise self._bad(at_, f"reference {payload!r}, but the file has nodes #0..#{len(self.nodes) - 1}")
        return self.nodes[payload]

    def _array(self, v: dict, at_: str) -> Any:
        key, scalar = v.get("k"), v.get("scalar", False)
        if not isinstance(key, str) or key == _META or key not in self.names:
            raise self._bad(at_, f"array {key!r} is missing (truncated or edited file)")
        try:
            a = read_entry(self.arrays, key)
        except ARCHIVE_ERRORS as e:
            raise self._bad(at_, f"array {key!r} cannot be read ({reason(e)})") from None
        named = "dtype" in v
        if (a.dtype.kind not in _NUMERIC_KINDS and not named) or not isinstance(scalar, bool) \
                or (scalar and a.ndim):
            raise self._bad(at_, f"array {key!r} has dtype {a.dtype} and shape {a.shape}, not a "
                            "numeric array")
        if named:
            a = self._named(a, v["dtype"], key, at_)
        return a[()] if scalar else a

    def _named(self, a: np.ndarray, name: Any, key: str, at_: str) -> np.ndarray:
        """The stored bits ``a`` viewed as the dtype called ``name`` (see :func:`save`)."""
        dtype = NAMED_DTYPES.get(name) if isinstance(name, str) else None
        if dtype is None:
            known = ", ".join(sorted(NAMED_DTYPES))
            raise GraphFileError(
                f"{self.where}{at_}: array {key!r} has dtype {name!r}, which this simgraph "
                f"cannot read (it reads {known}). The file is edited, or was written with a "
                "newer ml_dtypes: upgrade ml_dtypes (pip install -U ml_dtypes) or save the "
                "graph again.")
        if a.dtype != bits(dtype):
            raise self._bad(at_, f"array {key!r} holds {a.dtype}, but {name} is stored as "
                            f"{bits(dtype)}")
        return a.view(dtype)

    def _bad(self, at_: str, what: str) -> GraphFileError:
        return GraphFileError(f"{self.where}{at_}: {what}; the file is corrupt or edited. Save "
                              "the graph again.")


_SCALARS = {"bool": bool, "int": int, "float": (float, int), "str": str}


def _is_pair(payload: Any) -> bool:
    """Two numbers that ``complex`` takes (JSON ints are unbounded: a float must hold them)."""
    return (isinstance(payload, list) and len(payload) == 2 and all(
        type(x) is float or type(x) is int and abs(x) <= _MAX_FLOAT for x in payload))


_MAX_FLOAT = int(sys.float_info.max)
