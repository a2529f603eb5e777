"""`SparseAuto`: choose a sparse back end from the pattern's size, fill and a batch hint.

Rules (measured on a 2-core CPU, see ``benchmarks/sparse_linear.py``):

* `BandedLU` when the pattern is a narrow band (after reverse Cuthill-McKee): at most
  ``band_ratio`` times `SparseLU`'s multiply-adds and within ``max_products``. Partial
  pivoting, so as robust as dense LU, and as fast as `SparseLU` or faster on ladders and
  chains under ``vmap`` (the 100-node diode ladder: ~1.2x at B = 10 000).
* `SparseLU` when its factorization needs at most ``max_products`` multiply-adds: pure
  JAX, fast for big ``vmap`` batches, works on GPU.
* otherwise, on CPU with a batch of at most ``host_batch`` systems: `SparseHostLU`
  (SuperLU through a callback; pivoting, fill-reducing COLAMD, fast for one big system);
* otherwise `SparseKrylov` (GMRES + ILU(0)): memory linear in nnz, runs on accelerators.

Patterns with more than ``max_analyse`` unknowns skip the (host) LU analysis.
"""

from __future__ import annotations

import jax
import numpy as np

from ._banded import BandedLU, banded_products
from ._sparse import SparseHostLU, SparseLU, _AbstractSparseSolver, as_pattern
from ._sparse_krylov import SparseKrylov
from ._sparse_plan import analyse
from ._sparsity import SparsityError


class SparseAuto(_AbstractSparseSolver):
    """A sparse linear solver that delegates to the back end suited to the pattern.

    ``batch_size``: how many systems will be solved at once under ``vmap`` (a hint; the
    size is not visible inside ``vmap``). ``choice`` is the chosen solver.
    """

    def __init__(self, rows, cols=None, shape=None, *, batch_size: int | None = None,
                 max_products: float = 4e6, max_analyse: int = 40_000, host_batch: int = 16,
                 band_ratio: float = 2.0):
        pattern = as_pattern(rows, cols, shape)
        if pattern.shape[0] != pattern.shape[1]:
            raise SparsityError(f"SparseAuto needs a square Jacobian, got {pattern.shape}.")
        if not float(band_ratio) >= 0.0:
            raise ValueError(f"SparseAuto(band_ratio=...) must be >= 0 (0 never picks BandedLU), "
                             f"got {band_ratio!r}.")
        opts = dict(pattern=pattern, batch_size=None if batch_size is None else int(batch_size),
                    max_products=float(max_products), max_analyse=int(max_analyse),
                    host_batch=int(host_batch), band_ratio=float(band_ratio))
        for name, val in opts.items():
            object.__setattr__(self, name, val)
        object.__setattr__(self, "choice", self._choose())

    def _options(self):
        return (self.batch_size, self.max_products, self.max_analyse, self.host_batch,
                self.band_ratio)

    def _choose(self) -> _AbstractSparseSolver:
        n = self.pattern.shape[0]
        if n <= self.max_analyse:
            products = product_count(analyse(self.pattern)[4])
            banded = banded_products(self.pattern)
            if banded <= min(self.band_ratio * products, self.max_products):
                return BandedLU(self.pattern)
            if products <= self.max_products:
                return SparseLU(self.pattern)
        on_cpu = jax.default_backend() == "cpu"
        if on_cpu and (self.batch_size or 1) <= self.host_batch:
            return SparseHostLU(self.pattern)
        return SparseKrylov(self.pattern)

    def linearize(self, fn, x, params):
        return self.choice.linearize(fn, x, params)

    def solve(self, operator, b):
        return self.choice.solve(operator, b)

    def solve_transpose(self, operator, b):
        return self.choice.solve_transpose(operator, b)


def product_count(structs) -> int:
    """Multiply-adds of a factorization with these column structures."""
    return int(np.sum([int(s.size) ** 2 for s in structs]))
