"""Graph-level transients: ``simulate(graph, t_eval)`` and ``simulate_batch(graph, values,
t_eval)``, mirroring ``solve`` / ``solve_batch``.

The graph's ``residual``/``contributions`` give ``F``, its ``charge`` methods ``Q``, a shared
:class:`Clock` the time; the run starts from the DC operating point (``F = 0`` at the first
time, stored quantities held) or from the graph's unknowns as given. One compiled program
per structure and settings; a batch is one ``vmap`` of it (each member its own steps).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Mapping, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from . import _graph
from .batch._batch import batch_devices, check_chunk_size, placer
from .linear import _small_lu
from .linear._auto import AutoLinearSolver
from .linear._dense import DenseLU
from .linear._small_lu import SmallDenseLU
from .linear._sparsity import SparsityPattern
from .lowering import _storage
from .lowering._system import System
from .roots._method import FlatProblem
from .roots._newton import Newton
from .transient import _transient
from .transient._integrator import TRANSIENT_RESULTS, Integrator
from .transient._solution import TransientSolution, checked
from ._concrete import is_concrete

INITIAL = ("dc", "given")


class TransientProblem:
    """``F``, ``Q``, time and breakpoints of one structure (hashable: a static jit argument)."""

    def __init__(self, system: System, keys: tuple = ()):
        self.structure, self.keys = system.structure, keys
        self.lowered = _storage.lowered(system)
        self._params = _graph._Residual(system.structure, keys).params
        self.step_limit = self._limit if system.has_step_limit else None

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and (self.structure, self.keys) == (other.structure, other.keys)

    def __hash__(self) -> int:
        return hash((type(self), self.structure, self.keys))

    def at(self, params, t):
        """Resolved parameters (a sweep member's values applied) with the clocks at ``t``."""
        return self.lowered.with_time(self._params(params), t)

    def residual(self, x, params):
        return self.structure.evaluator.residual(x, params)

    def charge(self, x, params):
        return self.lowered.charge.residual(x, params)

    def next_breakpoint(self, params, t):
        return self.lowered.next_breakpoint(params, t)

    def _limit(self, x, dx, params):
        return self.structure.evaluator.step_limit(x, dx, params)


def linear_solver_for(system: System, cfg: Integrator, batch_size: Optional[int]):
    """``cfg.linear_solver`` bound to the pattern of ``dF/dx + a dQ/dx``, else the
    chooser's pick for it (`AutoLinearSolver`, in-JAX solvers first): dense or banded LU
    for small systems (unrolled for the smallest, `SmallDenseLU`), a sparse LU above."""
    rows, cols = _storage.lowered(system).pattern
    pattern = SparsityPattern(rows, cols, (system.m, system.n))
    if cfg.linear_solver is not None:
        return cfg.linear_solver.bind(pattern)
    # prefer_host=False: a transient factors at every Newton iteration of thousands of
    # steps, where a host callback each time costs more than the in-JAX sparse LU (2.4x
    # on rc_grid_k30); the host LU stays for systems beyond that LU's budget
    chosen = AutoLinearSolver(batch_size=batch_size, prefer_host=False).select(pattern)
    if type(chosen) is DenseLU and system.m == system.n <= _small_lu.MAX_N:
        return SmallDenseLU()  # LAPACK's per-member calls cost most of a small step
    return chosen


def _atol(cfg: Integrator, n: int, dtype):
    atol = jnp.asarray(cfg.atol, dtype)
    if atol.ndim not in (0, 1) or (atol.ndim == 1 and atol.shape[0] != n):
        raise ValueError(f"Integrator(atol=...) must be a number or one value per unknown "
                         f"({n}), got shape {atol.shape}.")
    return atol


def _real_kind(values) -> str:
    """The numpy kind of ``values`` (``"f"`` for a list of tracers, which numpy cannot read)."""
    if hasattr(values, "dtype"):
        return np.dtype(values.dtype).kind
    try:
        return np.asarray(values).dtype.kind
    except jax.errors.TracerArrayConversionError:
        return "f"


def _grid(t_eval, t0) -> tuple[jax.Array, jax.Array]:
    if _real_kind(t_eval) not in "biuf":  # text was parsed as numbers, complex cut to real
        raise TypeError(f"t_eval must hold real numbers (times), got values of dtype "
                        f"{np.asarray(t_eval).dtype}.")
    grid = jnp.asarray(t_eval, jnp.result_type(float))
    if grid.ndim != 1 or grid.shape[0] < 1:
        raise ValueError(f"t_eval must be a 1-D array of output times, got shape {grid.shape}.")
    start = grid[0] if t0 is None else jnp.asarray(t0, grid.dtype)
    if start.ndim != 0:
        raise ValueError(f"t0 must be one time (a scalar), got shape {start.shape}; for runs "
                         "from several start times, call simulate once per t0.")
    if is_concrete(start) and not np.isfinite(float(start)):
        raise ValueError(f"t0 must be a finite time, got {float(start)}.")
    if is_concrete(grid):
        times = np.asarray(grid)
        if not np.all(np.isfinite(times)):
            raise ValueError(f"t_eval must hold finite times, got {times[~np.isfinite(times)][0]}.")
        if not bool(np.all(np.diff(times) > 0)):
            raise ValueError("t_eval must be strictly increasing.")
        if is_concrete(start) and not times[0] >= float(start):
            raise ValueError(f"t_eval starts at {times[0]:g}, before the run starts (t0 = "
                             f"{float(start):g}): give output times from t0 on, or an earlier t0.")
    return grid, start


def _valid_times(grid, t0) -> jax.Array:
    """`_grid`'s checks on traced times (under jit/vmap): a run on times that fail them
    ends at once as ``invalid_times`` (NaN output), not as "successful" at wrong values."""
    return (jnp.all(jnp.isfinite(grid)) & jnp.isfinite(t0) & jnp.all(grid[1:] > grid[:-1])
            & (grid[0] >= t0))


@functools.partial(jax.jit, static_argnums=(0, 1, 2, 3, 4))
def _run(problem, cfg, ls, dc_method, initial, params, x0, grid, t0):
    grid, t0 = _fixed_times(grid, t0)
    frozen = lax.stop_gradient(params)
    span = grid[-1] - t0
    hmax = jnp.minimum(cfg.hmax, span)
    hmin = span * 1e-11 if cfg.hmin is None else jnp.asarray(cfg.hmin, grid.dtype)
    # the default first step, as the step after a breakpoint, is not below 2 hmin (ngspice)
    h0 = (jnp.minimum(jnp.maximum(hmax * 1e-3, 2.0 * hmin), hmax) if cfg.h0 is None
          else jnp.asarray(cfg.h0, grid.dtype))
    atol = _atol(cfg, x0.shape[0], x0.dtype)
    if initial == "dc":
        flat = dc_method.solve(_dc_problem(problem), lax.stop_gradient(x0),
                               (frozen, lax.stop_gradient(t0)))
        start, ok = flat.x, flat.converged
    else:
        start, ok = lax.stop_gradient(x0), jnp.asarray(True)
    mask = jnp.asarray(problem.lowered.differential)
    valid = _valid_times(grid, t0)
    s, out = _transient.integrate(problem, cfg, ls, frozen, start, ok & valid, grid, t0, h0,
                                  hmin, atol, mask)
    s = s._replace(result=jnp.where(valid, s.result, int(TRANSIENT_RESULTS.invalid_times)))
    out = out._replace(ys=jnp.where(valid, out.ys, jnp.nan))
    if cfg.save_steps:
        ys, rec_x = _replayed_output(problem, cfg, ls, initial, t0, start, s, out, params, x0)
    else:
        ys, rec_x = _no_gradient((out.ys, s.rec_x), params)
    return (ys, s.result, s.n_acc, s.n_rej, s.n_newton, s.t, s.rec_t, rec_x, s.rec_order)


def _replayed_output(problem, cfg, ls, initial, t0, start, s, out, params, x0):
    """The integrator's grid output and accepted states (``steps_x``), whose derivatives
    come from replaying the recorded steps (`_transient.replay`). The replay is traced only
    when the run is differentiated, so a plain run neither compiles nor executes it (a scan
    over ``max_steps``)."""
    return _replayed((problem, cfg, ls, initial), (t0, start, s, out), params, x0)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def _replayed(spec, record, params, x0):
    return record[3].ys, record[2].rec_x


@_replayed.defjvp
def _replayed_jvp(spec, primals, tangents):
    problem, cfg, ls, initial = spec
    (t0, start, s, out), params, x0 = primals
    started = s.result != int(TRANSIENT_RESULTS.initial_point_failed)
    # a failed operating point's iterate (NaN, huge) would make a masked (zero) cotangent
    # NaN through dQ/dp = f(x); its derivative is NaN by `started`, and its outputs by NaN
    known = jnp.where(started & jnp.isfinite(start), start, jnp.zeros_like(start))

    def replayed(params, x0):
        x_start = (_transient.start_root(problem, ls, params, known, t0, started)
                   if initial == "dc" else x0)
        return _transient.replay(problem, cfg, ls, params, x_start, s, out)

    (ys, xs), (d_ys, d_xs) = jax.jvp(replayed, (params, x0), tangents[1:])
    failed = jnp.isnan(out.ys)
    unused = jnp.arange(xs.shape[0])[:, None] > s.n_acc  # record rows past the last step
    return ((_moving(out.ys, ys, failed), _moving(s.rec_x, xs, unused)),
            (_failed_outputs_poisoned(failed, d_ys), jnp.where(unused, 0.0, d_xs)))


def _moving(value, replayed, fixed):
    """``value`` (the run's own output) moving with ``replayed`` (the replay's, equal to
    it) where not ``fixed``: differentiating this rule again (second derivatives) must see
    the output move with the parameters, as the implicit root's rule does; a constant
    there dropped every term through it (a Hessian's came out 0)."""
    follow = jnp.where(fixed, 0.0, replayed)
    return value + (follow - lax.stop_gradient(follow))


def _failed_outputs_poisoned(failed, d_ys):
    """The outputs' tangent with NaN derivatives for outputs the run did not reach, as a
    solve gives a failed member: forward, a nonzero tangent is NaN there; reverse, a nonzero
    cotangent on one of them makes the whole member's gradient NaN. A zero one (a mask with
    ``jnp.where``) keeps every derivative finite. The poison sits in the solve functions of
    an identity ``custom_linear_solve``, which see the tangent and the cotangent: the only
    place a derivative rule may test them for zero."""
    forward = lambda _, t: jnp.where(failed & jnp.any(t != 0), jnp.nan, t)  # noqa: E731
    reverse = lambda _, ct: jnp.where(jnp.any(failed & (ct != 0)), jnp.nan, ct)  # noqa: E731
    return lax.custom_linear_solve(lambda v: v, jnp.where(failed, 0.0, d_ys),
                                   solve=forward, transpose_solve=reverse)


def _dc_problem(problem: TransientProblem) -> FlatProblem:
    """The operating point at ``t0`` as ``F(x, (params, t0))``: pure functions of their
    arguments (hashable, closing over no traced value), so a traced ``Default`` may run its
    fallbacks from the host (`FlatProblem.host_callable`)."""
    limit = _AtTime(problem, "step_limit") if problem.step_limit is not None else None
    return FlatProblem(_AtTime(problem, "residual"), limit, host_callable=True)


@dataclasses.dataclass(frozen=True)
class _AtTime:
    """``problem.<name>(*args, problem.at(params, t))`` called with ``(params, t)`` last."""

    problem: TransientProblem
    name: str

    def __call__(self, *args):
        *head, (params, t) = args
        return getattr(self.problem, self.name)(*head, self.problem.at(params, t))


@jax.custom_jvp
def _fixed_times(grid, t0):
    return grid, t0


@_fixed_times.defjvp
def _fixed_times_jvp(primals, tangents):
    """Called only when ``t_eval`` or ``t0`` carries a derivative: the steps are replayed
    for the parameters and the start, not for moved times, whose derivative was a silent 0."""
    raise NotImplementedError(
        "simulate differentiates with respect to the graph's parameters and start, not the "
        "times (t_eval, t0). For a derivative with respect to an output time, use the "
        "trajectory's slope there (e.g. a finite difference of sol.x between neighbouring "
        "output times); to shift a waveform in time, make the delay a parameter of its source.")


@jax.custom_jvp
def _no_gradient(outputs, params):
    return outputs


@_no_gradient.defjvp
def _no_gradient_jvp(primals, tangents):
    raise NotImplementedError("gradients of a transient need its steps: use "
                              "Integrator(save_steps=True) (the default).")


def _prepare(graph, integrator, initial, evaluation, batch_size, dc_solver):
    if initial not in INITIAL:
        raise ValueError(f"initial must be one of {INITIAL}, got {initial!r}.")
    system = graph if isinstance(graph, System) else System.build(graph, evaluation=evaluation)
    cfg = Integrator() if integrator is None else integrator
    if not isinstance(cfg, Integrator):
        raise TypeError(f"integrator must be a solvers.Integrator, got {type(cfg).__name__}.")
    ls = linear_solver_for(system, cfg, batch_size)
    dc = dc_solver if dc_solver is not None else Newton(linear_solver=ls, atol=1e-12, rtol=1e-10,
                                                          max_steps=100)
    return system, cfg, ls, dc


def simulate(graph: Any, t_eval, *, t0=None, integrator: Optional[Integrator] = None,
             initial: str = "dc", dc_solver=None, evaluation: str = "auto",
             throw: bool = False) -> TransientSolution:
    """Integrate ``F(x, p, t) + dQ(x, p)/dt = 0`` of ``graph`` (or a prebuilt ``System``)
    from ``t0`` (default ``t_eval[0]``) to ``t_eval[-1]``; the output is on ``t_eval``.

    ``initial="dc"`` starts from the operating point at ``t0`` (``dc_solver``, default
    ``solvers.Newton`` with the model's step limits, from the graph's unknowns); ``"given"`` starts from the graph's
    unknowns as they are. ``integrator``: a :class:`Integrator` (tolerances, order, steps).
    jit-, vmap- and grad-able (gradients with respect to the graph's parameters).
    ``throw=True`` raises ``SolveError`` when the run fails, also under ``jit`` (from a host
    callback).
    """
    system, cfg, ls, dc = _prepare(graph, integrator, initial, evaluation, None, dc_solver)
    grid, start = _grid(t_eval, t0)
    problem = TransientProblem(system)
    out = _run(problem, cfg, ls, dc, initial, system.params, system.x0, grid, start)
    return _solution(system, grid, out, throw)


def simulate_batch(graph: Any, values: Mapping[Any, Any], t_eval, *, t0=None,
                   integrator: Optional[Integrator] = None, initial: str = "dc",
                   dc_solver=None, evaluation: str = "auto", chunk_size: Optional[int] = None,
                   throw: bool = False) -> TransientSolution:
    """One transient per batch member (``values`` as in ``solvers.solve_batch``: key ->
    values with the batch on the leading axis, cast to the leaves' dtypes by the same
    rule), each with its own steps, in one compiled
    program (``jax.vmap`` of :func:`simulate`'s) run over chunks of ``chunk_size`` members
    (default `chunk_for`: a batched step's working set stays in cache; the last chunk is
    padded, so one size compiles once). With several devices, each chunk is split over all
    of them, as ``solve_batch`` splits a batch (a chunk is rounded up to a multiple of the
    device count)."""
    system = graph if isinstance(graph, System) else System.build(graph, evaluation=evaluation)
    keys, batched = _graph._sweep_values(system, values, "simulate_batch")
    _refuse_clock_keys(system, keys)
    check_chunk_size(chunk_size)  # a whole number: 1.5 was cut to 1
    size = int(batched[0].shape[0])
    chunk = min(size, chunk_for(system.n) if chunk_size is None else int(chunk_size))
    n_dev = len(batch_devices())
    chunk = -(-chunk // n_dev) * n_dev  # every device gets the same number of members
    system, cfg, ls, dc = _prepare(system, integrator, initial, evaluation, chunk, dc_solver)
    grid, start = _grid(t_eval, t0)
    problem = TransientProblem(system, keys)
    # values traced by the caller's jit/vmap are placed by that transform, not here
    place = placer(n_dev if is_concrete((batched, system.params)) else 1)
    shared = (system.params, system.x0, grid, start)
    params, x0, times, t_start = place(shared, (None,) * len(jax.tree_util.tree_leaves(shared)))
    outs = []
    for first in range(0, size, chunk):
        rows = np.minimum(np.arange(first, first + chunk), size - 1)  # pad with the last
        part = tuple(jnp.asarray(v)[rows] for v in batched) if chunk != size else batched
        outs.append(_run_batch(problem, cfg, ls, dc, initial, params,
                               place(part, (0,) * len(part)), x0, times, t_start))
    out = tuple(parts[0][:size] if len(outs) == 1 else jnp.concatenate(parts)[:size]
                for parts in zip(*outs))
    return _solution(system, grid, out, throw)


def _refuse_clock_keys(system: System, keys: tuple) -> None:
    """A clock's ``t`` is set by the integrator at every step: a sweep of it would be
    dropped without a word."""
    kinds = system.structure.an.kinds
    for sel in keys:
        if any(issubclass(kinds[ki].cls, _storage.Clock) for ki, _, _ in sel.picked):
            raise ValueError(
                f"simulate_batch cannot sweep {sel.key!r}: a Clock's t is set by the "
                "integrator at every step. Sweep the start with t0 or the output times with "
                "t_eval (one simulate_batch per time grid), or a parameter of the elements.")


def chunk_for(n: int) -> int:
    """Members per chunk of a batched transient of ``n`` unknowns.

    On CPU about 4 MiB of dense Jacobians, 16 to 1024 members (a 4-unknown rectifier steps
    1.6x faster per member in chunks of 1000 than as 10 000 at once, whose arrays spill out
    of the cache). On an accelerator the chunk is bounded by memory only (256 MiB of
    Jacobians, at most 2^17 members): every chunk is one serial pass of the time loop, and
    a GPU is fed best by one wide pass.
    """
    if jax.default_backend() != "cpu":
        return int(np.clip(2 ** 28 // (8 * n * n + 128 * n), 16, 2 ** 17))
    return int(np.clip(2 ** 22 // (8 * n * n + 128 * n), 16, 1024))


@functools.partial(jax.jit, static_argnums=(0, 1, 2, 3, 4))
def _run_batch(problem, cfg, ls, dc_method, initial, base, values, x0, grid, t0):
    return jax.vmap(lambda v: _run(problem, cfg, ls, dc_method, initial, (base, v), x0, grid,
                                   t0))(values)


def _solution(system, grid, out, throw) -> TransientSolution:
    sol = TransientSolution(grid, *out, system)  # `_run`'s tuple is in the fields' order
    return checked(sol, throw)
