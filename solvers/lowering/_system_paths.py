"""Names for the entries of a System: key paths of unknowns and equations, lookups, updates.

Everything here is built lazily (a 10^5-node graph has ~10^5 paths) and cached on the
System's static structure.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import itertools
import re

import jax
import jax.numpy as jnp
import numpy as np

import simgraph as sg
from . import _casts, _kinds


def _suffixes(shape: tuple) -> list[str]:
    if shape == ():
        return [""]
    return ["[" + ", ".join(map(str, i)) + "]" for i in itertools.product(*(range(d) for d in shape))]


def _normalize(path: str) -> str:
    path = path.strip()
    if path in ("", "<root>"):
        return ""
    return path if path.startswith((".", "[")) else "." + path


_TOKEN = re.compile(r"\.([A-Za-z_]\w*)|\[(-?\d+)\]|\['([^']*)'\]|\[\"([^\"]*)\"\]")


def _tokens(path: str) -> list | None:
    """``.a[3]['k']`` -> ['a', 3, 'k'] (attribute names, indices, dict keys); None if malformed."""
    out, pos = [], 0
    for m in _TOKEN.finditer(path):
        if m.start() != pos:
            return None
        name, num, k1, k2 = m.groups()
        out.append(("attr", name) if name is not None else ("item", int(num) if num is not None else k1 or k2))
        pos = m.end()
    return out if pos == len(path) else None


@dataclasses.dataclass(frozen=True, eq=False)
class Selection:
    """The parameter leaves one ``solve_batch`` key selects, resolved before any tracing.

    Hashable by its leaves (a static part of the compiled solve); ``key`` is the key as the
    caller wrote it, for messages."""

    key: str
    picked: tuple  # (kind, column, row) per selected leaf, canonical order

    def __eq__(self, other) -> bool:
        return isinstance(other, Selection) and self.picked == other.picked

    def __hash__(self) -> int:
        return hash(self.picked)

    def __repr__(self) -> str:
        return self.key


def _no_nodes() -> None:
    return None


class NodeList(list):
    """A graph's nodes in node order, with each node's index by identity (built once: a
    lookup per located node would scan the list, quadratic over a network's nodes)."""

    @functools.cached_property
    def ids(self) -> dict[int, int]:
        return {id(n): k for k, n in enumerate(self)}


class Paths:
    """Key-path views of one System structure. Methods that may meet the user's node objects
    take ``nodes``: a callable returning the graph's nodes (a `NodeList`), or None when the
    System holds no graph (it came out of a transform); key paths work without it."""

    def __init__(self, structure):
        self.s = structure
        self._leaves: dict | None = None
        self._nodes: dict | None = None

    def _leaf_path(self, k: int, col) -> str:
        keys = _kinds.node_paths(self.s.an)[k] + (jax.tree_util.GetAttrKey(col.field),) + col.sub
        return jax.tree_util.keystr(keys)

    def unknowns(self) -> list[str]:
        an = self.s.an
        out: list = [""] * an.n
        for kind in an.kinds:
            for j, col in enumerate(kind.columns):
                if col.unknown:
                    sfx = _suffixes(col.shape)
                    for k, idx in zip(kind.members.tolist(), kind.xidx[j].tolist()):
                        base = self._leaf_path(k, col)
                        for i, s in zip(idx, sfx):
                            out[i] = base + s
        return out

    def residuals(self) -> list[str]:
        an, eq = self.s.an, self.s.eq
        out = []
        for k in np.flatnonzero(eq.size).tolist():
            base = jax.tree_util.keystr(_kinds.node_paths(an)[k]) + ".residual"
            out.extend(base + s for s in _suffixes(eq.shape(k)))
        return out

    def _index(self):
        if self._leaves is None:
            an = self.s.an
            self._nodes = {jax.tree_util.keystr(p): k for k, p in enumerate(_kinds.node_paths(an))}
            self._leaves = {}
            for ki, kind in enumerate(an.kinds):
                for j, col in enumerate(kind.columns):
                    for row, k in enumerate(kind.members.tolist()):
                        self._leaves[self._leaf_path(k, col)] = (ki, j, row)
        return self._nodes, self._leaves

    def resolve(self, path: str, nodes=_no_nodes):
        """Follow a key path from the root through any references: ``("node", k)``,
        ``("leaf", (kind, column, row))`` or None. Accepts non-canonical paths when the
        graph's nodes are at hand, else canonical ones."""
        tokens = _tokens(_normalize(path))
        if tokens is None:
            return None
        hit = self._canonical(_normalize(path))
        origin = None if hit is not None else nodes()
        if not origin:
            return hit
        ids = origin.ids
        obj, k, i = origin[0], 0, 0
        while i < len(tokens):
            op, name = tokens[i]
            if op != "attr" or name not in _kinds.field_names(type(obj))[0]:
                return None
            value, j = obj.__dict__[name], i + 1
            while j < len(tokens) and tokens[j][0] == "item" and isinstance(value, (list, tuple, dict)):
                try:
                    value = value[tokens[j][1]]
                except (IndexError, KeyError, TypeError):
                    return None
                j += 1
            if not isinstance(value, sg.ReffableTreeNode):
                return self._leaf(k, name, tokens[i + 1:])
            obj, k, i = value, ids[id(value)], j
        return ("node", k)

    def _canonical(self, path: str):
        """``resolve`` by the canonical key paths alone (no node objects needed)."""
        nodes, leaves = self._index()
        if path in nodes:
            return ("node", nodes[path])
        return ("leaf", leaves[path]) if path in leaves else None

    def _leaf(self, k: int, field: str, rest: list):
        an = self.s.an
        ki = int(an.kind_of[k])
        sub = "".join(f"[{v!r}]" for _, v in rest)
        for j, col in enumerate(an.kinds[ki].columns):
            if col.field == field and jax.tree_util.keystr(col.sub) == sub:
                return ("leaf", (ki, j, int(an.pos_of[k])))
        return None

    def node(self, where, nodes=_no_nodes) -> int:
        """Node index of a node object or node key path."""
        if isinstance(where, sg.ReffableTreeNode):
            origin = nodes()
            k = origin.ids.get(id(where)) if origin else None
            if k is None:
                raise sg.GraphError(
                    f"{where!r} is not a node of the graph this System was built from (a System "
                    "built inside a transform holds copies). Locate it by key path instead."
                )
            return k
        hit = self.resolve(str(where), nodes)
        if hit is None or hit[0] != "node":
            path = _normalize(str(where))
            raise sg.GraphError(f"no node at key path {path!r}.{_close(path, self._index()[0])}")
        return hit[1]

    def locate(self, where, equations: bool, nodes=_no_nodes) -> slice:
        an = self.s.an
        if not equations and isinstance(where, str):
            hit = self.resolve(where, nodes)
            if hit is not None and hit[0] == "leaf":
                kind = an.kinds[hit[1][0]]
                if not kind.columns[hit[1][1]].unknown:
                    raise sg.GraphError(f"{_normalize(where)} is a parameter, not an unknown; "
                                        "parameters live in params (see set_params).")
                idx = kind.xidx[hit[1][1]][hit[1][2]]
                return slice(int(idx[0]), int(idx[-1]) + 1)
        k = self.node(where, nodes)
        start, size = (self.s.eq.start, self.s.eq.size) if equations else (an.x_start, an.x_size)
        return slice(int(start[k]), int(start[k] + size[k]))

    def select(self, where, nodes=_no_nodes) -> list[tuple[int, int, int]]:
        """``(kind, column, row)`` of every parameter leaf ``where`` selects, in canonical order."""
        an = self.s.an
        if isinstance(where, Selection):
            return list(where.picked)
        if isinstance(where, str):
            hit = self.resolve(where, nodes)
            hit = hit[1] if hit is not None and hit[0] == "leaf" else None
            if hit is not None:
                if an.kinds[hit[0]].columns[hit[1]].unknown:
                    raise sg.GraphError(
                        f"{_normalize(where)} is an unknown, not a parameter: the solve finds its "
                        "value. Its start comes from the graph (set the field before solving) "
                        "or from x0= (solve_batch(..., x0=...), in the order of System.x0: "
                        "x0.at[system.locate(path)].set(value)).")
                return [hit]
            if where.startswith((".", "[")) or "[" in where:
                raise sg.GraphError(f"no parameter at key path {where!r}.{_close(where, self._index()[1])}")
        if isinstance(where, type):
            picked = [(ki, j, row) for ki, kind in enumerate(an.kinds) if issubclass(kind.cls, where)
                      for j, c in enumerate(kind.columns) if not c.unknown for row in range(kind.count)]
        elif isinstance(where, str):
            cls_name, _, field = where.rpartition(".")
            picked = [(ki, j, row) for ki, kind in enumerate(an.kinds)
                      if not cls_name or kind.cls.__name__ == cls_name
                      for j, c in enumerate(kind.columns) if not c.unknown and c.field == field
                      for row in range(kind.count)]
        else:
            pred, picked, origin = sg.leaf_filter(where), [], nodes()
            for ki, kind in enumerate(an.kinds):
                for j, c in enumerate(kind.columns):
                    if not c.unknown:
                        for row, k in enumerate(kind.members.tolist()):
                            owner = None if origin is None else origin[k]
                            info = sg.LeafInfo(self._leaf_path(k, c), owner, c.field, "state")
                            if pred(info):
                                picked.append((ki, j, row))
        picked.sort(key=lambda p: (int(an.kinds[p[0]].members[p[2]]), p[1]))
        return picked

    def set_params(self, params: dict, updates: dict, nodes=_no_nodes) -> dict:
        an = self.s.an
        new = {label: dict(cols) for label, cols in params.items()}
        for where, value in updates.items():
            picked = self.select(where, nodes)
            if not picked:
                raise sg.GraphError(
                    f"{where!r} selects no parameter leaf. Use a key path such as "
                    "'.elements[0].g' (as jax.tree_util.keystr prints it), a field name, a node class or a "
                    "callable on sg.LeafInfo.")
            value = _host_or_traced(value)
            per_leaf = self.per_leaf(repr(where), picked, value.shape)
            self.check_dtype(repr(where), picked, value.dtype, value, 0 if per_leaf else None)
            value = jnp.asarray(self.to_leaf_type(picked, value))  # after the check: x64 off
            by_col: dict = {}
            for i, (ki, j, row) in enumerate(picked):
                by_col.setdefault((ki, j), []).append((row, i))
            for (ki, j), items in by_col.items():
                kind, col = an.kinds[ki], an.kinds[ki].columns[j]
                rows = np.asarray([r for r, _ in items])
                vals = value[np.asarray([i for _, i in items])] if per_leaf else jnp.broadcast_to(
                    value, (len(rows),) + col.shape)
                old = new[kind.label][col.label]
                vals = vals.astype(jnp.result_type(old))
                if len(rows) == kind.count and np.all(rows == np.arange(kind.count)):
                    new[kind.label][col.label] = vals
                else:
                    new[kind.label][col.label] = jnp.asarray(old).at[rows].set(vals)
        return new

    def leaf_path(self, item: tuple) -> str:
        """The key path of a selected leaf ``(kind, column, row)``."""
        kind = self.s.an.kinds[item[0]]
        return self._leaf_path(int(kind.members[item[2]]), kind.columns[item[1]])

    def check_dtype(self, label: str, picked, dtype, values=None, axis=None) -> None:
        """Raise if values of ``dtype`` (or, when concrete, the ``values`` themselves) would
        change in the selected leaves' type: `_casts.check_dtype` holds the rule."""
        _casts.check_dtype(self, label, picked, dtype, values, axis)

    def to_leaf_type(self, picked, host):
        """Checked host values in their leaves' one dtype (`_casts.to_leaf_type`)."""
        return _casts.to_leaf_type(self, picked, host) if isinstance(host, np.ndarray) else host

    def per_leaf(self, label: str, picked, shape: tuple) -> bool:
        """Whether a value of ``shape`` gives one value per selected leaf (True) or one for all
        (False); raise if it fits neither."""
        an = self.s.an
        shapes = {an.kinds[ki].columns[j].shape for ki, j, _ in picked}
        per_leaf = len(shapes) == 1 and shape == (len(picked),) + next(iter(shapes))
        if not per_leaf and any(shape != s for s in shapes):
            raise sg.GraphError(
                f"value for {label} has shape {shape}; the {len(picked)} selected "
                f"leaves have shape(s) {sorted(shapes)}. Pass one value of the leaf shape, or "
                "one per selected leaf stacked on a leading axis.")
        return per_leaf

    # -- solve_batch keys, resolved before tracing -----------------------------------------
    def sweep_key(self, key, nodes=_no_nodes) -> Selection:
        """The parameter leaves a ``solve_batch`` key selects; a clear error if it selects none.

        A key path (leading dot optional), ``"Class.field"``, a bare field name, a node class
        with a single parameter field, or a filter callable / tuple as ``sg.split`` takes."""
        if isinstance(key, Selection):
            return key
        if isinstance(key, type):
            picked = self._class_key(key)
        elif isinstance(key, str):
            hit = self.resolve(key, nodes)
            if hit is not None and hit[0] == "node":
                raise sg.GraphError(
                    f"solve_batch key {key!r} is a node, not a parameter: name one of its "
                    f"fields, e.g. {', '.join(self._fields_of(hit[1]))}.")
            path_like = key.strip().startswith((".", "[")) or "[" in key
            picked = [] if hit is None and path_like else self.select(key.strip(), nodes)
        else:
            picked = self.select(key, nodes)
        if not picked:
            raise sg.GraphError(self._no_such_key(key))
        name = key.__name__ if isinstance(key, type) else key if isinstance(key, str) else repr(key)
        return Selection(name, tuple(picked))

    def _class_key(self, cls: type) -> list:
        kinds = [k for k in self.s.an.kinds if issubclass(k.cls, cls)]
        fields = sorted({c.field for k in kinds for c in k.columns if not c.unknown})
        if len(fields) > 1:
            raise sg.GraphError(
                f"solve_batch key {cls.__name__} (a node class) would set every parameter of "
                f"its nodes ({', '.join(fields)}) to the same values. Name the field: "
                f"{{'{cls.__name__}.{fields[0]}': values}}.")
        return self.select(cls)

    def _fields_of(self, k: int) -> list:
        base = jax.tree_util.keystr(_kinds.node_paths(self.s.an)[k])
        kind = self.s.an.kinds[int(self.s.an.kind_of[k])]
        return [repr(base + "." + f) for f in dict.fromkeys(c.field for c in kind.columns
                                                             if not c.unknown)][:4]

    def _parameter_names(self) -> list:
        """Key paths of every parameter leaf, then every ``Class.field`` of a parameter."""
        leaves = self._index()[1]
        kinds = self.s.an.kinds
        paths = [p for p, (ki, j, _) in itertools.islice(leaves.items(), 20000)
                 if not kinds[ki].columns[j].unknown]
        fields = {f"{k.cls.__name__}.{c.field}" for k in kinds for c in k.columns if not c.unknown}
        return paths + sorted(fields)

    def _static_field(self, text: str) -> str:
        return _static_field_of(self.s.an.kinds, text)

    def _no_such_key(self, key) -> str:
        names = self._parameter_names()
        text = key.strip() if isinstance(key, str) else getattr(key, "__name__", repr(key))
        near = difflib.get_close_matches(_normalize(text), names, n=3, cutoff=0.5)
        near += [m for m in difflib.get_close_matches(text, names, n=3, cutoff=0.5) if m not in near]
        hint = f" Did you mean {', '.join(map(repr, near[:4]))}?" if near else ""
        example = f" (e.g. {names[0]!r})" if names else ""
        static = self._static_field(text)
        if static:
            return (f"solve_batch key {key!r} names {static}, a static field: metadata, part "
                    "of the graph's structure, not a parameter, so it cannot be swept. Declare "
                    "it as a data field (without sg.static()) to sweep it, or solve once per "
                    "value.")
        return (f"solve_batch key {key!r} selects no parameter of this graph.{hint} A key is a "
                f"key path as jax.tree_util.keystr prints it{example}, with or without the "
                "leading dot; 'Class.field' for that field of every node of a class; or a "
                "callable on sg.LeafInfo. list(sg.split(graph)[0]) lists every leaf's key path.")


def _static_field_of(kinds, text: str) -> str:
    """``Class.field`` of a static field that ``text`` (a key or key path) ends with, or ""."""
    owner, _, field = text.rpartition(".")
    by_class = owner and not owner.startswith(".") and "[" not in owner  # "Class.field"
    found = next((k.cls for k in kinds if field in k.cls.__sg_statics__
                  and (not by_class or k.cls.__name__ == owner)), None)
    return f"{found.__name__}.{field}" if found is not None else ""


def _close(path: str, names: dict) -> str:
    pool = list(itertools.islice(names, 20000))
    near = difflib.get_close_matches(path, pool, n=3)
    return f" Did you mean {', '.join(near)}?" if near else ""


def _host_or_traced(value):
    """A set value as a host array to check before JAX narrows it (x64 off); jax arrays and
    lists of tracers (under ``grad``) as JAX arrays."""
    if isinstance(value, jax.Array):
        return value
    try:
        return np.asarray(value)
    except jax.errors.TracerArrayConversionError:
        return jnp.asarray(value)
