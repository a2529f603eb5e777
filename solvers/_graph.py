"""Graph-level entry points: ``solve(graph)`` and ``solve_batch(graph, {path: values})``.

A graph is lowered to a :class:`System` (``F(x, params) = 0``), solved with a method object,
and the answer comes back as a :class:`Solution` whose ``.system`` is a new graph with the
unknowns solved and the sharing intact. The method's linear solvers are bound to the graph's
Jacobian pattern; without a method, `AutoLinearSolver` chooses one by size and pattern.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Mapping, Optional

import jax
import jax.numpy as jnp
import numpy as np

from .linear._auto import AutoLinearSolver
from .batch._batch import solve_flat_batch
from .linear._bind import bind_linear_solvers
from ._concrete import is_concrete, is_traced, staging
from ._frame import solution_frame
from .roots._method import AbstractRootMethod, FlatProblem
from .roots._polyalgorithm import Default
from ._result import RESULTS
from .roots._solution import FlatSolution, SolveError
from .roots._solve import raise_if_failed_anywhere, solve_flat
from .roots._staging import member_starts, member_values, run_staged
from .batch._sweep import is_sweep, sweep_fingerprint, sweep_flat
from .lowering._system import System


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

    ``system`` is a new graph with the unknowns solved (batched leaves for a batch; built on
    first access, then the same object, so sharing can be checked across reads);
    ``result`` typed codes (``solvers.RESULTS``), ``converged``, ``iterations``,
    ``residual_norm`` (max|F|), ``relative_step`` (see ``FlatSolution``),
    ``num_fev``/``num_jev``; ``lowered`` the :class:`System`.
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

    @functools.cached_property
    def system(self) -> Any:
        """The solved graph (batched leaves for a batch); built on first access, then the
        same object on every access."""
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
    relative_step = property(lambda self: self.flat.relative_step)
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
        """Raise ``SolveError`` naming the worst failed member and what to try, with
        :meth:`diagnose`'s finding for that member (a singular or non-finite block)."""
        try:
            self.flat.raise_if_failed()
        except SolveError as err:
            found = None if err.code is RESULTS.nonfinite_input else self.diagnose(err.index)
            if found is None:
                raise
            raise SolveError(f"{err} Diagnosis: {found}", err.index, err.code) from None
        return self

    def diagnose(self, index=None) -> Optional[str]:
        """Name the parts of the graph whose Jacobian is singular or not finite for one
        member (``index``; default: the worst failed one, else the only one) at its
        returned x, else at the start x0 (a failed solve may have wandered to where the
        Jacobian is regular: a truss mechanism is singular at its start); None if none."""
        if index is None and self.flat.batch_shape:
            index = self.flat.worst_index()
            if index is None:
                index = 0
        pick = (lambda a: a) if index is None else (lambda a: a[index])
        params = jax.tree_util.tree_map(pick, self.params) if self.keys else self.params
        x = pick(self.flat.x)
        found = self.lowered.diagnose(x, params)
        if found is None and not np.array_equal(np.asarray(x), np.asarray(self.lowered.x0)):
            found = self.lowered.diagnose(None, params)
            found = None if found is None else f"at the start x0, {found}"
        return found
    def to_frame(self, long: bool = False):
        """The solved unknowns as a pandas DataFrame: one row per unknown (key path, owner
        class, value; a batch has one column per member, or ``long=True`` one row per member
        and unknown). Needs pandas: ``pip install 'simgraph[tables]'``."""
        return solution_frame(self, long)


def default_method(system: System, solver: Optional[AbstractRootMethod] = None, *,
                   batch_size: Optional[int] = None, **options: Any) -> AbstractRootMethod:
    """The caller's method, or ``Default(**options)`` with the linear solver
    ``AutoLinearSolver(batch_size=batch_size)`` chooses for the system (a dense LU for small
    systems, a banded LU for narrow-banded batches, else a sparse LU from the graph's
    Jacobian pattern: scipy's pivoting LU on the host for single CPU solves, usually the
    in-JAX level-scheduled ``SparseLU`` for batches)."""
    if solver is not None:
        return solver
    auto = AutoLinearSolver(batch_size=batch_size)
    linear = auto.choose((system.m, system.n), system.sparsity_pattern)
    return Default(linear_solver=linear, **options)


def _method(system: System, solver, batch_size=None) -> AbstractRootMethod:
    """`default_method`'s method with its linear solvers bound to the system's pattern."""
    return bind_linear_solvers(default_method(system, solver, batch_size=batch_size),
                               system.sparsity_pattern)


