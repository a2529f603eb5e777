"""`AutoLinearSolver`: the one place that chooses a linear solver for a system.

Rules (measured on a 2-core CPU, see ``benchmarks/sparse_linear.py`` and
``benchmarks/circuit_batch.py``), for a Jacobian of shape (m, n):

1. ``m != n``: `DenseLU` (least squares forms J densely).
2. ``n <= dense_limit`` (one solve) or ``dense_limit_batch`` (a batch: the dense LU's n^3
   per member dominates much earlier): `DenseLU`; for a batch on CPU, `BandedLU` instead
   when the pattern's band needs at most dense LU's n^3 / 3 multiply-adds (ladders:
   coloured JVPs and no batched LAPACK calls). On an H100 the two are level (10 000
   10-node ladders: 0.73 M solves/s with `DenseLU`, 0.75 M with `BandedLU`, in one run);
   the batched dense LU is kept there as the simpler, pivoting choice.
3. One solve on CPU (``prefer_host``): the host LU `host_solver` orders (SuperLU: pivoting,
   fill-reducing, fast for one large system).
4. Otherwise the sparse rules: `BandedLU` for a narrow band (at most ``band_ratio`` times
   `SparseLU`'s multiply-adds and within ``max_products``); `SparseLU` within
   ``max_products`` (pure JAX, fast for big ``vmap`` batches, runs on GPU); on an
   accelerator, `SparseDenseLU` while the batch's dense matrices fit a share of the
   device's memory (`dense_fits_device`: partial pivoting on the device, no host round
   trip); on CPU with a batch of at most ``host_batch`` or at least ``HOST_BATCH_MIN``
   unknowns: `host_solver` (one member at a time); else `SparseKrylov` (memory linear in
   nnz; it stalls on network Jacobians). Patterns above ``max_analyse`` unknowns skip the
   (host) LU analysis.

Choices are cached per pattern, options and platform.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable, Optional

import jax
import numpy as np

from ._banded import BandedLU, banded_beats_dense, banded_products
from ._dense import DenseLU
from . import _klu
from ._host_lu import ordering_cost, symmetric_with_diagonal
from ._abstract import AbstractLinearSolver
from ._schur import schur_plan
from ._sparse import SparseHostLU, SparseLU, as_pattern
from ._sparse_dense import SparseDenseLU
from ._sparse_krylov import SparseKrylov
from ._sparse_plan import analyse
from ._sparsity import SparsityPattern

#: Single solves with more unknowns than this get a sparse LU.
DENSE_LIMIT = 120
#: Batched solves with more unknowns than this get a sparse LU.
DENSE_LIMIT_BATCH = 24
#: From this many unknowns `symmetric_ordering` considers our nested dissection beside
#: SuperLU's minimum degree: on the 2-D diode grid its factorizations are 10% faster at
#: 2 500 unknowns and 30% at 25 000 (once per pattern it costs ~25 us per unknown).
ND_MIN = 2000
#: ... where minimum degree's factors hold more than this many times the pattern's nonzeros
#: (2-D grids: 5.8 at 2 500 unknowns, 9 at 25 000). Below it nested dissection has little to
#: save and costs more than the factorizations of a solve: power-flow Jacobians (1.7-3.2
#: with minimum degree) get 3-8 times that fill from it (ACTIVSg10k: 17.8 against 2.2).
ND_TRY_FILL = 4.0
#: Nested dissection is kept while its factorization needs at most this many times minimum
#: degree's multiply-adds: on 2-D grids the two are within 10% (its short, bushy elimination
#: tree factors faster at equal counts); on transmission grids it needs 7-250 times as many.
ND_SLACK = 1.25
#: KLU also factors patterns that fill more than ``ND_TRY_FILL`` times, up to this many
#: multiply-adds a factorization with minimum degree: on the 2-D diode grid a Newton solve
#: with KLU takes 0.4x SuperLU's time (nested dissection) at 1 600 unknowns (0.5 M
#: multiply-adds), 0.5x at 10 000 (10 M), 0.7x at 20 000 (41 M) and 0.95-1.1x at 40 000
#: (136 M), where SuperLU's supernodes catch up.
KLU_MAX_PRODUCTS = 5e7
#: On CPU, batches of systems this large that `SparseLU` cannot take get the host LU too,
#: whatever the batch size: a member's factorization outweighs the callback's cost, and
#: `SparseKrylov` stalls on network Jacobians (case_ACTIVSg2000, 3 607 unknowns: a 100-member
#: load sweep did not finish in 240 s; per member with SuperLU it takes ~10 ms a scenario).
HOST_BATCH_MIN = 1000
#: On an accelerator, `SparseDenseLU` takes what `SparseLU` cannot while three float64 copies
#: of the batch's dense Jacobians (J, its LU, the solve's workspace) fit this share of the
#: device's memory ...
DEVICE_DENSE_SHARE = 0.25
#: ... of this many bytes where the device does not report its memory (8 GiB: a single
#: solve up to about 18 000 unknowns).
DEVICE_MEMORY_DEFAULT = 32 * 2 ** 30


@dataclasses.dataclass(frozen=True)
class AutoLinearSolver(AbstractLinearSolver):
    """Chooses the linear solver for a system from its Jacobian's shape and sparsity pattern
    and a batch-size hint (rules in this module's docstring); configuration only.

    As a method's ``linear_solver`` it is replaced by its choice when a solve binds it to
    the system's pattern (without a pattern, as in ``solve_flat`` with no ``sparsity``, the
    choice is `DenseLU`). ``select(pattern)`` shows the choice. ``batch_size``: how many
    systems are solved at once under ``vmap`` (not visible inside ``vmap``).
    """

    batch_size: Optional[int] = None
    dense_limit: int = DENSE_LIMIT
    dense_limit_batch: int = DENSE_LIMIT_BATCH
    prefer_host: bool = True
    max_products: float = 4e6
    max_analyse: int = 40_000
    host_batch: int = 16
    band_ratio: float = 2.0

    def __post_init__(self):
        if not float(self.band_ratio) >= 0.0:
            raise ValueError(f"band_ratio must be >= 0 (0 never picks BandedLU), got "
                             f"{self.band_ratio!r}.")

    needs_sparsity = True

    def bind(self, pattern: Optional[SparsityPattern]) -> AbstractLinearSolver:
        return DenseLU() if pattern is None else self.select(pattern)

    def select(self, pattern: SparsityPattern) -> AbstractLinearSolver:
        """The solver for a Jacobian with this `SparsityPattern`, bound to it."""
        return self.choose(pattern.shape, lambda: pattern)

    def choose(self, shape: tuple, pattern_of: Callable[[], SparsityPattern]
               ) -> AbstractLinearSolver:
        """The solver for a Jacobian of ``shape``; ``pattern_of()`` is called only when the
        choice depends on the pattern (small single solves never build it)."""
        m, n = shape
        if m != n:
            return DenseLU()
        limit = self.dense_limit if self.batch_size is None else self.dense_limit_batch
        if n <= limit and self.batch_size is None:
            return DenseLU()
        return _cached_choice(self, pattern_of(), jax.default_backend())

    def _choice(self, pattern: SparsityPattern, backend: str) -> AbstractLinearSolver:
        n = pattern.shape[0]
        limit = self.dense_limit if self.batch_size is None else self.dense_limit_batch
        if n <= limit:  # accelerators: one batched, pivoting dense LU (as fast there)
            banded = backend == "cpu" and banded_beats_dense(pattern)
            return BandedLU(pattern) if banded else DenseLU()
        if self.batch_size is None and self.prefer_host and backend == "cpu":
            return host_solver(pattern)
        if n <= self.max_analyse:
            products = product_count(analyse(pattern)[4])
            if banded_products(pattern) <= min(self.band_ratio * products, self.max_products):
                return BandedLU(pattern)
            if products <= self.max_products:
                return SparseLU(pattern)
        if backend != "cpu" and dense_fits_device(n, self.batch_size or 1):
            return SparseDenseLU(pattern)
        if backend == "cpu" and ((self.batch_size or 1) <= self.host_batch
                                 or n >= HOST_BATCH_MIN):
            return host_solver(pattern)
        return SparseKrylov(pattern)

    def _unbound(self, *_):
        raise TypeError("AutoLinearSolver chooses a solver when a solve binds it to a system; "
                        "use .select(pattern) for the chosen solver.")

    linearize = solve = solve_transpose = matvec = rmatvec = _unbound


@functools.lru_cache(maxsize=64)
def _cached_choice(auto: AutoLinearSolver, pattern: SparsityPattern, backend: str):
    return auto._choice(pattern, backend)


def dense_fits_device(n: int, batch: int) -> bool:
    """Whether ``batch`` dense ``n x n`` float64 LUs fit `DEVICE_DENSE_SHARE` of the default
    device's memory (`DEVICE_MEMORY_DEFAULT` where it does not say)."""
    return 3 * 8 * batch * n * n <= DEVICE_DENSE_SHARE * _device_memory()


