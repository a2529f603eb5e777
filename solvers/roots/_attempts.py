"""Combining a method's attempts: which members a later stage retries, and which attempt
each member keeps (``Default``'s order, traced or from the host)."""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp

from .._result import RESULTS
from ._method import code
from ._solution import FlatSolution, make_solution


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


#: `merge` of one member's concrete attempts, compiled once for the host's staging and for
#: the fallbacks a traced program calls back for.
merge_on_host = jax.jit(merge)


def no_attempt(x0) -> FlatSolution:
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
