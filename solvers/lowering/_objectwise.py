"""Object-by-object evaluation: rebuild the graph from ``(x, params)`` and call each node.

This is the reference semantics of the model protocol (the oracle in tests), the evaluation
for tiny graphs, and the fallback when grouped evaluation is impossible. Its traced program
grows with the number of nodes. ``rebuild`` also serves ``System.to_graph``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from . import _equations, _grouped, _kinds
from .._concrete import is_concrete
from ._model_errors import ContributionError, MethodError, ModelError


def columns(an, x, params, batch: tuple = ()) -> list:
    """Per kind, per column: a sequence of per-member values (numpy on host when concrete)."""
    host = is_concrete((x, params))
    xp = np if host else jnp
    x = xp.asarray(x)
    nb = len(batch)
    out = []
    for kind in an.kinds:
        given = params[kind.label]
        cols = []
        for j, c in enumerate(kind.columns):
            if c.unknown:
                arr = xp.reshape(x[..., kind.xidx[j]], batch + (kind.count,) + c.shape)
            else:
                arr = xp.asarray(given[c.label])
            if nb and arr.ndim == nb + 1 + len(c.shape):  # batched: members first
                arr = xp.moveaxis(arr, nb, 0)
            cols.append(list(arr) if host else [arr[i] for i in range(kind.count)])
        out.append(cols)
    return out


def rebuild(an, cols: list) -> list:
    """New node objects (one per node, references wired) from per-member column values."""
    nodes = [object.__new__(an.kinds[k].cls) for k in an.kind_of.tolist()]
    for kind, kcols in zip(an.kinds, cols):
        dicts = [nodes[k].__dict__ for k in kind.members.tolist()]
        statics = dict(zip(_kinds.field_names(kind.cls)[1], kind.statics))
        for d in dicts:
            d.update(statics)
        for f in kind.fields:  # column by column: one tight loop per field
            if f.treedef is None and f.items[0][0] == "col":
                for d, v in zip(dicts, kcols[f.items[0][1]]):
                    d[f.name] = v
            elif f.treedef is None and f.items[0][0] == "ref":
                for d, t in zip(dicts, kind.slots[:, f.items[0][1]].tolist()):
                    d[f.name] = nodes[t]
            elif f.treedef is None:
                for d in dicts:
                    d[f.name] = None
            else:
                slots = kind.slots.tolist()
                for row, d in enumerate(dicts):
                    d[f.name] = _kinds.build_field(f, [c[row] for c in kcols], lambda s: nodes[slots[row][s]])
    return nodes


def _call(an, nodes, k: int, method: str, *args):
    cls = type(nodes[k])
    try:
        return getattr(nodes[k], method)(*args)
    except ModelError:
        raise
    except Exception as err:
        raise MethodError(
            f"{_kinds.node_path(an, k)}: {cls.__name__}.{method}() failed: {type(err).__name__}: {err}"
        ) from err


def _output(an, k: int, value, method: str):
    """`as_output` of node ``k``'s method, its errors naming the node's key path."""
    return _named(an, k, _grouped.as_output, value, an.kinds[an.kind_of[k]].cls, method)


def _named(an, k: int, check, *args):
    """``check(*args)`` (a check of a method's return value), its `MethodError` naming the
    key path of node ``k``, as grouped evaluation's errors do."""
    try:
        return check(*args)
    except MethodError as err:
        raise type(err)(f"{_kinds.node_path(an, k)}: {err}") from None


def evaluate(an, nodes: list, evaluated: list):
    """Residual and contributions of every node: ``(res {k: array}, [(element, target, term)])``."""
    index = {id(node): k for k, node in enumerate(nodes)}
    res, terms = {}, []
    for k in evaluated:
        kind = an.kinds[an.kind_of[k]]
        if kind.method("residual"):
            res[k] = _output(an, k, _call(an, nodes, k, "residual"), "residual")
        if kind.method("contributions"):
            allowed = {k, *kind.slots[an.pos_of[k]].tolist()}
            pairs = _named(an, k, _grouped._pairs, _call(an, nodes, k, "contributions"), kind.cls)
            for i, (node, term) in enumerate(pairs):
                t = index.get(id(node))
                if t not in allowed:
                    raise ContributionError(
                        f"{_kinds.node_path(an, k)}: {kind.cls.__name__}.contributions() term {i} "
                        f"targets {node!r}, which is not referenced by the element's own fields; "
                        "contributions may only go to nodes the element references directly."
                    )
                terms.append((k, t, i, _output(an, k, term, "contributions")))
    return res, terms


class Objectwise:
    """Evaluates ``F(x, params)`` by calling each node's methods on a rebuilt graph."""

    def __init__(self, an, params_shape):
        self.an = an
        self.evaluated = [k for k in range(an.n_nodes)
                          if any(an.kinds[an.kind_of[k]].method(m) for m in ("residual", "contributions"))]
        self.stepped = [k for k in range(an.n_nodes) if an.kinds[an.kind_of[k]].method("step_limit")]
        x = jax.ShapeDtypeStruct((an.n,), an.x_dtype)
        self._probe: dict = {}
        jax.eval_shape(self._record, x, params_shape)
        res, terms = self._probe["res"], self._probe["terms"]
        self.owners = sorted(res)  # nodes with equations, in node order
        assign = [(np.asarray([k]), shape) for k, (shape, _) in res.items()]
        dtypes = [dt for _, dt in res.values()] + [dt for *_, dt in terms]
        self.eq = _equations.layout(an.n_nodes, assign, dtypes)
        for e, t, i, shape, _ in terms:
            _equations.target_shape(an, self.eq, np.asarray([e]), np.asarray([t]), shape, i)

    def _record(self, x, params):
        """Abstract evaluation at build: residual shapes and contribution targets (no tracers kept)."""
        nodes = rebuild(self.an, columns(self.an, x, params))
        res, terms = evaluate(self.an, nodes, self.evaluated)
        self._probe["res"] = {k: (tuple(r.shape), r.dtype) for k, r in res.items()}
        self._probe["terms"] = [(e, t, i, tuple(v.shape), v.dtype) for e, t, i, v in terms]
        if self.stepped:
            self._steps(nodes, nodes)
        return x

    def node_residuals(self, nodes: list) -> list:
        """Each node's residual plus the contributions it receives, in node order."""
        res, terms = evaluate(self.an, nodes, self.evaluated)
        for _, t, _, term in terms:
            shape = self.eq.shape(t)
            pad = (1,) * (len(shape) - term.ndim)
            res[t] = res[t] + jnp.broadcast_to(jnp.reshape(term, pad + term.shape), shape)
        return [jnp.asarray(res[k], self.eq.dtype).reshape(-1) for k in sorted(res)]

    def residual(self, x, params):
        pieces = self.node_residuals(rebuild(self.an, columns(self.an, x, params)))
        return jnp.concatenate(pieces) if pieces else jnp.zeros(0, self.eq.dtype)

    def _steps(self, old: list, new: list):
        out = []
        for k in self.stepped:
            value = _output(self.an, k, _call(self.an, old, k, "step_limit", new[k]), "step_limit")
            if value.shape != ():
                raise MethodError(f"{_kinds.node_path(self.an, k)}: step_limit() must return a scalar, "
                                  f"got shape {value.shape}.")
            out.append(value)
        return out

    def step_limit(self, x, dx, params):
        if not self.stepped:
            return None
        old = rebuild(self.an, columns(self.an, x, params))
        new = rebuild(self.an, columns(self.an, x + dx, params))
        return jnp.minimum(jnp.min(jnp.stack([jnp.asarray(v, x.dtype) for v in self._steps(old, new)])), 1)

    def pattern(self, params) -> tuple[np.ndarray, np.ndarray]:
        """Jacobian pattern by data flow from each node's unknown leaves to each node's equations."""
        from . import _pattern

        an = self.an
        leaves, where = [], []
        for kind in an.kinds:
            for j, c in enumerate(kind.columns):
                if c.unknown:
                    leaves.extend(jax.ShapeDtypeStruct(c.shape, an.x_dtype) for _ in range(kind.count))
                    where.extend(kind.xidx[j])

        def fn(leaves, params):
            cols = columns(an, jnp.zeros(an.n, an.x_dtype), params)
            it = iter(leaves)
            for kind, kcols in zip(an.kinds, cols):
                for j, c in enumerate(kind.columns):
                    if c.unknown:
                        kcols[j] = [next(it) for _ in range(kind.count)]
            return self.node_residuals(rebuild(an, cols))

        deps = _pattern.dependencies(jax.make_jaxpr(fn)(leaves, params))
        rows, cols = [], []
        for k, bits in zip(self.owners, deps):
            used = [where[i] for i in _pattern.bits(bits) if i < len(where)]
            if used:
                r, c = _pattern.outer(self.eq.rows(np.asarray([k])), np.concatenate(used)[None, :])
                rows.append(r)
                cols.append(c)
        return _pattern.unique(rows, cols, self.eq.m, an.n)
