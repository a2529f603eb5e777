"""Graph-level entry points: ``solve(graph)`` and ``solve_batch(graph, {path: values})``.

A graph is lowered to a :class:`System` (``F(x, params) = 0``), solved with a method object,
and the answer comes back as a :class:`Solution` whose ``.system`` is a new graph with the
unknowns solved and the sharing intact. Large systems get a sparse linear solver built from
the graph's Jacobian pattern unless the caller passes a method with its own.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Mapping, Optional

import jax
import numpy as np
import jax.numpy as jnp

try:  # jax's own test for "no transform is tracing"; only the tracer check without it
    from jax._src import core as jax_core
except ImportError:  # pragma: no cover
    jax_core = None

from ._banded import BandedLU, banded_beats_dense
from ._batch import solve_flat_batch
from ._dense import DenseLU
from ._method import AbstractRootMethod, FlatProblem
from ._polyalgorithm import Default, run_staged
from ._solution import FlatSolution
from ._solve import raise_if_failed_anywhere, solve_flat
from ._host_lu import symmetric_with_diagonal
from ._schur import schur_plan
from ._sparse import SparseHostLU, as_pattern
from ._sparse_auto import SparseAuto
from ._sparsity import SparsityPattern
from ._sweep import is_sweep, sweep_fingerprint, sweep_flat
from ._system import System

#: Single solves with more unknowns than this get a sparse LU by default.
DENSE_LIMIT = 120
#: Batched solves with more unknowns than this get a sparse LU by default (the dense LU's
#: n^3 per member dominates a batch much earlier than a single solve).
DENSE_LIMIT_BATCH = 24
#: From this many unknowns `host_solver` orders symmetric patterns by nested dissection:
#: measured on the 2-D diode grid, 10% faster factorizations at 2 500 unknowns and 30% at
#: 25 000 than SuperLU's minimum degree (once per pattern it costs ~25 us per unknown).
ND_MIN = 2000


class _Residual:
    """``F(x, params)`` of one system structure: hashable by structure, so equal graphs
    share one compiled solve (a bound method would hash by object and recompile)."""

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


class _StepLimit(_Residual):
    def __call__(self, x, dx, params):
        return self.structure.evaluator.step_limit(x, dx, self.params(params))


@jax.tree_util.register_pytree_node_class
@dataclasses.dataclass(frozen=True)
class Solution:
    """The solved graph and, per batch member, how the solve went.

    ``system`` is a new graph with the unknowns solved (batched leaves for a batch);
    ``result`` typed codes (``solvers.RESULTS``), ``converged``, ``iterations``,
    ``residual_norm`` (max|F|), ``num_fev``/``num_jev``; ``lowered`` the :class:`System`.
    """

    flat: FlatSolution
    lowered: System
    swept: tuple = ()  # solve_batch's batched values, in the order of `keys`
    keys: tuple = ()   # solve_batch's parameter addresses (static)

    def tree_flatten(self):
        return (self.flat, self.lowered, self.swept), self.keys

    @classmethod
    def tree_unflatten(cls, keys, children):
        return cls(*children, keys=keys)

    @property
    def system(self) -> Any:
        """The solved graph (batched leaves for a batch); built on access."""
        return self.lowered.to_graph(self.flat.x, self.params)

    @property
    def params(self) -> Any:
        """The parameters each member was solved with (batched only for a batch)."""
        if not self.keys:
            return self.lowered.params
        base = self.lowered.params
        return jax.vmap(lambda v: self.lowered.set_params(base, dict(zip(self.keys, v))))(self.swept)

    result = property(lambda self: self.flat.result)
    converged = property(lambda self: self.flat.converged)
    iterations = property(lambda self: self.flat.iterations)
    residual_norm = property(lambda self: self.flat.residual_norm)
    num_fev = property(lambda self: self.flat.num_fev)
    num_jev = property(lambda self: self.flat.num_jev)
    x = property(lambda self: self.flat.x)

    def value(self, where) -> jax.Array:
        """The solved unknowns of a node (object or key path) or of one leaf path."""
        return self.flat.x[..., self.lowered.locate(where)]

    def message(self, index=None) -> str:
        return self.flat.message(index)

    def summary(self) -> str:
        return self.flat.summary()

    def raise_if_failed(self) -> "Solution":
        """Raise ``SolveError`` naming the worst failed member and what to try."""
        self.flat.raise_if_failed()
        return self


def default_method(system: System, solver: Optional[AbstractRootMethod] = None, *,
                   batch_size: Optional[int] = None, **options: Any) -> AbstractRootMethod:
    """The caller's method, or ``Default(**options)`` with a linear solver suited to the
    system: dense LU for small systems (for batches a banded LU when the pattern is a narrow
    band, e.g. a ladder: coloured JVPs and no batched LAPACK calls), else a sparse LU from
    the graph's Jacobian pattern
    (scipy's pivoting LU on the host for single CPU solves; for batches the back end
    ``SparseAuto`` picks, usually the in-JAX level-scheduled ``SparseLU``)."""
    if solver is not None:
        return solver
    limit = DENSE_LIMIT if batch_size is None else DENSE_LIMIT_BATCH
    if system.n != system.m:
        return Default(linear_solver=DenseLU(), **options)
    if system.n <= limit:
        if batch_size is not None and banded_beats_dense(system.sparsity_pattern()):
            return Default(linear_solver=BandedLU(system.sparsity_pattern()), **options)
        return Default(linear_solver=DenseLU(), **options)
    pattern = system.sparsity_pattern()
    if batch_size is None and jax.default_backend() == "cpu":
        return Default(linear_solver=_cached_host_solver(pattern), **options)
    return Default(linear_solver=SparseAuto(pattern, batch_size=batch_size), **options)


def host_solver(rows, cols=None, shape=None) -> SparseHostLU:
    """The host LU for one large system: `host_ordering`'s ordering, with diagonal threshold
    pivoting (``diag_pivot_thresh=0.1``) for the symmetric one; for a saddle point whose
    Schur complement is symmetric with its diagonal (a pipe network: eliminating the flows
    leaves a weighted Laplacian on the heads, as EPANET's GGA does) ``schur=True`` with that
    symmetric ordering on the complement: at 10^5 unknowns a Newton step takes a quarter of
    COLAMD's time on the whole matrix. From ``ND_MIN`` unknowns the symmetric ordering is
    our nested dissection (``"ND"``) instead of SuperLU's minimum degree."""
    pattern = as_pattern(rows, cols, shape)
    order = host_ordering(pattern.rows, pattern.cols)
    symmetric = "ND" if pattern.shape[0] >= ND_MIN else "MMD_AT_PLUS_A"
    if order == "COLAMD":
        plan = schur_plan(pattern)
        if plan is not None and plan.symmetric:
            return SparseHostLU(pattern, permc_spec=symmetric, diag_pivot_thresh=0.1,
                                schur=True)
        return SparseHostLU(pattern, permc_spec=order)
    return SparseHostLU(pattern, permc_spec=symmetric, diag_pivot_thresh=0.1)


@functools.lru_cache(maxsize=16)
def _cached_host_solver(pattern: SparsityPattern) -> SparseHostLU:
    return host_solver(pattern)


def host_ordering(rows, cols) -> str:
    """SuperLU column ordering for a pattern: minimum degree on A^T + A when the pattern is
    (nearly) structurally symmetric with (nearly) all its diagonal, as circuits and grids are
    (about half COLAMD's fill on a 2-D grid), else COLAMD. ``default_method`` pairs the
    symmetric ordering with threshold pivoting (``diag_pivot_thresh=0.1``), which keeps it
    while the diagonal can pivot. Saddle-point patterns (a pipe network: a third of the
    diagonal structurally zero) pivot off the diagonal wherever it is zero or small, which
    undoes a symmetric ordering: 8 times COLAMD's fill at 10^4 unknowns."""
    rows, cols = np.asarray(rows), np.asarray(cols)
    n = int(max(rows.max(initial=-1), cols.max(initial=-1))) + 1
    return "MMD_AT_PLUS_A" if symmetric_with_diagonal(rows, cols, n) else "COLAMD"


def solve(graph: Any, solver: Optional[AbstractRootMethod] = None, *,
          evaluation: str = "auto", throw: bool = False) -> Solution:
    """Solve the equations of ``graph`` (or of a prebuilt :class:`System`, which skips the
    lowering) for its ``sg.unknown()`` fields.

    Works outside and inside ``jax.jit``, ``jax.vmap`` and ``jax.grad`` (gradients by implicit
    differentiation). ``solver`` is a method object (``solvers.Newton()``, ...; default: a
    polyalgorithm with a dense or sparse LU by size). ``throw=True`` raises on failure.
    Outside transforms ``Default`` runs Newton first and compiles its fallbacks only if needed.
    """
    system = graph if isinstance(graph, System) else System.build(graph, evaluation=evaluation)
    method = default_method(system, solver)
    step_limit = _StepLimit(system._s) if system.has_step_limit else None

    def attempt(stage, members):
        return solve_flat(_Residual(system._s), system.x0, system.params, solver=stage,
                          step_limit=step_limit)

    flat = _run(method, system, (system.x0, system.params), attempt)
    return Solution(_checked(flat, throw), system)


def solve_batch(graph: Any, values: Mapping[Any, Any], solver: Optional[AbstractRootMethod] = None, *,
                evaluation: str = "auto", x0: Any = None, chunk_size: Optional[int] = None,
                progress: Any = None, throw: bool = False, results_dir: Any = None,
                gather: bool = True) -> Solution:
    """Solve once per batch member; ``values`` maps keys to arrays whose leading axis is the
    batch. A key is a key path as ``jax.tree_util.keystr`` prints it (``".source.voltage"``
    or ``"source.voltage"``, ``".vsources['V1'].value"``), ``"Class.field"`` (that field of
    every node of the class), or a filter callable on ``sg.LeafInfo``; keys are checked
    before anything is compiled.

    ``graph`` may be a prebuilt :class:`System`: repeated sweeps of one graph then skip the
    walk over the graph too (a graph's lowering is cached by structure, see `System.build`).
    Only the swept parameters are batched; large batches run in chunks with a progress bar
    on a terminal, split over all devices.
    ``x0``: a start of shape (n,) or (B, n) (default: the graph's unknowns).

    Sweeps (see the guide's "Several hosts"): started as several JAX processes
    (`initialize_distributed`) the batch is split over all their devices; ``results_dir``
    writes each finished chunk there and a restart skips them; ``gather=False`` keeps on
    each process only its own members (`process_members`). ``progress`` may be a meter
    object with ``update(n)`` (counts members, on process 0 only).
    """
    system = graph if isinstance(graph, System) else System.build(graph, evaluation=evaluation)
    keys, batched = _sweep_values(system, values)
    start = system.x0 if x0 is None else jnp.asarray(x0)
    method = default_method(system, solver, batch_size=int(batched[0].shape[0]))
    step_limit = _StepLimit(system._s, keys) if system.has_step_limit else None
    kwargs = {} if chunk_size is None else {"chunk_size": chunk_size}
    if _eager((start, batched)) and is_sweep(results_dir, gather):
        return _sweep(system, keys, batched, start, method, step_limit, chunk_size, throw,
                      dict(results_dir=results_dir, gather=gather, progress=progress))
    if results_dir is not None or not gather:
        raise ValueError("results_dir and gather=False need concrete values: call "
                         "solve_batch outside jit/vmap/grad.")

    def attempt(stage, members):
        xs = start if members is None or start.ndim == 1 else start[members]
        vs = batched if members is None else tuple(v[members] for v in batched)
        return solve_flat_batch(_Residual(system._s, keys), xs, (system.params, vs),
                                solver=stage, step_limit=step_limit, params_axes=(None, 0),
                                progress=progress, **kwargs)

    flat = _run(method, system, (start, system.params, batched), attempt)
    return Solution(_checked(flat, throw), system, batched, keys)


def _sweep(system, keys, batched, start, method, step_limit, chunk_size, throw, options):
    """`solve_batch` as a chunked sweep (several processes, a results directory)."""
    problem = FlatProblem(_Residual(system._s, keys), step_limit)
    fingerprint = sweep_fingerprint(system, keys, batched, start, method)
    flat, members = sweep_flat(problem, method, start, (system.params, batched), (None, 0),
                               chunk_size=chunk_size, fingerprint=fingerprint,
                               about={"parameters": [str(k.key) for k in keys]}, **options)
    swept = batched if members is None else tuple(v[members.start:members.stop] for v in batched)
    return Solution(_checked(flat, throw), system, swept, keys)


def _eager(tree: Any) -> bool:
    """True outside every JAX transform (no tracer among the inputs, no trace active)."""
    if any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(tree)):
        return False
    clean = getattr(jax_core, "trace_state_clean", None)
    return True if clean is None else bool(clean())


