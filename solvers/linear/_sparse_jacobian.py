"""The sparse Jacobian operator: its structure from the system, its values at a point.

`SparseJacobian` is the structure (a `SparsityPattern`, from the system's graph) with what
depends on it alone: the column colouring, the coloured linearization (``n_colors`` JVPs)
and the products. `SparseOperator` holds its values at one point. Sparse linear solvers
(the factorizations) are configured without a pattern and hold a `SparseJacobian` once a
solve binds them to the system's.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from ._sparsity import (
    SparsityError, SparsityPattern, column_coloring, compressed_index, compressed_jacobian,
    pattern_matvec, pattern_rmatvec, pattern_to_dense,
)


class SparseOperator(NamedTuple):
    """The Jacobian at a point, as stored by a sparse solver.

    ``data`` is either the compressed Jacobian ``J S`` (flattened ``(n_colors, m)``, when
    that is at most about twice the number of nonzeros: decompressing later, inside the
    solve, is cheaper under ``vmap``) or the pattern-aligned values. Use the Jacobian's
    ``values(operator)`` to get values aligned with its pattern.
    """

    data: jax.Array


class SparseJacobian:
    """The Jacobian's structure: a `SparsityPattern` and the colouring that evaluates it."""

    def __init__(self, pattern: SparsityPattern):
        object.__setattr__(self, "pattern", pattern)
        _, n_colors = column_coloring(pattern)
        object.__setattr__(self, "n_colors", n_colors)
        object.__setattr__(self, "compressed", n_colors * pattern.shape[0] <= 2 * pattern.nnz + 64)
        object.__setattr__(self, "size", n_colors * pattern.shape[0] if self.compressed
                           else pattern.nnz)

    def __setattr__(self, name, value):
        raise AttributeError("SparseJacobian is immutable.")

    def __eq__(self, other):
        return isinstance(other, SparseJacobian) and self.pattern == other.pattern

    def __hash__(self):
        return hash((SparseJacobian, self.pattern))

    def values(self, operator: SparseOperator) -> jax.Array:
        """The Jacobian's values aligned with ``self.pattern``."""
        if self.compressed:
            return operator.data[jnp.asarray(compressed_index(self.pattern))]
        return operator.data

    def linearize(self, fn, x, params) -> tuple[jax.Array, SparseOperator]:
        """``(fn(x, params), operator)`` from ``n_colors`` JVPs, or assembled element by
        element when ``fn`` offers it (``fn.element_jacobian``: a lowered System's residual)
        and that is cheaper."""
        assemble = getattr(fn, "element_jacobian", None)
        assemble = assemble(self.pattern, self.n_colors) if assemble is not None else None
        if assemble is not None:
            f, values = assemble(x, params)
            return f, SparseOperator(self._store(values))
        f, comp = compressed_jacobian(fn, x, params, self.pattern)
        data = comp.reshape(-1)
        if not self.compressed:
            data = data[jnp.asarray(compressed_index(self.pattern))]
        return f, SparseOperator(data)

    def _store(self, values: jax.Array) -> jax.Array:
        """Pattern-aligned values in this Jacobian's storage (``J S`` when compressed)."""
        if not self.compressed:
            return values
        m = self.pattern.shape[0]
        slots = jnp.asarray(compressed_index(self.pattern))
        return jnp.zeros(self.n_colors * m, values.dtype).at[slots].set(
            values, mode="promise_in_bounds", unique_indices=True)

    def matvec(self, operator: SparseOperator, v: jax.Array) -> jax.Array:
        return pattern_matvec(self.pattern, self.values(operator), v)

    def rmatvec(self, operator: SparseOperator, v: jax.Array) -> jax.Array:
        return pattern_rmatvec(self.pattern, self.values(operator), v)

    def to_dense(self, operator: SparseOperator) -> jax.Array:
        return pattern_to_dense(self.pattern, self.values(operator))

    def check_rhs(self, operator: SparseOperator, b: jax.Array) -> None:
        """Raise unless ``b`` and ``operator`` are one unbatched system of this structure."""
        n = self.pattern.shape[0]
        if b.shape != (n,) or operator.data.shape != (self.size,):
            raise SparsityError(
                f"expected b of shape ({n},) and an operator from this solver's linearize "
                f"(data of shape ({self.size},)), got {b.shape} and {operator.data.shape}; "
                "vmap over batches instead of passing batched arrays."
            )
