"""Sparse linear solvers for Newton steps: graph-coloured Jacobians plus a sparse solve.

All share `SparseOperator` (the Jacobian's values aligned with a `SparsityPattern`), the
coloured Jacobian (``n_colors`` JVPs) and segment-sum products; they differ in the solve:

* `SparseLU`: level-scheduled LU with a static symbolic factorization. Pure JAX, so jit,
  vmap (batch-last layout, fast for big batches of small systems) and GPU work unchanged.
  Best when the fill stays small: ladders, trees, networks, grids up to ~10^4 unknowns.
* `SparseHostLU`: ``scipy.sparse.linalg.splu`` (SuperLU, partial pivoting) through
  ``jax.pure_callback``. Best for one large system (2-D grids of 10^5 unknowns); the host
  round trip and the sequential loop over a batch make it a poor choice for big batches.
* `SparseKrylov` (``_sparse_krylov``): preconditioned GMRES / BiCGStab, memory linear in
  nnz, iterations grow with the conditioning; for systems too large to factor.
* `SparseAuto`: picks one of them from the pattern's size, its fill and a batch-size hint.

``solve`` factors the operator's values every call (Newton calls it once per linearize)
and wraps the solve in ``lax.custom_linear_solve``, so gradients flow to ``b`` and to the
Jacobian's values through ``matvec`` without differentiating through the factorization.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ._host_lu import ORDERINGS, batch_solve, plain_solve
from ._linear import AbstractLinearSolver
from ._schur import schur_plan, schur_solve
from ._sparse_lu import lu_solver
from ._sparse_plan import LUPlan, build_plan
from ._sparsity import (
    SparsityError, SparsityPattern, column_coloring, compressed_index, compressed_jacobian,
    pattern_matvec, pattern_rmatvec, pattern_to_dense,
)


class SparseOperator(NamedTuple):
    """The Jacobian at a point, as stored by a sparse solver.

    ``data`` is either the compressed Jacobian ``J S`` (flattened ``(n_colors, m)``, when
    that is at most about twice the number of nonzeros: decompressing later, inside the
    solve, is cheaper under ``vmap``) or the pattern-aligned values. Use the solver's
    ``values(operator)`` to get values aligned with its pattern.
    """

    data: jax.Array


def as_pattern(rows, cols=None, shape=None) -> SparsityPattern:
    """Accept a `SparsityPattern` or ``(rows, cols, shape)``."""
    if isinstance(rows, SparsityPattern):
        if cols is not None or shape is not None:
            raise SparsityError("pass either a SparsityPattern or (rows, cols, shape), not both.")
        return rows
    if cols is None or shape is None:
        raise SparsityError("pass a SparsityPattern, or rows, cols and shape=(m, n).")
    return SparsityPattern(rows, cols, shape)


class _AbstractSparseSolver(AbstractLinearSolver):
    """Shared coloured linearization, products and hashing (by pattern and options)."""

    pattern: SparsityPattern

    def _key(self):
        return (type(self), self.pattern) + self._options()

    def _options(self) -> tuple:
        return ()

    def __hash__(self):
        return hash(self._key())

    def __eq__(self, other):
        return isinstance(other, _AbstractSparseSolver) and self._key() == other._key()

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable; build a new one instead.")

    def __repr__(self):
        return f"{type(self).__name__}({self.pattern!r}{''.join(', ' + repr(o) for o in self._options())})"

    @property
    def compressed(self) -> bool:
        """Whether operators hold ``J S`` (True) or pattern values (False)."""
        _, n_colors = column_coloring(self.pattern)
        return n_colors * self.pattern.shape[0] <= 2 * self.pattern.nnz + 64

    def values(self, operator) -> jax.Array:
        """The Jacobian's values aligned with ``self.pattern``."""
        if self.compressed:
            return operator.data[jnp.asarray(compressed_index(self.pattern))]
        return operator.data

    def linearize(self, fn, x, params):
        f, comp = compressed_jacobian(fn, x, params, self.pattern)
        data = comp.reshape(-1)
        if not self.compressed:
            data = data[jnp.asarray(compressed_index(self.pattern))]
        return f, SparseOperator(data)

    def matvec(self, operator, v):
        return pattern_matvec(self.pattern, self.values(operator), v)

    def rmatvec(self, operator, v):
        return pattern_rmatvec(self.pattern, self.values(operator), v)

    def to_dense(self, operator):
        return pattern_to_dense(self.pattern, self.values(operator))

    def _custom_solve(self, operator, b, solve, solve_t):
        """``J^{-1} b`` whose derivatives use ``matvec`` (not the solve's internals)."""
        _check_rhs(self, operator, b)
        data = lax.stop_gradient(operator.data)
        return lax.custom_linear_solve(
            lambda v: self.matvec(operator, v), b,
            solve=lambda _, r: solve(data, r), transpose_solve=lambda _, r: solve_t(data, r),
        )

    def solve(self, operator, b):
        return self._custom_solve(operator, b, self._solve(False), self._solve(True))

    def solve_transpose(self, operator, b):
        return self._custom_solve(operator, b, self._solve(True), self._solve(False))

    def _solve(self, transpose):
        raise NotImplementedError


