"""Sparse linear solvers for Newton steps: graph-coloured Jacobians plus a sparse solve.

Each is configuration only (``SparseLU()``); a solve binds it to the system's pattern
(``bind``), after which it holds the `SparseJacobian` (coloured JVPs, products) whose values
it factors. Old spellings with the pattern (``SparseLU(rows, cols, shape)``) build a bound
solver directly. They differ in the solve:

* `SparseLU`: level-scheduled LU with a static symbolic factorization. Pure JAX, so jit,
  vmap (batch-last layout, fast for big batches of small systems) and GPU work unchanged.
  Best when the fill stays small: ladders, trees, networks, grids up to ~10^4 unknowns.
* `SparseHostLU`: SuperLU (``scipy.sparse.linalg``, partial pivoting) through
  ``jax.pure_callback``. Best for one large system (2-D grids of 10^5 unknowns); the host
  round trip and the sequential loop over a batch make it a poor choice for big batches.
* `SparseKrylov` (``_sparse_krylov``): preconditioned GMRES / BiCGStab, memory linear in
  nnz, iterations grow with the conditioning; for systems too large to factor.
* `SparseAuto` (``_sparse_auto``): `AutoLinearSolver`'s choice among them.

``solve`` factors the operator's values every call (Newton calls it once per linearize)
and wraps the solve in ``lax.custom_linear_solve``, so gradients flow to ``b`` and to the
Jacobian's values through ``matvec`` without differentiating through the factorization;
``solve_with_result`` also returns the solve's result code (its derivative, through a
``custom_jvp``, is the same ``J^{-1} (db - dJ x)``).
"""

from __future__ import annotations

import copy
import functools
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from . import _klu
from ._host_lu import ORDERINGS, KLUSequence, batch_solve, klu_batch_solve, plain_solve
from ._abstract import AbstractLinearSolver, LinearSolution, finite_result
from ._schur import schur_plan, schur_solve
from ._sparse_lu import lu_factored, lu_solver
from ._sparse_plan import LUPlan, build_plan
from ._sparse_jacobian import SparseJacobian, SparseOperator
from ._sparsity import SparsityError, SparsityPattern


def as_pattern(rows=None, cols=None, shape=None) -> Optional[SparsityPattern]:
    """Accept a `SparsityPattern`, ``(rows, cols, shape)`` or nothing (an unbound solver)."""
    if isinstance(rows, SparsityPattern):
        if cols is not None or shape is not None:
            raise SparsityError("pass either a SparsityPattern or (rows, cols, shape), not both.")
        return rows
    if rows is None and cols is None and shape is None:
        return None
    if rows is None or cols is None or shape is None:
        raise SparsityError("pass a SparsityPattern, or rows, cols and shape=(m, n), or "
                            "nothing (a solve binds the solver to its system's pattern).")
    return SparsityPattern(rows, cols, shape)


