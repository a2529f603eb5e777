"""The two entry points, ``solve`` and ``solve_batch``, of a graph, a `System` or a flat function.

A graph is lowered to a :class:`System` (``F(x, params) = 0``) and solved with a method
object; the `Solution` also holds the System, so its ``.system`` is a new graph with the
unknowns solved and the sharing intact. The method's linear solvers are bound to the graph's
Jacobian pattern; without a method, `AutoLinearSolver` chooses one by size and pattern. A flat
function goes to `solve_flat` / `solve_flat_batch` as it is.
"""

from __future__ import annotations

import inspect
from typing import Any, Mapping, Optional

import jax
import jax.numpy as jnp
import numpy as np

import simgraph as sg

from .linear._auto import AutoLinearSolver
from .batch._batch import solve_flat_batch
from .linear._bind import bind_linear_solvers
from ._concrete import is_concrete, staging
from ._inputs import check_flat_inputs, check_integer_range
from .roots._method import AbstractRootMethod, FlatProblem
from .roots._polyalgorithm import Default
from .roots._solution import Solution, with_graph
from .roots._solve import check_arguments, raise_if_failed_anywhere, solve_flat, solve_member
from .roots._staging import member_starts, member_values, run_staged
from .batch._sweep import is_sweep, sweep_fingerprint, sweep_flat
from .lowering._residual import Residual as _Residual, StepLimit as _StepLimit
from .lowering._system import System


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


def solve(problem: Any, *args: Any, **options: Any) -> Solution:
    """Solve ``F = 0`` once; ``problem`` is a graph, a `System` or a flat function:

    * ``solve(graph, solver=None, *, evaluation="auto", throw=False)``: lowers the graph (its
      root node) to a `System` and solves for its ``sg.unknown()`` fields; ``evaluation`` as
      in `System.build`;
    * ``solve(system, solver=None, *, throw=False)``: a prebuilt `System`, solved as it is;
    * ``solve(fn, x0, params=None, *, solver=None, step_limit=None, continuation=None,
      sparsity=None, throw=False)``: ``fn(x, params) -> F`` from the start ``x0`` (1-D);
      also spelled `solve_flat`, whose docstring details these options.

    ``solver`` is the method (``solvers.Newton()``, ...; default: ``Default()``, for a graph
    with the linear solver `AutoLinearSolver` picks). Returns a `Solution`; a graph's or a
    System's also gives ``.system``, the solved graph. Works inside ``jax.jit``, ``vmap`` and
    ``grad`` (gradients by implicit differentiation); outside ``jit``/``vmap`` (a single
    solve: under an eager ``grad`` too) ``Default`` runs stage by stage, compiling a fallback
    only when some member needs it. ``throw=True`` raises
    ``SolveError`` on failure (inside ``jit``: ``jax.errors.JaxRuntimeError`` with its text).
    """
    return _dispatch("solve", problem, args, options)


def solve_batch(problem: Any, *args: Any, **options: Any) -> Solution:
    """Solve once per batch member; ``problem`` is a graph, a `System` or a flat function:

    * ``solve_batch(graph_or_system, values, solver=None, *, x0=None, evaluation="auto",
      chunk_size=None, progress=None, throw=False, results_dir=None, gather=True)``:
      ``values`` maps keys to arrays whose leading axis is the batch. A key is a key path as
      ``jax.tree_util.keystr`` prints it (``".source.voltage"``, ``"source.voltage"``),
      ``"Class.field"`` (that field of every node of the class) or a filter on
      ``sg.LeafInfo``; keys are checked before anything is compiled. ``x0``: (n,) or (B, n).
      Values are cast to the leaf's dtype (float64 into float32 rounds); refused: a float
      into an integer or bool leaf, a complex into a real one, and concrete values the cast
      would change: a finite value that overflows to inf, an integer outside the leaf's
      range, anything but 0/1 into a bool leaf (traced values follow JAX's casts);
    * ``solve_batch(fn, x0, params, *, params_axes=0, solver=None, step_limit=None,
      continuation=None, chunk_size=None, progress=None, sparsity=None, throw=False)``:
      ``params_axes`` 0 (batched along the leading axis) or None (shared), or a prefix
      tree of them; also spelled `solve_flat_batch`.

    Returns a batched `Solution`. Large batches run in chunks (a progress bar on a terminal),
    split over all devices. Sweeps (the guide's "Several hosts"): several JAX processes
    (`initialize_distributed`) split the batch; ``results_dir`` keeps finished chunks so a
    restart skips them; ``gather=False`` keeps each process's own members only
    (`process_members`); ``progress`` may be a meter with ``update(n)``.
    """
    return _dispatch("solve_batch", problem, args, options)


