"""Where each node's equations sit in ``F`` and the checks on them (shared by both evaluations).

``F`` holds every node's ``residual()`` flattened, in the canonical node order; contributions
are added to the entries of their target's residual.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from . import _kinds
from ._model_errors import ContributionError, EquationCountError, LoweringError, listing


@dataclasses.dataclass(eq=False)
class Equations:
    """Residual layout: shape, size and offset in ``F`` of each node's equations."""

    shapes: list  # distinct residual shapes
    shape_id: np.ndarray  # (N,) index into shapes, -1 for nodes without residual
    size: np.ndarray  # (N,)
    start: np.ndarray  # (N,)
    m: int
    dtype: np.dtype

    def rows(self, nodes: np.ndarray) -> np.ndarray:
        """(c, size) indices into F of the equations of ``nodes`` (all of one size)."""
        width = int(self.size[nodes[0]]) if len(nodes) else 0
        return self.start[nodes][:, None] + np.arange(width, dtype=np.int64)[None, :]

    def shape(self, node: int) -> tuple | None:
        sid = int(self.shape_id[node])
        return None if sid < 0 else self.shapes[sid]


def layout(n_nodes: int, assignments: list, dtypes: list) -> Equations:
    """``assignments``: (node ids, residual shape) pairs; nodes not listed have no equations."""
    shapes: list = []
    shape_id = np.full(n_nodes, -1, dtype=np.int64)
    size = np.zeros(n_nodes, dtype=np.int64)
    for nodes, shape in assignments:
        if shape not in shapes:
            shapes.append(shape)
        shape_id[nodes] = shapes.index(shape)
        size[nodes] = int(np.prod(shape, dtype=np.int64))
    start = np.cumsum(size) - size
    dtype = _kinds.canonical(np.result_type(*dtypes)) if dtypes else _kinds.canonical(np.float64)
    return Equations(shapes, shape_id, size, start, int(size.sum()), dtype)


def target_shape(an, eq: Equations, elements, targets, term_shape: tuple, index: int) -> tuple:
    """Check the targets of one contribution (per element) and return their residual shape."""
    missing = np.flatnonzero(eq.shape_id[targets] < 0)
    if len(missing):
        e, t = int(elements[missing[0]]), int(targets[missing[0]])
        return _fail(an, e, t, index, f"a {_cls(an, t)}, which defines no residual(). A node that "
                     "receives contributions needs its own equations: define residual() on "
                     f"{_cls(an, t)} (e.g. returning zeros of the contributions' shape)")
    ids = eq.shape_id[targets]
    odd = np.flatnonzero(ids != ids[0])
    if len(odd):  # only alike elements evaluated together (grouped) can meet this
        e, t = int(elements[odd[0]]), int(targets[odd[0]])
        raise LoweringError(
            f"{_kinds.node_path(an, e)}: {_cls(an, e)}.contributions() term {index} goes to "
            f"{_kinds.node_path(an, t)}, whose residual has shape {eq.shape(t)}, while the same "
            f"term of alike elements goes to residuals of shape {eq.shape(int(targets[0]))}: "
            "grouped evaluation needs one target shape per term. Give those residuals one "
            "shape, or use evaluation='objectwise' (slow for large graphs).")
    tshape = eq.shapes[int(ids[0])]
    try:
        ok = np.broadcast_shapes(term_shape, tshape) == tshape
    except ValueError:
        ok = False
    if not ok:
        e, t = int(elements[0]), int(targets[0])
        return _fail(an, e, t, index, f"whose residual has shape {tshape}, but the term has shape "
                     f"{term_shape}. Return a term of the target residual's shape")
    return tshape


def _cls(an, k: int) -> str:
    return an.kinds[an.kind_of[k]].cls.__name__


def _fail(an, e: int, t: int, index: int, why: str):
    raise ContributionError(
        f"{_kinds.node_path(an, e)}: {_cls(an, e)}.contributions() term {index} goes to "
        f"{_kinds.node_path(an, t)}, {why}."
    )


def counts(an, eq: Equations) -> tuple[dict, dict]:
    """Unknowns per ``Class.field`` and equations per class (for messages)."""
    unknowns: dict = {}
    for kind in an.kinds:
        for col in kind.columns:
            if col.unknown:
                key = f"{kind.cls.__name__}.{col.field}"
                unknowns[key] = unknowns.get(key, 0) + kind.count * col.size
    equations: dict = {}
    for kind in an.kinds:
        total = int(eq.size[kind.members].sum())
        if total:
            key = f"{kind.cls.__name__}.residual"
            equations[key] = equations.get(key, 0) + total
    return unknowns, equations


def check_counts(an, eq: Equations, square: bool) -> None:
    """A square solve needs as many equations as unknowns; say who brings how many."""
    if an.n == 0:
        empty = [f"{kind.cls.__name__}.{col.label}" for kind in an.kinds for col in kind.columns
                 if col.unknown]
        if empty:
            raise EquationCountError(
                f"the graph has no unknowns: its sg.unknown() fields ({listing(empty)}) hold "
                "empty arrays. Give them at least one value to solve for.")
        raise EquationCountError(
            "the graph has no unknowns: no node declares a field with sg.unknown(). Mark the "
            "values to solve for, e.g. `v: jax.Array = sg.unknown(default=0.0)`."
        )
    if not square or eq.m == an.n:
        return
    unknowns, equations = counts(an, eq)
    u = listing([f"{k} {v}" for k, v in unknowns.items()])
    e = listing([f"{k} {v}" for k, v in equations.items()]) or "none"
    hint = ("add equations (a residual) for the extra unknowns, or make some fields state "
            "instead of sg.unknown()") if eq.m < an.n else (
            "remove redundant equations, or solve in the least-squares sense: "
            "solvers.solve(graph, solvers.LevenbergMarquardt()), which accepts more equations "
            "than unknowns")
    raise EquationCountError(
        f"the system has {eq.m} equations but {an.n} unknowns. Unknowns: {u}. Equations: {e}. "
        f"To fix: {hint}."
    )