@functools.lru_cache(maxsize=1)
def _device_memory() -> int:
    try:
        stats = jax.local_devices()[0].memory_stats() or {}
    except Exception:  # noqa: BLE001 (a back end without memory statistics)
        stats = {}
    return int(stats.get("bytes_limit", DEVICE_MEMORY_DEFAULT))


def product_count(structs) -> int:
    """Multiply-adds of a factorization with these column structures."""
    return int(np.sum([int(s.size) ** 2 for s in structs]))


def host_solver(rows, cols=None, shape=None) -> SparseHostLU:
    """The host LU for one large system: `host_ordering`'s ordering, with diagonal threshold
    pivoting (``diag_pivot_thresh=0.1``) for the symmetric one; for a saddle point whose
    Schur complement is symmetric with its diagonal (a pipe network: eliminating the flows
    leaves a weighted Laplacian on the heads, as EPANET's GGA does) ``schur=True`` with a
    symmetric ordering on the complement (from ``ND_MIN`` unknowns our nested dissection):
    at 10^5 unknowns a Newton step takes a quarter of COLAMD's time on the whole matrix.
    Where KLU is installed and suits the pattern (`klu_suits`: little fill with minimum
    degree, as power grids, ladders and sparse circuits have, or few multiply-adds, as 2-D
    grids up to ~2.5 x 10^4 unknowns), KLU factors it (2-3.5x faster than SuperLU on
    transmission grids); else SuperLU with `symmetric_ordering`'s ordering."""
    pattern = as_pattern(rows, cols, shape)
    order = host_ordering(pattern.rows, pattern.cols)
    if order == "COLAMD":
        plan = schur_plan(pattern)
        if plan is not None and plan.symmetric:
            complement = "ND" if pattern.shape[0] >= ND_MIN else "MMD_AT_PLUS_A"
            return SparseHostLU(pattern, permc_spec=complement, diag_pivot_thresh=0.1,
                                schur=True)
        return SparseHostLU(pattern, permc_spec=order)
    if klu_suits(pattern):
        return SparseHostLU(pattern, factorization="klu")
    ordering = symmetric_ordering(pattern)
    return SparseHostLU(pattern, permc_spec=ordering, diag_pivot_thresh=0.1)