class _AbstractSparseSolver(AbstractLinearSolver):
    """Configuration of a sparse factorization; once bound to a pattern it holds the
    `SparseJacobian` whose values it factors. Hashed by pattern and options."""

    jacobian: Optional[SparseJacobian] = None

    def _bind_pattern(self, pattern: Optional[SparsityPattern]) -> None:
        """Set the pattern at construction (None: unbound until a solve binds it)."""
        if pattern is not None:
            self._check_pattern(pattern)
            object.__setattr__(self, "jacobian", SparseJacobian(pattern))

    def _check_pattern(self, pattern: SparsityPattern) -> None:
        if pattern.shape[0] != pattern.shape[1]:
            raise SparsityError(
                f"{type(self).__name__} needs a square Jacobian, got {pattern.shape}; use a "
                "least-squares method or check the counts of equations and unknowns.")

    @property
    def needs_sparsity(self) -> bool:
        return self.jacobian is None

    def bind(self, pattern):
        if self.jacobian is not None:
            return self
        if pattern is None:
            raise self._unbound()
        bound = copy.copy(self)
        bound._bind_pattern(pattern)
        return bound

    def _unbound(self) -> SparsityError:
        return SparsityError(
            f"{type(self).__name__} has no sparsity pattern yet. solvers.solve and solve_batch "
            "bind it to the system's Jacobian pattern; for solve_flat or solve_flat_batch "
            "pass sparsity=solvers.SparsityPattern(rows, cols, shape), or build the solver "
            "with the pattern.")

    @property
    def pattern(self) -> SparsityPattern:
        """The Jacobian's sparsity pattern (raises if the solver is not bound)."""
        return self._jac().pattern

    def _jac(self) -> SparseJacobian:
        if self.jacobian is None:
            raise self._unbound()
        return self.jacobian

    def _key(self):
        pattern = None if self.jacobian is None else self.jacobian.pattern
        return (type(self), pattern) + self._options()

    def _options(self) -> tuple:
        return ()

    def __hash__(self):
        return hash(self._key())

    def __eq__(self, other):
        return isinstance(other, _AbstractSparseSolver) and self._key() == other._key()

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable; build a new one instead.")

    def __repr__(self):
        args = ([] if self.jacobian is None else [repr(self.jacobian.pattern)])
        return f"{type(self).__name__}({', '.join(args + [repr(o) for o in self._options()])})"

    @property
    def compressed(self) -> bool:
        """Whether operators hold ``J S`` (True) or pattern values (False)."""
        return self._jac().compressed

    def values(self, operator) -> jax.Array:
        """The Jacobian's values aligned with ``self.pattern``."""
        return self._jac().values(operator)

    def linearize(self, fn, x, params):
        return self._jac().linearize(fn, x, params)

    def matvec(self, operator, v):
        return self._jac().matvec(operator, v)

    def rmatvec(self, operator, v):
        return self._jac().rmatvec(operator, v)

    def to_dense(self, operator):
        return self._jac().to_dense(operator)

    def _custom_value(self, operator, b, solve, solve_t) -> jax.Array:
        """``J^{-1} b``; derivatives use ``matvec`` (not the solve's internals)."""
        self._jac().check_rhs(operator, b)
        data = lax.stop_gradient(operator.data)
        return lax.custom_linear_solve(
            lambda v: self.matvec(operator, v), b,
            solve=lambda _, r: solve(data, r)[0], transpose_solve=lambda _, r: solve_t(data, r)[0])

    def solve_with_result(self, operator, b):
        self._jac().check_rhs(operator, b)
        return _coded_solve(self, operator, b)

    def solve(self, operator, b):
        return self._custom_value(operator, b, self._solve(False), self._solve(True))

    def solve_transpose(self, operator, b):
        return self._custom_value(operator, b, self._solve(True), self._solve(False))

    def _solve(self, transpose):
        """A ``(data, b) -> (x, result code)`` function for J (or J^T)."""
        raise NotImplementedError


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def _coded_solve(solver: _AbstractSparseSolver, operator, b) -> LinearSolution:
    """``J^{-1} b`` with the solve's result code. Its derivative is ``J^{-1} (db - dJ x)``
    through `solve` (so through ``matvec``, never the factorization). Not a
    ``custom_linear_solve`` with the code as aux output: JAX batches aux outputs, which
    under ``jacfwd`` (a vmap over tangents) batched the Newton loop that calls this and
    then the primal root ("got axis spec None but output was batched")."""
    x, code = solver._solve(False)(lax.stop_gradient(operator.data), b)
    return LinearSolution(x, code)


@_coded_solve.defjvp
def _coded_solve_jvp(solver, primals, tangents):
    operator, b = primals
    d_operator, d_b = tangents
    out = _coded_solve(solver, operator, b)
    _, d_jx = jax.jvp(lambda op: solver.matvec(op, out.value), (operator,), (d_operator,))
    dx = solver.solve(operator, d_b - d_jx)
    return out, LinearSolution(dx, np.zeros(np.shape(out.result), jax.dtypes.float0))


def with_finite_result(solve):
    """A ``(data, b) -> x`` solve as ``(data, b) -> (x, code)``: non-finite is singular."""
    def coded(data, b):
        x = solve(data, b)
        return x, finite_result(x)
    return coded


