"""The one iteration loop that every iterative method shares: init / step / terminate.

A method defines what one step does; the loop owns the ``lax.while_loop``, the counters
(steps, residual and Jacobian evaluations) and the cascade that turns a step's verdict into
a ``RESULTS`` code. Under ``vmap`` a finished member's carry is kept by ``lax.while_loop``
itself, so steps never freeze their own state.
"""

from __future__ import annotations

import abc
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
from jax import lax

from .._result import RESULTS
from ._method import AbstractRootMethod, FlatProblem, code, initial_checks, max_abs
from ._shape import check_residual_type, check_square
from ._solution import FlatSolution, make_solution


class Progress(NamedTuple):
    """What one step tells the loop."""

    converged: jax.Array
    failure: jax.Array   # a RESULTS code: ``successful`` unless the step failed
    num_fev: jax.Array   # residual evaluations of this step
    num_jev: jax.Array   # Jacobian evaluations of this step


class Iteration(NamedTuple):
    """The loop's carry: the method's own state and what the loop keeps for every method."""

    state: Any
    steps: jax.Array
    num_fev: jax.Array
    num_jev: jax.Array
    result: jax.Array
    done: jax.Array


def terminate(progress: Progress, steps, max_steps: int) -> tuple[jax.Array, jax.Array]:
    """``(result, done)`` after a step: converged, else the step's failure, else out of
    steps (``max_steps_reached``), else still running."""
    failed = progress.failure != int(RESULTS.successful)
    out_of_steps = steps >= max_steps
    result = jnp.where(progress.converged, code(RESULTS.successful),
                       jnp.where(failed, progress.failure,
                                 jnp.where(out_of_steps, code(RESULTS.max_steps_reached),
                                           code(RESULTS.successful))))
    return result, progress.converged | failed | out_of_steps


class AbstractIterativeMethod(AbstractRootMethod):
    """A method written as ``init`` / ``step`` / ``finish`` on its own state; ``run`` (the
    loop, the counters, the result codes) is shared. Concrete methods have ``atol`` and
    ``max_steps`` fields."""

    #: Whether the loop's state needs F in x0's exact type (not only no wider than it).
    exact_residual_type = False

    @abc.abstractmethod
    def init(self, problem: FlatProblem, x0, f0, params: Any, options: Any) -> Any:
        """The method's state at the (checked) start ``x0`` with ``f0 = F(x0)``."""

    @abc.abstractmethod
    def step(self, problem: FlatProblem, params: Any, state: Any,
             running: jax.Array) -> tuple[Any, Progress]:
        """One iteration. ``running`` is False only for a finished member of a vmapped
        batch (whose new state is discarded): inner loops may skip their work for it."""

    @abc.abstractmethod
    def finish(self, problem: FlatProblem, params: Any, state: Any,
               result) -> tuple[jax.Array, jax.Array, Optional[jax.Array]]:
        """``(x, max|F(x)|, relative step or None)`` of the final state."""

    def start(self, problem: FlatProblem, x0, params: Any, active):
        """``(x0, F(x0), result, done)``: the checks of `initial_checks`."""
        return initial_checks(problem.fn, x0, params, active, self.atol)

    def run(self, problem: FlatProblem, x0, params: Any, active) -> FlatSolution:
        return self.iterate(problem, x0, params, active)

    def iterate(self, problem: FlatProblem, x0, params: Any, active,
                options: Any = None) -> FlatSolution:
        """``run`` with ``options`` for ``init`` (values that may be traced)."""
        check_square(problem.fn, x0, params, self, self.least_squares)
        x0, f0, result, done = self.start(problem, x0, params, active)
        check_residual_type(f0.dtype, x0, self, exact=self.exact_residual_type)
        zero = jnp.zeros((), jnp.int32)
        carry = Iteration(self.init(problem, x0, f0, params, options), zero, zero + 1, zero,
                          result, done)
        carry = lax.while_loop(lambda c: ~c.done,
                               lambda c: self._advance(problem, params, c), carry)
        x, norm, rel_step = self.finish(problem, params, carry.state, carry.result)
        return make_solution(x, carry.result, carry.steps, carry.num_fev, carry.num_jev,
                             norm, rel_step)

    def _advance(self, problem: FlatProblem, params: Any, c: Iteration) -> Iteration:
        state, progress = self.step(problem, params, c.state, ~c.done)
        steps = c.steps + 1
        result, done = terminate(progress, steps, self.max_steps)
        return Iteration(state, steps, c.num_fev + progress.num_fev,
                         c.num_jev + progress.num_jev, result, done)


def last_point(state: Any) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``finish`` for a state with ``x``, ``f`` and ``rel_step`` fields."""
    return state.x, max_abs(state.f), state.rel_step