def klu_suits(pattern: SparsityPattern) -> bool:
    """Whether KLU is installed and minimum degree fills this pattern at most
    ``ND_TRY_FILL`` times or factors it in at most ``KLU_MAX_PRODUCTS`` multiply-adds (KLU
    has no supernodes: where the factors fill much more, as on large 2-D grids, SuperLU is
    faster)."""
    if not _klu.available():
        return False
    fill, products = ordering_cost(pattern, "MMD_AT_PLUS_A")
    return fill <= ND_TRY_FILL * pattern.nnz or products <= KLU_MAX_PRODUCTS


def symmetric_ordering(pattern: SparsityPattern) -> str:
    """``"MMD_AT_PLUS_A"`` (SuperLU's minimum degree on A^T + A) or ``"ND"`` (our nested
    dissection), from the multiply-adds of a factorization with each (`ordering_cost`, once
    per pattern; the orderings are kept for the solve): ND where it needs at most
    ``ND_SLACK`` times minimum degree's. It is tried only from ``ND_MIN`` unknowns and where
    minimum degree fills more than ``ND_TRY_FILL`` times the pattern: 2-D grids keep it,
    transmission grids (sparse, tree-like meshes) never get it."""
    if pattern.shape[0] < ND_MIN:
        return "MMD_AT_PLUS_A"
    fill, products = ordering_cost(pattern, "MMD_AT_PLUS_A")
    if fill <= ND_TRY_FILL * pattern.nnz:
        return "MMD_AT_PLUS_A"
    return "ND" if ordering_cost(pattern, "ND")[1] <= ND_SLACK * products else "MMD_AT_PLUS_A"


def host_ordering(rows, cols) -> str:
    """SuperLU column ordering for a pattern: minimum degree on A^T + A when the pattern is
    (nearly) structurally symmetric with (nearly) all its diagonal, as circuits and grids are
    (about half COLAMD's fill on a 2-D grid), else COLAMD. `host_solver` pairs the symmetric
    ordering with threshold pivoting (``diag_pivot_thresh=0.1``), which keeps it while the
    diagonal can pivot. Saddle-point patterns (a pipe network: a third of the diagonal
    structurally zero) pivot off the diagonal wherever it is zero or small, which undoes a
    symmetric ordering: 8 times COLAMD's fill at 10^4 unknowns."""
    rows, cols = np.asarray(rows), np.asarray(cols)
    n = int(max(rows.max(initial=-1), cols.max(initial=-1))) + 1
    return "MMD_AT_PLUS_A" if symmetric_with_diagonal(rows, cols, n) else "COLAMD"
