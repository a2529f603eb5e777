"""Grouped ("lowered") evaluation: each element method traced once per group under ``vmap``.

Data of each kind is stacked (``params``) or gathered from ``x``; each group gathers its
neighbourhood with static index arrays, calls the element methods on view objects under
``jax.vmap``, and all residuals and contributions are assembled into ``F`` with one
scatter-add. The traced program grows with the number of groups, not of elements.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from . import _equations, _groups, _kinds
from ._model_errors import ContributionError, ModelError, MethodError


def as_output(value, cls: type, method: str):
    """A method's return value as an array, or a clear error."""
    try:
        return jnp.asarray(value)
    except ModelError:  # a reference too far away, read by the conversion
        raise
    except (TypeError, ValueError):  # jnp.asarray(None) raises ValueError
        what = "None (is a `return` missing?)" if value is None else type(value).__name__
        raise MethodError(
            f"{cls.__name__}.{method}() returned {what}; it must return an array "
            "or a number (for contributions(): pairs (node, array))."
        ) from None


def _pairs(items, cls, method: str = "contributions"):
    try:
        pairs = [tuple(p) for p in items]
    except TypeError:
        pairs = None
    if pairs is None or any(len(p) != 2 for p in pairs):
        raise MethodError(
            f"{cls.__name__}.{method}() must return a sequence of (node, array) pairs, got "
            f"{type(items).__name__}: e.g. `return ((self.a, x), (self.b, -x))`."
        )
    return pairs


def vmap(fn, group, **options):
    """``jax.vmap`` of ``fn`` over the members of ``group``, told their count: a group whose
    data has no array (references only, e.g. a wrapper of a wrapper) still maps."""
    return jax.vmap(fn, axis_size=group.count, **options)


def element_fn(an, group, record: dict):
    """``fn(data) -> [residual?, *contribution terms]`` for one element of ``group``."""
    kind = an.kinds[group.kind]
    has_res, has_con = kind.method("residual") is not None, kind.method("contributions") is not None
    direct = range(1 + kind.n_slots)

    def fn(data):
        views = _groups.make_views(an, group, data)
        me, outs = views[0], []
        if has_res:
            record["method"] = "residual"
            outs.append(as_output(me.residual(), kind.cls, "residual"))
        if has_con:
            record["method"] = "contributions"
            targets = []
            for i, (node, term) in enumerate(_pairs(me.contributions(), kind.cls)):
                j = next((group.slots[j].alias for j in direct if views[j] is node), None)
                if j is None:
                    raise ContributionError(
                        f"{kind.cls.__name__}.contributions() term {i} targets {node!r}, which is "
                        "not referenced by the element's own fields. Contributions may only go to "
                        f"nodes the element references directly ({_slots(kind)})."
                    )
                targets.append(j)
                outs.append(as_output(term, kind.cls, "contributions"))
            record["targets"] = tuple(targets)
        return outs

    return fn


def _slots(kind) -> str:
    return ", ".join("self" + jax.tree_util.keystr(p) for p in kind.slot_paths) or "none"


def step_fn(an, group):
    """``fn(old data, new data) -> scalar`` step fraction of one element."""
    kind = an.kinds[group.kind]

    def fn(old, new):
        out = as_output(_groups.make_views(an, group, old)[0].step_limit(
            _groups.make_views(an, group, new)[0]), kind.cls, "step_limit")
        if out.shape != ():
            raise MethodError(f"{kind.cls.__name__}.step_limit() must return a scalar, got shape {out.shape}.")
        return out

    return fn


def probe(an, group) -> int | None:
    """Trace a group's methods abstractly: record shapes and targets, or return a hop to expand."""
    kind = an.kinds[group.kind]
    record: dict = {"method": "residual" if kind.method("residual") else "contributions"}
    data = _groups.abstract_data(an, group)
    try:
        if kind.method("residual") or kind.method("contributions"):
            outs = jax.eval_shape(vmap(element_fn(an, group, record), group), data)
            group.out_dtypes = tuple(np.dtype(o.dtype) for o in outs)
            shapes = [tuple(o.shape[1:]) for o in outs]
            if kind.method("residual"):
                group.res_shape = shapes.pop(0)
            group.con_targets, group.con_shapes = record.get("targets", ()), tuple(shapes)
        if kind.method("step_limit"):
            record["method"] = "step_limit"
            jax.eval_shape(vmap(step_fn(an, group), group), data, data)
            group.has_step = True
    except _groups.NeedHop as need:
        return need.slot
    except Exception as err:
        raise traced_error(an, group, record["method"], err) from err
    return None


def traced_error(an, group, method: str, err: Exception) -> Exception:
    """The error to raise when tracing ``method`` of a group's kind failed: our model errors
    prefixed with the first node's key path, anything else as a `MethodError` naming it."""
    where = _kinds.node_path(an, int(group.slots[0].nodes[0]))
    if isinstance(err, ModelError):
        return type(err)(f"{where}: {err}")
    others = {0: "", 1: " (and 1 similar node)"}.get(group.count - 1,
                                                       f" (and {group.count - 1} similar nodes)")
    return MethodError(
        f"{an.kinds[group.kind].cls.__name__}.{method}() failed for {where}{others} when "
        f"traced with abstract values: {type(err).__name__}: {err}")