def _check_rhs(solver, operator, b):
    pattern = solver.pattern
    n = pattern.shape[0]
    size = column_coloring(pattern)[1] * n if solver.compressed else pattern.nnz
    if b.shape != (n,) or operator.data.shape != (size,):
        raise SparsityError(
            f"expected b of shape ({n},) and an operator from this solver's linearize "
            f"(data of shape ({size},)), got {b.shape} and {operator.data.shape}; vmap over "
            "batches instead of passing batched arrays."
        )


@functools.lru_cache(maxsize=8)
def _plan(pattern: SparsityPattern, leaf_size: int, pivoting: str) -> LUPlan:
    return build_plan(pattern, leaf_size, pivoting=pivoting)


class SparseLU(_AbstractSparseSolver):
    """Level-scheduled sparse LU with static pivoting and iterative refinement.

    Built from a `SparsityPattern` or ``(rows, cols, shape)`` of a square Jacobian. The
    host analysis (zero diagonals paired with a partner or matched, nested dissection,
    symbolic fill, level schedule) runs once per pattern and is cached; numeric work is a
    few gathers and segment sums per elimination level (`plan.n_levels`, `n_products`).

    Static pivots cannot adapt to the values. Where the element growth ``max|LU| / max|A|``
    exceeds ``growth_limit`` the solve is checked: up to ``refine`` steps of iterative
    refinement, then a backward error above ``backward_tol`` (default ``sqrt(eps)``) gives
    NaN, as does a pivot below ``pivot_tol * eps * max|A|`` (reported as singular).
    ``pivoting``: ``"pairs"`` or ``"matching"`` for zero diagonals (see `analyse`).
    """

    def __init__(self, rows, cols=None, shape=None, *, refine: int = 1,
                 pivot_tol: float = 16.0, backward_tol: float | None = None,
                 growth_limit: float = 1e6, leaf_size: int = 8, pivoting: str = "pairs"):
        pattern = as_pattern(rows, cols, shape)
        if pattern.shape[0] != pattern.shape[1]:
            raise SparsityError(
                f"SparseLU needs a square Jacobian, got {pattern.shape}; use a least-squares "
                "method or check the counts of equations and unknowns."
            )
        if pivoting not in ("pairs", "matching"):
            raise ValueError(f"pivoting must be 'pairs' or 'matching', got {pivoting!r}.")
        for name, val in [("pattern", pattern), ("refine", int(refine)), ("pivoting", pivoting),
                          ("growth_limit", float(growth_limit)),
                          ("pivot_tol", float(pivot_tol)), ("leaf_size", int(leaf_size)),
                          ("backward_tol", None if backward_tol is None else float(backward_tol))]:
            object.__setattr__(self, name, val)

    def _options(self):
        return (self.refine, self.pivot_tol, self.backward_tol, self.growth_limit,
                self.leaf_size, self.pivoting)

    @property
    def plan(self) -> LUPlan:
        """The static schedule (built on first use, cached per pattern)."""
        return _plan(self.pattern, self.leaf_size, self.pivoting)

    def _solve(self, transpose):
        def solve(data, b):
            tol = self.backward_tol
            if tol is None:
                tol = float(np.sqrt(np.finfo(data.dtype).eps))
            core = lu_solver(self.plan, self.compressed, transpose, self.refine,
                             self.pivot_tol, tol, self.growth_limit)
            return core(data, b)
        return solve