@functools.lru_cache(maxsize=8)
def _plan(pattern: SparsityPattern, leaf_size: int, pivoting: str) -> LUPlan:
    return build_plan(pattern, leaf_size, pivoting=pivoting)


class SparseLU(_AbstractSparseSolver):
    """Level-scheduled sparse LU with static pivoting and iterative refinement.

    ``SparseLU()`` is bound to the system's pattern by the solve (or built bound from a
    `SparsityPattern` or ``(rows, cols, shape)`` of a square Jacobian). The host analysis (zero diagonals paired with a partner or matched, nested dissection,
    symbolic fill, level schedule) runs once per pattern and is cached; numeric work is a
    few gathers and segment sums per elimination level (`plan.n_levels`, `n_products`).

    Static pivots cannot adapt to the values. Where the element growth ``max|LU| / max|A|``
    exceeds ``growth_limit`` the solve is checked: up to ``refine`` steps of iterative
    refinement, then a backward error above ``backward_tol`` (default ``sqrt(eps)``) gives
    NaN with ``RESULTS.linear_solve_failed``. Pivots are judged after each row is scaled by
    its largest entry, against their own column (units do not matter): a vanished pivot
    gives NaN with ``RESULTS.singular_jacobian`` when its whole column vanished (every
    order would fail), else ``RESULTS.linear_solve_failed`` (J may be regular).
    ``pivoting``: ``"pairs"`` or ``"matching"`` for zero diagonals (see `analyse`).
    """

    def __init__(self, rows=None, cols=None, shape=None, *, refine: int = 1,
                 pivot_tol: float = 16.0, backward_tol: float | None = None,
                 growth_limit: float = 1e6, leaf_size: int = 8, pivoting: str = "pairs"):
        if pivoting not in ("pairs", "matching"):
            raise ValueError(f"pivoting must be 'pairs' or 'matching', got {pivoting!r}.")
        for name, val in [("refine", int(refine)), ("pivoting", pivoting),
                          ("growth_limit", float(growth_limit)),
                          ("pivot_tol", float(pivot_tol)), ("leaf_size", int(leaf_size)),
                          ("backward_tol", None if backward_tol is None else float(backward_tol))]:
            object.__setattr__(self, name, val)
        self._bind_pattern(as_pattern(rows, cols, shape))

    def _options(self):
        return (self.refine, self.pivot_tol, self.backward_tol, self.growth_limit,
                self.leaf_size, self.pivoting)

    @property
    def plan(self) -> LUPlan:
        """The static schedule (built on first use, cached per pattern)."""
        return _plan(self.pattern, self.leaf_size, self.pivoting)

    def _solve(self, transpose):
        def solve(data, b):
            return lu_solver(*self._lu_args(data, transpose))(data, b)
        return solve

    def _lu_args(self, data, transpose):
        tol = self.backward_tol
        if tol is None:
            tol = float(np.sqrt(np.finfo(data.dtype).eps))
        return (self.plan, self.compressed, transpose, self.refine, self.pivot_tol, tol,
                self.growth_limit)

    def factorize(self, operator):
        """The LU of ``operator`` for `solve_factored` (forward solves: no gradients)."""
        self._jac().check_rhs(operator, jax.ShapeDtypeStruct(self.pattern.shape[:1], float))
        data = lax.stop_gradient(operator.data)
        return data, lu_factored(*self._lu_args(data, False))[0](data)

    def solve_factored(self, factors, b) -> LinearSolution:
        """``J^{-1} b`` and its code with the factors of `factorize` (no gradients)."""
        if not (isinstance(factors, tuple) and len(factors) == 2):
            raise TypeError("solve_factored takes the factors that factorize(operator) "
                            f"returned, got {type(factors).__name__}")
        data, fac = factors
        self._jac().check_rhs(SparseOperator(data), jnp.asarray(b))
        return LinearSolution(*lu_factored(*self._lu_args(data, False))[1](data, fac, b))