def solve(graph: Any, solver: Optional[AbstractRootMethod] = None, *,
          evaluation: str = "auto", throw: bool = False) -> Solution:
    """Solve the equations of ``graph`` (or of a prebuilt :class:`System`, which skips the
    lowering) for its ``sg.unknown()`` fields.

    Works outside and inside ``jax.jit``, ``jax.vmap`` and ``jax.grad`` (gradients by implicit
    differentiation). ``solver`` is a method object (``solvers.Newton()``, ...; default: a
    polyalgorithm with a dense or sparse LU by size); a least-squares method
    (``solvers.LevenbergMarquardt()``) also takes more equations than unknowns.
    ``throw=True`` raises on failure: ``SolveError`` outside transforms; inside ``jax.jit``
    JAX's ``jax.errors.JaxRuntimeError`` whose message holds the ``SolveError`` text.
    Outside transforms ``Default`` runs Newton first and compiles each fallback only when some
    member reaches it (`run_staged`).
    """
    system = _lowered(graph, solver, evaluation)
    method = _method(system, solver)
    step_limit = _StepLimit(system._s) if system.has_step_limit else None

    def attempt(stage, members):
        return solve_flat(_Residual(system._s), system.x0, system.params, solver=stage,
                          step_limit=step_limit)

    flat = _run(method, system, (system.x0, system.params), attempt)
    return _checked(Solution(flat, system), throw)


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
    system = _lowered(graph, solver, evaluation)
    keys, batched = _sweep_values(system, values)
    start = system.x0 if x0 is None else jnp.asarray(x0)
    method = _method(system, solver, int(batched[0].shape[0]))
    step_limit = _StepLimit(system._s, keys) if system.has_step_limit else None
    kwargs = {} if chunk_size is None else {"chunk_size": chunk_size}
    if _eager((start, batched)) and is_sweep(results_dir, gather):
        return _sweep(system, keys, batched, start, method, step_limit, chunk_size, throw,
                      dict(results_dir=results_dir, gather=gather, progress=progress))
    if results_dir is not None or not gather:
        raise ValueError("results_dir and gather=False need concrete values: call "
                         "solve_batch outside jit/vmap/grad.")

    def attempt(stage, members):
        xs = start if members is None else member_starts(start, members)
        vs = batched if members is None else tuple(member_values(v, members) for v in batched)
        return solve_flat_batch(_Residual(system._s, keys), xs, (system.params, vs),
                                solver=stage, step_limit=step_limit, params_axes=(None, 0),
                                progress=progress, **kwargs)

    flat = _run(method, system, (start, system.params, batched), attempt)
    return _checked(Solution(flat, system, batched, keys), throw)


def _lowered(graph: Any, solver: Optional[AbstractRootMethod], evaluation: str) -> System:
    """The graph's System; more equations than unknowns only for a least-squares method."""
    if isinstance(graph, System):
        return graph
    square = not getattr(solver, "least_squares", False)
    return System.build(graph, evaluation=evaluation, square=square)


def _sweep(system, keys, batched, start, method, step_limit, chunk_size, throw, options):
    """`solve_batch` as a chunked sweep (several processes, a results directory)."""
    problem = FlatProblem(_Residual(system._s, keys), step_limit)
    fingerprint = sweep_fingerprint(system, keys, batched, start, method)
    flat, members = sweep_flat(problem, method, start, (system.params, batched), (None, 0),
                               chunk_size=chunk_size, fingerprint=fingerprint,
                               about={"parameters": [str(k.key) for k in keys]}, **options)
    swept = batched if members is None else tuple(v[members.start:members.stop] for v in batched)
    return _checked(Solution(flat, system, swept, keys), throw)


def _eager(tree: Any) -> bool:
    """True when the solve's results will be concrete: no tracer among the inputs and no
    program being staged (``jit``); under ``vmap``/``grad`` of other values they are."""
    return is_concrete(tree) and not staging()


def _run(method, system: System, inputs: Any, attempt) -> FlatSolution:
    """Stage ``Default`` on the host when eager; otherwise one traced program."""
    if _eager(inputs):
        return run_staged(method, system.m, system.n, attempt)
    return attempt(method, None)


def _checked(sol: Solution, throw: bool) -> Solution:
    """``sol``, or raise on failure: with the diagnosis when concrete, else from inside the
    transform (``raise_if_failed_anywhere``)."""
    if not throw:
        return sol
    if is_traced(sol.flat.result):
        return dataclasses.replace(sol, flat=raise_if_failed_anywhere(sol.flat))
    return sol.raise_if_failed()


def _sweep_values(system: System, values: Mapping[Any, Any]) -> tuple[tuple, tuple]:
    """Resolve every key to its parameter leaves and check every value, before tracing."""
    if not values:
        raise ValueError("solve_batch needs at least one swept parameter: {key: values}; "
                         "for a single solve use solvers.solve.")
    paths = system.structure.paths
    keys, batched = [], []
    for key, value in values.items():
        sel = paths.sweep_key(key, system._nodes)
        value = value if isinstance(value, jax.Array) else jnp.asarray(value)
        if value.ndim == 0:
            raise ValueError(f"solve_batch value for {sel.key!r} is a scalar: give one value "
                             "per batch member, stacked on a leading axis.")
        paths.per_leaf(f"{sel.key!r} per batch member (after the leading batch axis)",
                       sel.picked, tuple(value.shape[1:]))
        keys.append(sel)
        batched.append(value)
    sizes = {sel.key: int(v.shape[0]) for sel, v in zip(keys, batched)}
    if 0 in sizes.values():
        raise ValueError(f"solve_batch values are empty ({sizes}): give at least one value per "
                         "swept parameter, stacked on a leading batch axis.")
    if len(set(sizes.values())) > 1:
        listed = ", ".join(f"{k!r}: {n}" for k, n in sizes.items())
        raise ValueError(f"solve_batch values differ in batch size ({listed}). Every value "
                         "needs one entry per batch member along its leading axis.")
    return tuple(keys), tuple(batched)