class SparseHostLU(_AbstractSparseSolver):
    """SuperLU (``scipy.sparse.linalg.splu``, partial pivoting) on the host via a callback.

    Robust pivoting and fast for one large system; each call copies the values to the host
    and factors there, so it does not run on an accelerator and loops over a vmapped batch
    one system at a time. A singular matrix gives a NaN solution.

    ``permc_spec`` is SuperLU's column ordering, or ``"ND"``: our nested dissection of
    A^T + A (on 2-D grids of 2 500 to 25 000 unknowns 10-30% faster factorizations than
    minimum degree, growing more slowly; it costs ~25 us per unknown once per pattern);
    ``diag_pivot_thresh`` (in [0, 1]) its threshold pivoting: a diagonal entry is kept as
    pivot if it is at least that fraction of its column's largest. A symmetric ordering
    (``"MMD_AT_PLUS_A"`` or ``"ND"``, computed once per pattern and reused) needs a small
    threshold (0.1), else row swaps undo it; where the diagonal cannot pivot (saddle points,
    such as a pipe network's Jacobian) no threshold keeps it: use COLAMD, or ``schur=True``.

    ``schur=True`` first eliminates the diagonal block next to the zero diagonals (a pipe
    network's flows, see ``solvers._schur``) and factors the Schur complement on the rest
    with ``permc_spec``/``diag_pivot_thresh``; a solve whose block pivots are zero or whose
    backward error stays above 1000 eps after refinement factors the whole matrix instead.
    ``solvers.default_method`` picks all three options (see ``host_solver``).
    """

    def __init__(self, rows, cols=None, shape=None, *, permc_spec: str = "COLAMD",
                 diag_pivot_thresh: float = 1.0, schur: bool = False):
        pattern = as_pattern(rows, cols, shape)
        if pattern.shape[0] != pattern.shape[1]:
            raise SparsityError(f"SparseHostLU needs a square Jacobian, got {pattern.shape}.")
        if not 0.0 <= float(diag_pivot_thresh) <= 1.0:
            raise ValueError(f"diag_pivot_thresh must be in [0, 1], got {diag_pivot_thresh!r}.")
        if permc_spec not in ORDERINGS:
            raise ValueError(f"permc_spec must be one of {', '.join(ORDERINGS)}, got "
                             f"{permc_spec!r}.")
        if schur and schur_plan(pattern) is None:
            raise SparsityError(
                "SparseHostLU(schur=True) needs a pattern with structurally zero diagonals "
                "next to unknowns that have a diagonal (a saddle point such as a pipe "
                "network's); this one has none: use schur=False.")
        object.__setattr__(self, "pattern", pattern)
        object.__setattr__(self, "permc_spec", str(permc_spec))
        object.__setattr__(self, "diag_pivot_thresh", float(diag_pivot_thresh))
        object.__setattr__(self, "schur", bool(schur))

    def _options(self):
        return (self.permc_spec, self.diag_pivot_thresh) + ((True,) if self.schur else ())

    def _solve(self, transpose):
        def solve(data, b):
            out = jax.ShapeDtypeStruct(b.shape, b.dtype)
            one = functools.partial(schur_solve if self.schur else plain_solve, self.pattern,
                                    self.permc_spec, self.diag_pivot_thresh, transpose)
            values = self.values(SparseOperator(data))
            return jax.pure_callback(functools.partial(batch_solve, one), out, values, b,
                                     vmap_method="expand_dims")
        return solve
