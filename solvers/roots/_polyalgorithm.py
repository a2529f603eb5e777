"""The default method: fast Newton first, robust fallbacks only for the members that need them."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Optional

import jax
import jax.numpy as jnp
from jax import lax

from ..linear._dense import DenseLU
from ._homotopy import Homotopy
from ._levenberg_marquardt import LevenbergMarquardt
from ..linear._abstract import AbstractLinearSolver
from ._attempts import merge, needs_retry, no_attempt
from ._host_fallback import (closes_over_no_tracer, sends_fallbacks_to_host,
                             with_host_fallbacks)
from ._method import AbstractRootMethod, FlatProblem, check_linear_solver, check_tolerances
from ._newton import Newton
from ._shape import check_shape
from ._solution import FlatSolution
from ._trust_region import SCALINGS, TrustRegion

#: Where a traced ``Default`` runs its fallback stages (see ``Default.traced_fallbacks``).
TRACED_FALLBACKS = ("auto", "callback", "compiled")


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

        return lax.while_loop(cond, body, (jnp.zeros((), jnp.int32), no_attempt(x0)))[1]


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

        return lax.while_loop(cond, body, (jnp.zeros((), jnp.int32), no_attempt(x0)))[1]

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
    the compile time when Newton succeeds, with the same answer. Traced (inside ``jit``),
    ``traced_fallbacks`` decides where the later stages run:

    * ``"callback"``: the program holds the first stage only; a member that needs a
      fallback calls back to the host, which runs the later stages as the eager path does
      (each compiled on first need). A 10-node ladder's first ``jit(solve(graph))`` takes
      ~0.9 s instead of ~3.6 s, and untaken stages cost nothing per call. Under ``vmap`` the
      stages stay in the program (one loop runs a batch's fallbacks for the members that
      need them). Needs a problem the host may call (`FlatProblem.host_callable`: the
      graph and flat entry points) whose functions use no traced value of an enclosing
      transform (checked at trace time: a model or function that closes over one compiles
      every stage); a program with a callback cannot be exported (``jax.export``).
    * ``"compiled"``: every stage in the program, the two Newton stages as one
      `NewtonRestarts` loop and all stages as one loop (`run_stages`): self-contained.
    * ``"auto"`` (default): ``"callback"`` on CPU, ``"compiled"`` on other platforms (where
      a callback is a device-host round trip) and wherever JAX's persistent compilation
      cache is on (``solvers.enable_compilation_cache``: JAX never stores a program with a
      callback, while the whole program, compiled once, is read back by later processes).

    Over-determined systems (m > n) go to Levenberg-Marquardt (least squares).
    ``methods`` replaces the sequence of stages.
    """

    rtol: float = 1e-10
    atol: float = 1e-10
    linear_solver: AbstractLinearSolver = DenseLU()
    methods: Optional[tuple] = None
    traced_fallbacks: str = "auto"

    least_squares = True

    def __post_init__(self) -> None:
        check_tolerances(self, "rtol", "atol")
        check_linear_solver(self)
        if isinstance(self.methods, list):  # a list is unhashable: methods are static
            object.__setattr__(self, "methods", tuple(self.methods))
        if self.methods is not None and (
                not self.methods or not all(isinstance(m, AbstractRootMethod)
                                            for m in self.methods)):
            raise ValueError("Default(methods=...) must be a non-empty tuple of method objects "
                             f"such as solvers.Newton(), got {self.methods!r}.")
        if self.traced_fallbacks not in TRACED_FALLBACKS:
            raise ValueError(f"Default(traced_fallbacks=...) must be one of {TRACED_FALLBACKS}, "
                             f"got {self.traced_fallbacks!r}.")

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
        compiled = functools.partial(run_stages, NewtonRestarts.of(stages), problem)
        if (len(stages) > 1 and sends_fallbacks_to_host(self.traced_fallbacks, problem)
                and closes_over_no_tracer(problem, x0, params)):
            return with_host_fallbacks(stages, problem, compiled, x0, params, active)
        return compiled(x0, params, active)


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
                         no_attempt(x0))