def _run(method, system: System, inputs: Any, attempt) -> FlatSolution:
    """Stage ``Default`` on the host when eager; otherwise one traced program."""
    if _eager(inputs):
        return run_staged(method, system.m, system.n, attempt)
    return attempt(method, None)


def _checked(flat: FlatSolution, throw: bool) -> FlatSolution:
    return raise_if_failed_anywhere(flat) if throw else flat


def _sweep_values(system: System, values: Mapping[Any, Any]) -> tuple[tuple, tuple]:
    """Resolve every key to its parameter leaves and check every value, before tracing."""
    if not values:
        raise ValueError("solve_batch needs at least one swept parameter: {key: values}; "
                         "for a single solve use solvers.solve.")
    paths = system.structure.paths
    keys, batched = [], []
    for key, value in values.items():
        sel = paths.sweep_key(key)
        value = value if isinstance(value, jax.Array) else jnp.asarray(value)
        if value.ndim == 0:
            raise ValueError(f"solve_batch value for {sel.key!r} is a scalar: give one value "
                             "per batch member, stacked on a leading axis.")
        paths.per_leaf(f"{sel.key!r} per batch member (after the leading batch axis)",
                       sel.picked, tuple(value.shape[1:]))
        keys.append(sel)
        batched.append(value)
    sizes = {sel.key: int(v.shape[0]) for sel, v in zip(keys, batched)}
    if len(set(sizes.values())) > 1:
        listed = ", ".join(f"{k!r}: {n}" for k, n in sizes.items())
        raise ValueError(f"solve_batch values differ in batch size ({listed}). Every value "
                         "needs one entry per batch member along its leading axis.")
    return tuple(keys), tuple(batched)
