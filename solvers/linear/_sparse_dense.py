"""`SparseDenseLU`: a sparse Jacobian, evaluated sparsely, factored densely on the device.

For accelerators. Where the level-scheduled `SparseLU` would need too many multiply-adds
(or its static pivots cannot follow the values, as on power-flow Jacobians) and the host LU
would cross to the host every Newton step, a dense partial-pivoting LU on the device is
reliable and fast while the matrix fits in its memory: at 3 607 unknowns (case_ACTIVSg2000)
it is 3e10 multiply-adds, milliseconds on a GPU, where preconditioned GMRES stalls. The
Jacobian is still evaluated sparsely (coloured JVPs, or element by element), then scattered
into the dense matrix.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
from jax import lax

from ._abstract import LinearSolution, finite_result
from ._sparse import _AbstractSparseSolver, as_pattern, with_finite_result
from ._sparse_jacobian import SparseOperator
from ._sparsity import SparsityError


class SparseDenseLU(_AbstractSparseSolver):
    """Graph-coloured sparse Jacobian, dense partial-pivoting LU (``jax.scipy.linalg``).

    ``SparseDenseLU()`` is bound to the system's pattern by the solve (or built bound from
    a `SparsityPattern` or ``(rows, cols, shape)`` of a square Jacobian). Memory and time
    grow as n^2 and n^3: `AutoLinearSolver` picks it on accelerators only, within a share
    of the device's memory. A zero pivot gives NaN and ``RESULTS.singular_jacobian``.
    """

    def __init__(self, rows=None, cols=None, shape=None):
        self._bind_pattern(as_pattern(rows, cols, shape))

    def _dense(self, data: jax.Array) -> jax.Array:
        return self.to_dense(SparseOperator(data))

    def _solve(self, transpose):
        def solve(data, b):
            return jsl.lu_solve(jsl.lu_factor(self._dense(data)), b, trans=int(transpose))
        return with_finite_result(solve)

    def factorize(self, operator):
        """The LU of ``operator`` for `solve_factored` (forward solves: no gradients)."""
        self._jac().check_rhs(operator, jax.ShapeDtypeStruct(self.pattern.shape[:1], float))
        return jsl.lu_factor(self._dense(lax.stop_gradient(operator.data)))

    def solve_factored(self, factors, b) -> LinearSolution:
        """``J^{-1} b`` and its code with the factors of `factorize` (no gradients)."""
        n = self.pattern.shape[0]
        if not (isinstance(factors, tuple) and len(factors) == 2
                and jnp.shape(factors[0]) == (n, n)):
            raise TypeError("solve_factored takes the factors that factorize(operator) "
                            f"returned for this {n} x {n} pattern, got "
                            f"{type(factors).__name__}")
        if jnp.shape(b) != (n,):
            raise SparsityError(f"expected b of shape ({n},), got {jnp.shape(b)}: one "
                                "right-hand side of this system (vmap for several).")
        x = jsl.lu_solve(factors, b)
        return LinearSolution(x, finite_result(x))
