"""`SparseAuto`: `AutoLinearSolver`'s sparse rules as one linear solver that delegates.

Kept for its spelling (``SparseAuto(batch_size=...)``, ``.choice``): it never picks a dense
LU and does not prefer the host LU for single solves; the choosing is `AutoLinearSolver`'s.
"""

from __future__ import annotations

from ._auto import AutoLinearSolver
from ._sparse import _AbstractSparseSolver, as_pattern


class SparseAuto(_AbstractSparseSolver):
    """A sparse linear solver that delegates to the back end `AutoLinearSolver`'s sparse
    rules pick for the pattern (given now, or bound by the solve).

    ``batch_size``: how many systems will be solved at once under ``vmap`` (a hint; the
    size is not visible inside ``vmap``). ``choice`` is the chosen solver.
    """

    def __init__(self, rows=None, cols=None, shape=None, *, batch_size: int | None = None,
                 max_products: float = 4e6, max_analyse: int = 40_000, host_batch: int = 16,
                 band_ratio: float = 2.0):
        auto = AutoLinearSolver(
            batch_size=None if batch_size is None else int(batch_size), dense_limit=0,
            dense_limit_batch=0, prefer_host=False, max_products=float(max_products),
            max_analyse=int(max_analyse), host_batch=int(host_batch),
            band_ratio=float(band_ratio))
        object.__setattr__(self, "auto", auto)
        object.__setattr__(self, "choice", None)
        self._bind_pattern(as_pattern(rows, cols, shape))

    def _bind_pattern(self, pattern):
        super()._bind_pattern(pattern)
        if pattern is not None:
            object.__setattr__(self, "choice", self.auto.select(pattern))

    def _options(self):
        a = self.auto
        return (a.batch_size, a.max_products, a.max_analyse, a.host_batch, a.band_ratio)

    def _chosen(self):
        if self.choice is None:
            raise self._unbound()
        return self.choice

    def linearize(self, fn, x, params):
        return self._chosen().linearize(fn, x, params)

    def solve_with_result(self, operator, b):
        return self._chosen().solve_with_result(operator, b)

    def solve(self, operator, b):
        return self._chosen().solve(operator, b)

    def solve_transpose(self, operator, b):
        return self._chosen().solve_transpose(operator, b)