class SparseHostLU(_AbstractSparseSolver):
    """SuperLU or KLU (partial pivoting) on the host via a callback.

    Configuration only until a solve binds it (or built from a pattern, as `SparseLU`).
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
    ``factorization="klu"`` factors with KLU (SuiteSparse; needs the optional ``klujax``
    package, see ``solvers.linear._klu``) instead of SuperLU: its own block triangular form
    and minimum-degree ordering, partial pivoting preferring the diagonal (``permc_spec``
    and ``diag_pivot_thresh`` are then unused). On power-grid Jacobians it factors 2-3.5x
    faster than SuperLU; on 2-D grids (large fill) SuperLU's supernodes win. With KLU a
    vmapped batch is factored in blocks of members sharing the first one's pivot order
    (refactorizations, checked by their backward error), the blocks on one thread a core.
    ``solvers.default_method`` picks these options (see ``host_solver``).
    """

    def __init__(self, rows=None, cols=None, shape=None, *, permc_spec: str = "COLAMD",
                 diag_pivot_thresh: float = 1.0, schur: bool = False,
                 factorization: str = "superlu"):
        if factorization not in ("superlu", "klu"):
            raise ValueError(f"factorization must be 'superlu' or 'klu', got {factorization!r}.")
        if factorization == "klu" and not _klu.available():
            raise ValueError("factorization='klu' needs KLU from the optional klujax package: "
                             "pip install 'simgraph[klu]' (or use factorization='superlu').")
        if factorization == "klu" and schur:
            raise ValueError("schur=True factors its Schur complement with SuperLU; use "
                             "factorization='superlu' with it.")
        if not 0.0 <= float(diag_pivot_thresh) <= 1.0:
            raise ValueError(f"diag_pivot_thresh must be in [0, 1], got {diag_pivot_thresh!r}.")
        if permc_spec not in ORDERINGS:
            raise ValueError(f"permc_spec must be one of {', '.join(ORDERINGS)}, got "
                             f"{permc_spec!r}.")
        object.__setattr__(self, "permc_spec", str(permc_spec))
        object.__setattr__(self, "diag_pivot_thresh", float(diag_pivot_thresh))
        object.__setattr__(self, "schur", bool(schur))
        object.__setattr__(self, "factorization", factorization)
        self._bind_pattern(as_pattern(rows, cols, shape))

    def _check_pattern(self, pattern):
        super()._check_pattern(pattern)
        if self.schur and schur_plan(pattern) is None:
            raise SparsityError(
                "SparseHostLU(schur=True) needs a pattern with structurally zero diagonals "
                "next to unknowns that have a diagonal (a saddle point such as a pipe "
                "network's); this one has none: use schur=False.")

    def _options(self):
        if self.factorization == "klu":
            return ("klu",)
        return (self.permc_spec, self.diag_pivot_thresh) + ((True,) if self.schur else ())

    def _solve(self, transpose):
        def solve(data, b):
            out = jax.ShapeDtypeStruct(b.shape, b.dtype)
            if self.factorization == "klu":
                host = functools.partial(klu_batch_solve, self.pattern, transpose)
            else:
                host = functools.partial(batch_solve, self._host_one(transpose))
            values = self.values(SparseOperator(data))
            return jax.pure_callback(host, out, values, b, vmap_method="expand_dims")
        return with_finite_result(solve)

    def _host_one(self, transpose: bool):
        """SuperLU's ``(values, b) -> x`` for one system (NaN where singular)."""
        return functools.partial(schur_solve if self.schur else plain_solve, self.pattern,
                                 self.permc_spec, self.diag_pivot_thresh, transpose)

    def host_sequence(self):
        """A NumPy solve ``(pattern-order values, b) -> x`` for the matrices of one Newton
        solve stepped from the host, in order (NaN where a matrix is singular): with KLU each
        matrix after the first is refactored with the last one's pivot order where its
        backward error accepts that (`KLUSequence`); SuperLU factors each afresh, as `solve`."""
        if self.factorization == "klu":
            return KLUSequence(self.pattern).solve
        one = self._host_one(False)
        return lambda values, b: batch_solve(one, values, b)
