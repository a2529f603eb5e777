"""``F(x, params)`` and the step limit of one system structure as hashable callables.

Hashed by structure (and the swept parameter keys), so equal graphs share one compiled solve
(a bound method would hash by object and recompile). A sparse linear solver asks the residual
for `element_jacobian`: the grouped lowering can assemble dF/dx element by element, cheaper
than a coloured Jacobian on networks with high-degree nodes.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import jax.numpy as jnp
import numpy as np

from ._element_jacobian import worthwhile
from ._grouped import index
from ._system import System


class Residual:
    """``F(x, params)`` of one structure; ``params`` is ``(base, swept values)`` when
    ``keys`` name swept parameters (`System.set_params`), else the System's params."""

    def __init__(self, structure, keys: tuple = ()):
        self.structure, self.keys = structure, keys

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and (self.structure, self.keys) == (other.structure, other.keys)

    def __hash__(self) -> int:
        return hash((type(self), self.structure, self.keys))

    def params(self, params):
        if not self.keys:
            return params
        base, values = params
        return System(None, base, self.structure).set_params(base, dict(zip(self.keys, values)))

    def __call__(self, x, params):
        return self.structure.evaluator.residual(x, self.params(params))

    def element_jacobian(self, pattern, n_colors: int) -> Optional[Callable[[Any, Any], tuple]]:
        """``(x, params) -> (F, dF/dx values aligned with pattern)`` assembled element by
        element, or None where colouring is as cheap or ``pattern`` is not this structure's."""
        element = self.structure.element_jacobian(pattern)
        if element is None or not worthwhile(element, n_colors):
            return None
        return lambda x, params: element.linearize(x, self.params(params))

    def dense_jacobian(self, n_jvps: int) -> Optional[Callable[[Any, Any], tuple]]:
        """``(x, params) -> (F, dF/dx as a dense matrix)`` assembled element by element, or
        None where ``n_jvps`` JVPs (a dense Jacobian's) are as cheap or the lowering is not
        grouped."""
        if self.structure.mode != "grouped":
            return None
        pattern = System(None, None, self.structure).sparsity_pattern()
        element = self.structure.element_jacobian(pattern)
        if not worthwhile(element, n_jvps):
            return None
        # each element entry straight into its matrix position (duplicates add up there):
        # one scatter into one zero matrix per evaluation
        rows = index(np.asarray(pattern.rows)[element.positions])
        cols = index(np.asarray(pattern.cols)[element.positions])

        def linearize(x, params):
            f, flat = element.contributions(x, self.params(params))
            return f, jnp.zeros(pattern.shape, flat.dtype).at[rows, cols].add(
                flat, mode="promise_in_bounds")

        return linearize


class StepLimit(Residual):
    """The elements' step limit of one structure (see `System.step_limit`)."""

    def __call__(self, x, dx, params):
        return self.structure.evaluator.step_limit(x, dx, self.params(params))