_FORMS = {
    ("solve", "graph"): "solvers.solve(graph, solver=None, *, evaluation='auto', throw=False)",
    ("solve", "flat"): "solvers.solve(fn, x0, params=None, *, solver=None, ...)",
    ("solve_batch", "graph"): "solvers.solve_batch(graph, {key: values}, solver=None, *, ...)",
    ("solve_batch", "flat"): "solvers.solve_batch(fn, x0, params, *, params_axes=0, ...)",
}


def _dispatch(entry: str, problem: Any, args: tuple, options: dict) -> Solution:
    """Call the graph or the flat form of an entry point; argument errors name the form."""
    kind = _kind(problem, entry)
    impl = {("solve", "graph"): _solve_graph, ("solve", "flat"): solve_flat,
            ("solve_batch", "graph"): _solve_graph_batch,
            ("solve_batch", "flat"): solve_flat_batch}[entry, kind]
    try:
        return impl(problem, *args, **options)
    except TypeError:
        try:
            inspect.signature(impl).bind(problem, *args, **options)
        except TypeError as bad:
            hint = (" A flat function has no graph to read a start from: pass x0."
                    if kind == "flat" and "'x0'" in str(bad) else "")
            raise TypeError(f"solvers.{entry}: {bad}; call it as {_FORMS[entry, kind]}.{hint}"
                            ) from None
        raise


def _kind(problem: Any, entry: str) -> str:
    """"graph" for a graph's root node or a System, "flat" for a function; else TypeError."""
    if isinstance(problem, (System, sg.ReffableTreeNode)):
        return "graph"
    if callable(problem) and not isinstance(problem, type):
        return "flat"
    what = f"the class {problem.__name__} (pass an instance)" if isinstance(problem, type) \
        else type(problem).__name__
    raise TypeError(f"solvers.{entry} takes a graph (its root node; sg.Bundle(a, b) roots "
                    "several nodes), a solvers.System or a flat function fn(x, params); "
                    f"got {what}.")


def _solve_graph(graph: Any, solver: Optional[AbstractRootMethod] = None, *,
                 evaluation: str = "auto", throw: bool = False) -> Solution:
    """`solve` of a graph or a System."""
    system = _lowered(graph, solver, evaluation)
    problem, method = _prepared(system, solver)
    x0 = _start(system, system._x0)  # a host start goes in with the call (System.x0)
    flat = solve_member(problem, method, x0, system.params, shape=(system.m, system.n))
    return _checked(with_graph(flat, system), throw)


#: How many methods a structure keeps prepared (`_prepared`).
PREPARED_PER_STRUCTURE = 8


def _prepared(system: System, solver) -> tuple[FlatProblem, AbstractRootMethod]:
    """The flat problem and the checked method, its linear solvers bound, that ``solver``
    (None: `default_method`'s) solves this structure with: the same for every graph of
    the structure, so kept on it (~40 us of a small graph's eager solve)."""
    memo = system.structure.prepared
    try:
        found = memo.get(solver)
    except TypeError:  # an unhashable method: prepared at every call
        return _prepare(system, solver)
    if found is None:
        found = memo[solver] = _prepare(system, solver)
        while len(memo) > PREPARED_PER_STRUCTURE:
            memo.popitem(last=False)
    return found