def plan(an, methods: tuple = _groups.METHODS, probe_fn=None) -> list:
    """All groups of the graph, probed: neighbourhoods expanded where methods read them.

    ``methods``/``probe_fn``: which kinds to group and how to probe them (default: the
    residual's methods; the transient lowering plans ``charge`` with its own probe)."""
    probe_fn = probe if probe_fn is None else probe_fn
    groups = []
    for k, kind in enumerate(an.kinds):
        if not any(kind.method(m) for m in methods):
            continue
        work = _groups.split(an, k, np.arange(kind.count), frozenset())
        while work:
            group = work.pop(0)
            need = probe_fn(an, group)
            if need is None:
                groups.append(group)
            else:
                work.extend(_groups.split(an, k, group.rows, group.expanded | {need}))
    return groups


@dataclasses.dataclass(eq=False)
class _Output:
    """Where one vmapped output lands in F: its rows (c, size) and the shape to broadcast to."""

    rows: np.ndarray
    shape: tuple  # per-element shape to broadcast the output to (before flattening)
    term: tuple  # per-element shape the method returns


def equations(an, groups) -> _equations.Equations:
    """The residual layout of a grouped plan."""
    assign = [(g.slots[0].nodes, g.res_shape) for g in groups if g.res_shape is not None]
    return _equations.layout(an.n_nodes, assign, [d for g in groups for d in g.out_dtypes])


class Grouped:
    """Evaluates ``F(x, params)`` and step limits group by group (static structure only)."""

    def __init__(self, an, groups: list, eq: _equations.Equations):
        self.an, self.groups, self.eq = an, groups, eq
        self.outputs = {}
        for g in groups:
            outs = []
            if g.res_shape is not None:
                outs.append(_Output(eq.rows(g.slots[0].nodes), g.res_shape, g.res_shape))
            for i, (j, shape) in enumerate(zip(g.con_targets, g.con_shapes)):
                targets = g.slots[j].nodes
                tshape = _equations.target_shape(an, eq, g.slots[0].nodes, targets, shape, i)
                outs.append(_Output(eq.rows(targets), tshape, shape))
            self.outputs[id(g)] = outs
        self.fns = {id(g): element_fn(an, g, {}) for g in groups}
        self.steps = {id(g): step_fn(an, g) for g in groups if g.has_step}
        rows = [o.rows.reshape(-1) for g in groups for o in self.outputs[id(g)]]
        self.rows = index(np.concatenate(rows) if rows else np.zeros(0, np.int64))

    def residual(self, x, params):
        stores = Stores(self.an, x, params)
        return self.assemble([(g, vmap(self.fns[id(g)], g)(gather(g, stores)))
                              for g in self.groups if self.outputs[id(g)]])

    def assemble(self, outputs: list):
        """``F`` from ``(group, vmapped outputs)`` pairs of every group with outputs, in order."""
        vals = []
        for g, values in outputs:
            for value, out in zip(values, self.outputs[id(g)]):
                pad = (1,) * (len(out.shape) - len(out.term))
                value = jnp.reshape(value, (g.count,) + pad + out.term)
                vals.append(jnp.broadcast_to(value, (g.count,) + out.shape).reshape(-1))
        if not vals:
            return jnp.zeros(self.eq.m, self.eq.dtype)
        flat = jnp.concatenate([v.astype(self.eq.dtype) for v in vals])
        return jnp.zeros(self.eq.m, self.eq.dtype).at[self.rows].add(flat, mode="promise_in_bounds")

    def step_limit(self, x, dx, params):
        if not self.steps:
            return None
        old, new = Stores(self.an, x, params), Stores(self.an, x + dx, params)
        mins = [jnp.min(vmap(self.steps[id(g)], g)(gather(g, old), gather(g, new)))
                for g in self.groups if g.has_step]
        return jnp.minimum(jnp.min(jnp.stack([jnp.asarray(m, x.dtype) for m in mins])), 1)


def index(a: np.ndarray) -> np.ndarray:
    """Unsigned indices: JAX then skips the negative-index fix-up ops in every gather/scatter."""
    return a.astype(np.uint32 if a.size == 0 or a.max() < 2**32 else np.uint64, copy=False)


class Stores:
    """Per-kind column arrays of one evaluation: parameters, and unknowns gathered from x."""

    def __init__(self, an, x, params):
        self.an, self.x, self.params, self.cache = an, x, params, {}

    def __getitem__(self, k: int) -> list:
        cols = self.cache.get(k)
        if cols is None:
            kind = self.an.kinds[k]
            given = self.params[kind.label]
            cols = [jnp.reshape(self.x[index(kind.xidx[j])], (kind.count,) + c.shape) if c.unknown
                    else given[c.label] for j, c in enumerate(kind.columns)]
            self.cache[k] = cols
        return cols


def gather(group, stores: Stores) -> list:
    """The data of every (non-aliased) slot of a group, one row per member."""
    data = []
    for j, slot in enumerate(group.slots):
        if slot.alias != j:
            data.append(None)
        elif slot.identity:
            data.append(list(stores[slot.kind]))
        else:
            rows = index(slot.rows)
            data.append([col[rows] for col in stores[slot.kind]])
    return data
