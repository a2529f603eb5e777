"""Save a graph to one ``.npz`` file (arrays + a JSON description) and load it back.

Sharing, cycles, dtypes and static data survive. No pickle is used, in either direction:
classes are recorded by ``module:qualname`` and found again by import (or from ``classes=``).
"""

from __future__ import annotations

import importlib
import json
import os
import zipfile
from typing import Any

import jax
import numpy as np

from . import _tables
from ._errors import GraphFileError, at
from ._node import ReffableTreeNode

FORMAT = "simgraph-graph"
VERSION = 1
_META = "__simgraph__"


def save(path: str | os.PathLike, graph: Any) -> None:
    """Write ``graph`` to ``path`` (a ``.npz`` file)."""
    children, entries, nodes = _tables.walk(graph)
    paths = [jax.tree_util.keystr(p) for p in _tables.node_paths(entries, children)]
    index = {id(n): k for k, n in enumerate(nodes)}
    arrays: dict[str, np.ndarray] = {}
    described = []
    for k, node in enumerate(nodes):
        layout = type(node).__sg_layout__
        enc = _Encoder(index, arrays, paths[k])
        described.append({
            "class": f"{type(node).__module__}:{type(node).__qualname__}",
            "static": {n: enc.static(node.__dict__[n], n) for n in layout.static},
            "fields": {n: enc.value(node.__dict__[n], n) for n in layout.dynamic},
        })
    meta = {"format": FORMAT, "version": VERSION, "nodes": described}
    arrays[_META] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    with open(path, "wb") as f:
        np.savez(f, **arrays)


class _Encoder:
    def __init__(self, index: dict, arrays: dict, node_path: str):
        self.index, self.arrays, self.node_path = index, arrays, node_path

    def value(self, v: Any, where: str) -> Any:
        if isinstance(v, ReffableTreeNode):
            return {"t": "ref", "v": self.index[id(v)]}
        if v is None or isinstance(v, (bool, int, float, complex, str)):
            return self.static(v, where)
        if isinstance(v, (np.ndarray, np.generic, jax.Array)):
            key = f"a{len(self.arrays)}"
            self.arrays[key] = np.asarray(v)
            return {"t": "array", "k": key, "scalar": isinstance(v, np.generic)}
        if isinstance(v, (list, tuple)):
            return {"t": type(v).__name__, "v": [self.value(x, f"{where}[{i}]") for i, x in enumerate(v)]}
        if isinstance(v, dict) and all(isinstance(k, str) for k in v):
            return {"t": "dict", "v": {k: self.value(x, f"{where}[{k!r}]") for k, x in v.items()}}
        raise self._unsupported(v, where)

    def static(self, v: Any, where: str) -> Any:
        if v is None:
            return {"t": "none"}
        if isinstance(v, (bool, int, float, str)):
            return {"t": type(v).__name__, "v": v}
        if isinstance(v, complex):
            return {"t": "complex", "v": [v.real, v.imag]}
        if isinstance(v, tuple):
            return {"t": "tuple", "v": [self.static(x, f"{where}[{i}]") for i, x in enumerate(v)]}
        raise self._unsupported(v, where)

    def _unsupported(self, v: Any, where: str) -> GraphFileError:
        return GraphFileError(
            f"{at(self.node_path)}.{where}: cannot save a {type(v).__name__}. Saved graphs "
            "hold arrays, numbers, strings, None, lists, tuples, str-keyed dicts and nodes."
        )


def load(path: str | os.PathLike, classes: dict[str, type] | None = None) -> Any:
    """Read a graph written by :func:`save`; ``classes`` maps qualnames to classes to use."""
    meta, arrays = _read(path)
    described = meta["nodes"]
    nodes = [object.__new__(_find_class(d["class"], classes, path)) for d in described]
    for k, (node, d) in enumerate(zip(nodes, described)):
        layout = type(node).__sg_layout__
        if set(d["fields"]) != set(layout.dynamic) or set(d["static"]) != set(layout.static):
            raise GraphFileError(
                f"{path}: node #{k} ({d['class']}) was saved with fields "
                f"{sorted(d['fields']) + sorted(d['static'])}, but the class now has "
                f"{sorted(layout.dynamic + layout.static)}. Load with the class version that saved it."
            )
        values = {n: _decode(v, nodes, arrays, path) for n, v in d["fields"].items()}
        values.update({n: _decode(v, nodes, arrays, path) for n, v in d["static"].items()})
        node.__dict__.update(values)
    return nodes[0]


def _read(path) -> tuple[dict, Any]:
    try:
        data = np.load(path, allow_pickle=False)
        raw = bytes(data[_META]) if _META in data.files else None
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, KeyError) as e:
        raise GraphFileError(f"{path}: not a readable simgraph file ({e}). It may be truncated; save it again.") from None
    if raw is None:
        raise GraphFileError(f"{path}: no simgraph description inside; was it written by simgraph.save?")
    try:
        meta = json.loads(raw.decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise GraphFileError(f"{path}: corrupt description ({e}); save the graph again.") from None
    if meta.get("format") != FORMAT:
        raise GraphFileError(f"{path}: not a simgraph graph file (format {meta.get('format')!r}).")
    if meta.get("version") != VERSION:
        raise GraphFileError(
            f"{path}: file version {meta.get('version')} is not supported by this simgraph "
            f"(reads version {VERSION}); load it with the simgraph version that wrote it."
        )
    return meta, data


def _find_class(name: str, classes: dict | None, path) -> type:
    module, _, qualname = name.partition(":")
    if classes:
        for key in (name, qualname, qualname.rpartition(".")[2]):
            if key in classes:
                return classes[key]
    try:
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        raise GraphFileError(
            f"{path}: class {name} cannot be imported; pass it as load(..., classes={{'{qualname}': cls}})."
        ) from None
    if not (isinstance(obj, type) and issubclass(obj, ReffableTreeNode)):
        raise GraphFileError(f"{path}: {name} is not a simgraph node class")
    return obj


def _decode(v: dict, nodes: list, arrays, path) -> Any:
    t = v.get("t")
    if t == "ref":
        return nodes[v["v"]]
    if t == "none":
        return None
    if t in ("bool", "int", "float", "str"):
        return v["v"]
    if t == "complex":
        return complex(*v["v"])
    if t == "array":
        if v["k"] not in arrays.files:
            raise GraphFileError(f"{path}: array {v['k']} is missing; the file is truncated or edited.")
        a = arrays[v["k"]]
        return a[()] if v.get("scalar") else a
    if t in ("list", "tuple"):
        items = [_decode(x, nodes, arrays, path) for x in v["v"]]
        return items if t == "list" else tuple(items)
    if t == "dict":
        return {k: _decode(x, nodes, arrays, path) for k, x in v["v"].items()}
    raise GraphFileError(f"{path}: unknown value tag {t!r}; the file is corrupt or from another version.")