def _prepare(system: System, solver) -> tuple[FlatProblem, AbstractRootMethod]:
    step_limit = _StepLimit(system._s) if system.has_step_limit else None
    _, method = check_arguments(_start(system, system.x0), _method(system, solver))
    return FlatProblem(_Residual(system._s), step_limit, host_callable=True), method


def _solve_graph_batch(graph: Any, values: Mapping[Any, Any],
                       solver: Optional[AbstractRootMethod] = None, *, evaluation: str = "auto",
                       x0: Any = None, chunk_size: Optional[int] = None, progress: Any = None,
                       throw: bool = False, results_dir: Any = None,
                       gather: bool = True) -> Solution:
    """`solve_batch` of a graph or a System."""
    system = _lowered(graph, solver, evaluation)
    keys, batched = _sweep_values(system, values)
    start = _start(system, system.x0 if x0 is None else _batch_start(system, x0, batched))
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
    return _checked(with_graph(flat, system, batched, keys), throw)


def _batch_start(system: System, x0: Any, batched: tuple) -> jax.Array:
    """A batch's start, checked: one for every member ``(n,)`` or one each ``(B, n)``."""
    check_flat_inputs("solve_batch", x0)
    x0, size = jnp.asarray(x0), int(batched[0].shape[0])
    if x0.ndim not in (1, 2) or x0.shape[-1] != system.n or x0.shape[:-1] not in ((), (size,)):
        raise ValueError(
            f"x0 of solve_batch has shape {x0.shape}; this system has {system.n} unknowns and "
            f"the batch {size} members, so give ({system.n},) (one start for every member) or "
            f"({size}, {system.n}) (one per member), in the order of System.build(graph).x0.")
    return x0


def _check_disjoint(paths, earlier: list, sel) -> None:
    """Raise if ``sel`` sweeps a leaf that an earlier key already sweeps: which value a member
    would get would depend on the order of the keys."""
    picked = set(sel.picked)
    for other in earlier:
        shared = picked.intersection(other.picked)
        if shared:
            raise ValueError(
                f"solve_batch keys {other.key!r} and {sel.key!r} both select "
                f"{paths.leaf_path(min(shared))}: each parameter leaf can be swept by one key "
                "only. Narrow one of the keys (a key path selects one leaf).")


def _start(system: System, x0: Any) -> Any:
    """``x0``, refused when its float type is not the one the System was lowered for (the
    residual computes in that type, so Newton's iterates would change type)."""
    want = system.structure.an.x_dtype
    got = getattr(x0, "dtype", None)
    if got == want:
        return x0
    got = jnp.result_type(x0)
    if jnp.issubdtype(got, jnp.floating) and got != want:
        raise TypeError(
            f"x0 is {got}, but this System was lowered from a graph whose unknowns are {want}. "
            f"Build the System from a graph with {got} leaves (System.build(graph)), or pass "
            f"x0.astype({str(want)!r}).")
    return x0


def _lowered(graph: Any, solver: Optional[AbstractRootMethod], evaluation: str) -> System:
    """The graph's System; more equations than unknowns only for a least-squares method."""
    if solver is not None and not isinstance(solver, AbstractRootMethod):
        raise TypeError(f"solver must be a method object such as solvers.Newton(), got "
                        f"{type(solver).__name__}; a graph's start comes from its unknowns "
                        "(solve_batch takes x0=).")
    if isinstance(graph, System):
        if evaluation != "auto":
            raise ValueError("evaluation= chooses how a graph is lowered, and this System is "
                             "lowered already: build it with System.build(graph, evaluation=...).")
        return graph
    square = not getattr(solver, "least_squares", False)
    return System.build(graph, evaluation=evaluation, square=square)


def _sweep(system, keys, batched, start, method, step_limit, chunk_size, throw, options):
    """`solve_batch` as a chunked sweep (several processes, a results directory)."""
    problem = FlatProblem(_Residual(system._s, keys), step_limit, host_callable=True)
    fingerprint = sweep_fingerprint(system, keys, batched, start, method)
    flat, members = sweep_flat(problem, method, start, (system.params, batched), (None, 0),
                               chunk_size=chunk_size, fingerprint=fingerprint,
                               about={"parameters": [str(k.key) for k in keys]}, **options)
    swept = batched if members is None else tuple(v[members.start:members.stop] for v in batched)
    return _checked(with_graph(flat, system, swept, keys), throw)


