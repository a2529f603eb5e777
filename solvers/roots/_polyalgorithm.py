"""The default method: fast Newton first, robust fallbacks only for the members that need them."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp
from jax import lax

from ..linear._dense import DenseLU
from ._homotopy import Homotopy
from ._levenberg_marquardt import LevenbergMarquardt
from ..linear._abstract import AbstractLinearSolver
from ._method import AbstractRootMethod, FlatProblem, check_tolerances, code
from ._newton import Newton
from .._result import RESULTS
from ._shape import check_shape
from ._solution import FlatSolution, make_solution
from ._trust_region import SCALINGS, TrustRegion


def _better(new: FlatSolution, old: FlatSolution) -> jax.Array:
    """New attempt wins if it converged, or failed with a smaller finite residual."""
    new_res = jnp.where(jnp.isfinite(new.residual_norm), new.residual_norm, jnp.inf)
    old_res = jnp.where(jnp.isfinite(old.residual_norm), old.residual_norm, jnp.inf)
    return new.converged | (~old.converged & (new_res < old_res))


def merge(old: FlatSolution, new: FlatSolution, tried: jax.Array) -> FlatSolution:
    """Keep the better attempt per member; evaluation counts add up over attempts."""
    take = tried & _better(new, old)
    pick = lambda a, b: jnp.where(take, b, a)
    add = lambda a, b: a + jnp.where(tried, b, 0)
    return FlatSolution(
        x=pick(old.x, new.x), result=pick(old.result, new.result),
        converged=pick(old.converged, new.converged),
        iterations=add(old.iterations, new.iterations), num_fev=add(old.num_fev, new.num_fev),
        num_jev=add(old.num_jev, new.num_jev),
        residual_norm=pick(old.residual_norm, new.residual_norm),
        relative_step=pick(old.relative_step, new.relative_step))


@dataclasses.dataclass(frozen=True)
class TrustRegionRestarts(AbstractRootMethod):
    """A trust region run again from x0 with each scaling in turn until a member converges.

    The scalings suit different problems (none of them suits all); one loop over them
    compiles the trust region once.
    """

    trust_region: TrustRegion = TrustRegion()
    scalings: tuple = ("more", "none", "current")

    def run(self, problem: FlatProblem, x0, params: Any, active) -> FlatSolution:
        modes = jnp.asarray([SCALINGS.index(s) for s in self.scalings], jnp.int32)
        tr = self.trust_region

        def body(carry):
            k, best = carry
            retry = active & ~best.converged
            new = tr.run_scaled(problem, x0, params, retry, modes[k])
            return k + 1, merge(best, new, retry)

        def cond(carry):
            k, best = carry
            return (k < modes.shape[0]) & active & ~best.converged

        return lax.while_loop(cond, body, (jnp.zeros((), jnp.int32), _nothing(x0)))[1]


@dataclasses.dataclass(frozen=True)
class NewtonRestarts(AbstractRootMethod):
    """``newton`` with each watchdog length of ``watchdogs`` in turn: the first run solves
    every member, each later one (from x0) the members that `needs_retry`, each keeping its
    better attempt, as ``Default``'s stages would. One loop over the lengths compiles
    Newton once (its watchdog length is a traced value)."""

    newton: Newton = Newton()
    watchdogs: tuple = (4, 0)

    def run(self, problem: FlatProblem, x0, params: Any, active) -> FlatSolution:
        lengths = jnp.asarray(self.watchdogs, jnp.int32)

        def body(carry):
            k, best = carry
            retry = active & ((k == 0) | needs_retry(best))
            new = self.newton.iterate(problem, x0, params, retry, lengths[k])
            merged = merge(best, new, retry)
            return k + 1, jax.tree_util.tree_map(lambda a, b: jnp.where(k == 0, b, a),
                                                 merged, new)

        def cond(carry):
            k, best = carry
            return (k < lengths.shape[0]) & active & ((k == 0) | needs_retry(best))

        return lax.while_loop(cond, body, (jnp.zeros((), jnp.int32), _nothing(x0)))[1]

    @classmethod
    def of(cls, stages: tuple) -> tuple:
        """``stages`` with a leading run of Newton stages that differ only in their watchdog
        length merged into one `NewtonRestarts` (same answers, a smaller program)."""
        run = 0
        while (run < len(stages) and type(stages[run]) is Newton
               and _unwatched(stages[run]) == _unwatched(stages[0])):
            run += 1
        if run < 2:
            return stages
        lengths = tuple(stage.watchdog for stage in stages[:run])
        return (cls(_unwatched(stages[0]), lengths),) + tuple(stages[run:])


def _unwatched(newton: Newton) -> Newton:
    return dataclasses.replace(newton, watchdog=0)


@dataclasses.dataclass(frozen=True)
class Default(AbstractRootMethod):
    """Polyalgorithm: Newton with line search and a 4-step watchdog (see `Newton`); then, for
    members that failed, Newton with a monotone line search (the watchdog's full steps can
    leave for a basin without a root: x^3 - 2x + 3 from 0); then a dogleg trust region from
    the start (with three variable scalings in turn); then Newton-homotopy continuation.
    Each member keeps its best attempt (converged, else smallest residual) and its own code.
    Under ``vmap`` a fallback iterates only while some member needs it.
    ``solvers.solve``/``solve_batch`` called outside ``jit``/``vmap`` run Newton alone first and
    compile the fallbacks only if some member failed, for those members only: a fraction of
    the compile time when Newton succeeds, with the same answer. Traced, the two Newton
    stages run as one `NewtonRestarts` loop (one copy of Newton in the program) and all
    stages as one loop (`run_stages`).

    Over-determined systems (m > n) go to Levenberg-Marquardt (least squares).
    ``methods`` replaces the sequence of stages.
    """

    rtol: float = 1e-10
    atol: float = 1e-10
    linear_solver: AbstractLinearSolver = DenseLU()
    methods: Optional[tuple] = None

    least_squares = True

    def __post_init__(self) -> None:
        check_tolerances(self, "rtol", "atol")
        if self.methods is not None and (
                not self.methods or not all(isinstance(m, AbstractRootMethod)
                                            for m in self.methods)):
            raise ValueError("Default(methods=...) must be a non-empty tuple of method objects "
                             f"such as solvers.Newton(), got {self.methods!r}.")

    def stages(self) -> tuple:
        """The stages for a square system (``methods``, or the default sequence)."""
        if self.methods is not None:
            return tuple(self.methods)
        kw = dict(rtol=self.rtol, atol=self.atol, linear_solver=self.linear_solver)
        return (Newton(max_steps=50, watchdog=4, **kw), Newton(max_steps=50, **kw),
                TrustRegionRestarts(TrustRegion(max_steps=1000, **kw)),
                Homotopy(inner=Newton(max_steps=50, **kw)))

    def plan(self, m: Optional[int], n: Optional[int]) -> tuple:
        """The stages for ``m`` equations in ``n`` unknowns (None: not known), in order: the
        first solves every member, each later one the members that `needs_retry` after
        the ones before (see `fall_back`). Levenberg-Marquardt alone for m > n."""
        if self.methods is None and m is not None:
            check_shape(self, m, n, least_squares=True)
            if m > n:
                return (LevenbergMarquardt(rtol=self.rtol, atol=self.atol,
                                           linear_solver=self.linear_solver),)
        return self.stages()

    def split(self, m: int, n: int) -> Optional[tuple]:
        """``(first stage, the rest as a Default)`` for running the fallbacks only when needed;
        None when there is nothing to split (least squares, or a single stage)."""
        stages = self.plan(m, n)
        if len(stages) < 2:
            return None
        return stages[0], dataclasses.replace(self, methods=stages[1:])

    def run(self, problem: FlatProblem, x0, params: Any, active) -> FlatSolution:
        out = jax.eval_shape(problem.fn, x0, params)
        vectors = x0.ndim == 1 and len(out.shape) == 1
        stages = self.plan(*((out.shape[0], x0.shape[0]) if vectors else (None, None)))
        return run_stages(NewtonRestarts.of(stages), problem, x0, params, active)


def run_stages(stages: tuple, problem: FlatProblem, x0, params: Any,
               active) -> FlatSolution:
    """``Default``'s order, traced: the first stage solves every active member, each later
    one the members that `needs_retry` after the ones before (skipped when there are none),
    each member keeping its better attempt.

    One loop over a ``lax.switch`` of the stages (not one ``cond`` each): XLA's cost
    estimate counts a loop body once, so a small system's program stays under XLA:CPU's
    threshold for running inline on the caller's thread (about 1000 flops) instead of
    being handed to a worker thread, which costs more than a small solve itself. The loop
    runs once per stage whatever the members' outcomes, so under ``vmap`` its index stays
    unbatched and the switch runs one stage a turn; a stage no member needs is skipped (a
    ``cond``: a select under ``vmap``, where the stage's loops stop at once for inactive
    members).
    """
    if len(stages) == 1:
        return stages[0].run(problem, x0, params, active)

    def attempt(first: bool, stage):
        def run(best: FlatSolution) -> FlatSolution:
            if first:
                return stage.run(problem, x0, params, active)
            members = active & needs_retry(best)
            return lax.cond(jnp.any(members),
                            lambda: merge(best, stage.run(problem, x0, params, members), members),
                            lambda: best)
        return run

    branches = [attempt(i == 0, stage) for i, stage in enumerate(stages)]
    return lax.fori_loop(0, len(stages), lambda k, best: lax.switch(k, branches, best),
                         _nothing(x0))


def _nothing(x0) -> FlatSolution:
    """The attempt before any: x0, no evaluations, an infinite residual (any attempt that
    converges or has a finite residual is `_better`)."""
    zero = jnp.zeros((), jnp.int32)
    return make_solution(x0, code(RESULTS.max_steps_reached), zero, zero, zero,
                         jnp.full((), jnp.inf, x0.dtype))


def needs_retry(sol: FlatSolution) -> Any:
    """The members a later stage retries: failed, with finite inputs. Array-generic: numpy
    arrays in, numpy out (the host's staging), traced in, traced out."""
    return ~sol.converged & (sol.result != int(RESULTS.nonfinite_input))


def fall_back(stages: tuple, first: Callable, retry: Callable) -> FlatSolution:
    """``Default``'s order on the host (`run_staged`; `run_stages` is its traced twin):
    ``first(stage)`` solves every member with the first stage, then ``retry(stage, best)``
    gives each later stage the members that `needs_retry` and keeps each member's better
    attempt."""
    best = first(stages[0])
    for stage in stages[1:]:
        best = retry(stage, best)
    return best
