"""Preconditioned Krylov solves on a sparse Jacobian (GMRES or BiCGStab).

Memory stays linear in the number of nonzeros whatever the fill of an exact LU would be,
so this is the back end for systems too large to factor (10^5+ unknowns on 2-D or 3-D
meshes), in pure JAX (runs on GPU). The price: iteration counts grow with the condition
number, and a solve that does not converge to ``rtol`` within ``maxiter`` is reported as
failed (NaN, ``RESULTS.linear_solve_failed``) instead of returning a poor Newton direction.

Preconditioners: ``"ilu0"`` (incomplete LU without fill, level-scheduled in a
multicolour order, from the same machinery as `SparseLU`), ``"jacobi"`` (the diagonal
after a row matching, so zero-diagonal MNA rows are handled) or ``None``.
"""

from __future__ import annotations

import functools

import jax.numpy as jnp
import numpy as np
from jax.scipy.sparse import linalg as jsla

from ._krylov import (ITERS_HINT, RESTART_HINT, check_krylov_settings, krylov_result,
                      krylov_rtol)
from ._sparse import _AbstractSparseSolver, as_pattern
from ._sparse_jacobian import SparseOperator
from ._sparse_lu import factor, triangular_solve
from ._sparse_plan import LUPlan, build_plan
from ._sparse_order import match_rows
from ._sparsity import SparsityPattern

_METHODS = ("gmres", "bicgstab")
_PRECONDITIONERS = ("ilu0", "jacobi", None)


@functools.lru_cache(maxsize=32)
def _ilu_plan(pattern: SparsityPattern) -> LUPlan:
    return build_plan(pattern, incomplete=True)


@functools.lru_cache(maxsize=32)
def _jacobi_index(pattern: SparsityPattern) -> tuple[np.ndarray, np.ndarray]:
    """For each unknown j: the pattern entry ``(perm[j], j)`` on the matched diagonal."""
    perm, _ = match_rows(pattern)
    return pattern.positions(perm, np.arange(pattern.shape[1])), perm


class SparseKrylov(_AbstractSparseSolver):
    """Preconditioned GMRES (restarted) or BiCGStab on the coloured sparse Jacobian.

    ``rtol``/``atol``: the stopping test ``|b - J x| <= max(rtol |b|, atol)``; a result whose
    residual is above ``fail_factor`` times that bound becomes NaN (``linear_solve_failed``). Under ``vmap`` the loop
    runs until every member has converged. Prefer `SparseLU` when its fill is affordable.
    """

    def __init__(self, rows=None, cols=None, shape=None, *, method: str = "gmres",
                 preconditioner: str | None = "ilu0", rtol: float = 1e-10, atol: float = 0.0,
                 restart: int = 30, maxiter: int = 200, fail_factor: float = 1e3):
        if method not in _METHODS:
            raise ValueError(f"method must be one of {_METHODS}, got {method!r}.")
        if preconditioner not in _PRECONDITIONERS:
            raise ValueError(f"preconditioner must be one of {_PRECONDITIONERS}, got "
                             f"{preconditioner!r}.")
        opts = dict(method=method, preconditioner=preconditioner, rtol=rtol, atol=atol,
                    restart=restart, maxiter=maxiter, fail_factor=fail_factor)
        for name, val in opts.items():
            object.__setattr__(self, name, val)
        check_krylov_settings(self, {"restart": RESTART_HINT,
                                     "maxiter": ITERS_HINT.replace("max_iters", "maxiter")})
        self._bind_pattern(as_pattern(rows, cols, shape))

    def _options(self):
        return (self.method, self.preconditioner, self.rtol, self.atol, self.restart,
                self.maxiter, self.fail_factor)

    def _solve(self, transpose):
        def solve(data, b):
            values = self.values(SparseOperator(data))
            mv = self.rmatvec if transpose else self.matvec
            a = functools.partial(mv, SparseOperator(data))
            m = self._preconditioner(values, transpose)
            kw = dict(tol=krylov_rtol(self.rtol, b.dtype), atol=self.atol,
                      maxiter=self.maxiter, M=m)
            if self.method == "gmres":
                x, _ = jsla.gmres(a, b, restart=self.restart, **kw)
            else:
                x, _ = jsla.bicgstab(a, b, **kw)
            return krylov_result(a, b, x, self.rtol, self.atol, self.fail_factor)
        return solve

    def _preconditioner(self, values, transpose):
        """``r -> M^{-1} r`` (or ``M^{-T} r``) built from the Jacobian's values."""
        if self.preconditioner is None:
            return None
        if self.preconditioner == "jacobi":
            idx, perm = _jacobi_index(self.pattern)
            diag = values[jnp.asarray(idx)]  # d[j] = J[perm[j], j]
            if transpose:  # J^T ~ P^T D: solve D y = r[...]  -> y[perm] = r / d
                return lambda r: jnp.zeros_like(r).at[jnp.asarray(perm)].set(r / diag)
            return lambda r: r[jnp.asarray(perm)] / diag
        plan = _ilu_plan(self.pattern)
        d_ext = jnp.concatenate([values, jnp.zeros((1,), values.dtype)])
        v = factor(plan, d_ext[jnp.asarray(plan.slot_src)])
        return lambda r: triangular_solve(plan, v, r, transpose)