def _eager(tree: Any) -> bool:
    """True when the solve's results will be concrete: no tracer among the inputs and no
    program being staged (``jit``); under ``vmap``/``grad`` of other values they are."""
    return is_concrete(tree) and not staging()


def _run(method, system: System, inputs: Any, attempt) -> Solution:
    """Stage ``Default`` on the host when eager; otherwise one traced program."""
    if _eager(inputs):
        return run_staged(method, system.m, system.n, attempt)
    return attempt(method, None)


def _checked(sol: Solution, throw: bool) -> Solution:
    """``sol``, or raise on failure: with the diagnosis when concrete, else from inside the
    transform (``raise_if_failed_anywhere``)."""
    return raise_if_failed_anywhere(sol) if throw else sol


def _sweep_array(value, key: Any, entry: str = "solve_batch") -> Any:
    """A sweep's values (numpy, lists) as one host array, checked and put on the device by
    `_sweep_values` (``jnp.asarray`` would compile a staging program per new numpy shape,
    and narrow float64 to float32 while x64 is off before the check); a list that holds
    tracers (swept values under ``grad``) is stacked by ``jnp.asarray``."""
    try:
        host = np.asarray(value)
    except jax.errors.TracerArrayConversionError:
        return jnp.asarray(value)
    if host.dtype.kind not in "biufc":  # text, dates, objects: JAX's error named no key
        raise TypeError(f"{entry} values for {key!r} are not numbers (numpy reads them as "
                        f"{host.dtype}): give one number, or array, per batch member.")
    return host


def _sweep_values(system: System, values: Mapping[Any, Any],
                  entry: str = "solve_batch") -> tuple[tuple, tuple]:
    """Resolve every key to its parameter leaves and check every value, before tracing."""
    if not isinstance(values, Mapping):
        raise TypeError(f"{entry} of a graph takes {{key: values}} (one array per swept "
                        f"parameter, batch axis first), got {type(values).__name__}; a flat "
                        "function takes solve_batch(fn, x0, params, params_axes=...).")
    if not values:
        raise ValueError(f"{entry} needs at least one swept parameter: {{key: values}}; "
                         f"for a single run use solvers.{entry.partition('_')[0]}.")
    paths = system.structure.paths
    keys, batched = [], []
    for key, value in values.items():
        sel = paths.sweep_key(key, system._nodes)
        value = value if isinstance(value, jax.Array) else _sweep_array(value, sel.key, entry)
        if value.ndim == 0:
            raise ValueError(f"{entry} value for {sel.key!r} is a scalar: give one value "
                             "per batch member, stacked on a leading axis.")
        per_leaf = paths.per_leaf(f"{sel.key!r} per batch member (after the leading batch "
                                  "axis)", sel.picked, tuple(value.shape[1:]))
        paths.check_dtype(repr(sel.key), sel.picked, value.dtype, value, 1 if per_leaf else None)
        _check_disjoint(paths, keys, sel)
        keys.append(sel)
        if isinstance(value, np.ndarray):
            value = paths.to_leaf_type(sel.picked, value)
            check_integer_range(value, f"{entry} values for {sel.key!r}")  # leaves of 2 dtypes
            value = jax.device_put(value)
        batched.append(value)
    sizes = {sel.key: int(v.shape[0]) for sel, v in zip(keys, batched)}
    if 0 in sizes.values():
        raise ValueError(f"{entry} values are empty ({sizes}): give at least one value per "
                         "swept parameter, stacked on a leading batch axis.")
    if len(set(sizes.values())) > 1:
        listed = ", ".join(f"{k!r}: {n}" for k, n in sizes.items())
        raise ValueError(f"{entry} values differ in batch size ({listed}). Every value "
                         "needs one entry per batch member along its leading axis.")
    return tuple(keys), tuple(batched)
