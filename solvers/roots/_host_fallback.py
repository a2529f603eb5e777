"""``Default``'s fallback stages run from the host when traced: a program that Newton
solves compiles Newton alone.

Compiled into the caller's program, the trust region and the homotopy dominate its first
call (a 10-node ladder's ``jit(solve(graph))``: 3.6 s with them, 0.9 s without) and cost
at every call even untaken (~40 us per stage on a 2-core CPU). Here the program holds the
first stage and a ``lax.cond`` that calls back to the host (``jax.pure_callback``) only
when the member needs a fallback; the host runs the later stages in ``Default``'s order,
each compiled on first need and kept. Under ``vmap`` the stages stay in the program
(``custom_vmap``): one loop runs a batch's fallbacks for exactly the members that need
them, where a callback would carry the whole batch through the host at every call. A
model whose functions use a traced value of an enclosing transform (through a static
callable, or a class defined inside the caller's ``jit``) compiles every stage too: the
host calls them after the trace, where that value is gone. JAX's
persistent cache never stores a program with a callback, so with that cache on every stage
is compiled in (once, then read back by later processes).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .._concrete import is_traced
from ._attempts import fall_back, merge_on_host, needs_retry
from ._method import FlatProblem
from ._solution import FlatSolution


def sends_fallbacks_to_host(mode: str, problem: FlatProblem) -> bool:
    """Whether a traced ``Default`` with ``traced_fallbacks=mode`` calls back for its later
    stages: never for a problem whose functions the host may not call (they may close over
    traced values), always for ``"callback"``; for ``"auto"`` on CPU while JAX's persistent
    compilation cache is off (JAX never stores a program with a host callback: with the
    cache on, a program with every stage is compiled once and read back by later
    processes)."""
    if mode == "compiled" or not problem.host_callable:
        return False
    return mode == "callback" or (jax.default_backend() == "cpu" and not persistent_cache_on())


def closes_over_no_tracer(problem: FlatProblem, x0, params: Any) -> bool:
    """Whether the problem's functions, traced at ``(x0, params)``, use no traced value of
    an enclosing transform (a model may reach one through a static callable field or a
    class defined inside the caller's ``jit``/``vmap``): the host calls them after the
    trace has ended, where such a value is gone."""
    calls = [(problem.fn, (x0, params))]
    if problem.step_limit is not None:
        calls.append((problem.step_limit, (x0, x0, params)))
    if problem.continuation is not None:
        calls.append((problem.continuation, (params, jnp.ones((), x0.dtype))))
    return not any(any(map(is_traced, jax.make_jaxpr(fn)(*args).consts)) for fn, args in calls)


def persistent_cache_on() -> bool:
    """Whether JAX stores compiled programs on disk (``solvers.enable_compilation_cache``)."""
    return bool(jax.config.jax_compilation_cache_dir) and jax.config.jax_enable_compilation_cache


def with_host_fallbacks(stages: tuple, problem: FlatProblem, compiled: Callable, x0,
                        params: Any, active) -> FlatSolution:
    """``stages[0]`` in the program, the later stages from the host when needed;
    ``compiled(x0, params, active)`` (all stages in the program) for a batch."""
    leaves = jax.tree_util.tree_leaves((x0, params))
    weak = tuple(jax.typeof(v).weak_type for v in leaves)
    if any(w and jnp.ndim(v) for w, v in zip(weak, leaves)):
        return compiled(x0, params, active)  # see _later_stages: only scalars keep it
    run = jax.custom_batching.custom_vmap(functools.partial(_one_member, stages, problem, weak))
    run.def_vmap(functools.partial(_batch, compiled))
    return run(x0, params, jnp.asarray(active, bool))


def _one_member(stages: tuple, problem: FlatProblem, weak: tuple, x0, params: Any,
                active) -> FlatSolution:
    first = stages[0].run(problem, x0, params, active)
    shapes = jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), first)
    host = functools.partial(_later_stages, stages, problem, weak)
    args = lax.stop_gradient((x0, params, active, first))
    return lax.cond(active & needs_retry(first),
                    lambda: jax.pure_callback(host, shapes, *args), lambda: first)


def _batch(compiled: Callable, axis_size: int, in_batched: list, x0, params: Any, active):
    axes = tuple(jax.tree_util.tree_map(lambda batched: 0 if batched else None, in_batched))
    # an unbatched argument may come back as a Python value (``True``, whose ``~`` is -2)
    active = jnp.asarray(active, bool)
    out = jax.vmap(compiled, in_axes=axes, axis_size=axis_size)(x0, params, active)
    return out, jax.tree_util.tree_map(lambda _: True, out)


def _later_stages(stages: tuple, problem: FlatProblem, weak: tuple, x0, params: Any, active,
                  first: FlatSolution) -> FlatSolution:
    """On the host (NumPy values), after ``first`` (``stages[0]``'s attempt in the program):
    `fall_back`'s order, each later stage for the member if it still `needs_retry`, keeping
    its better attempt, as ``run_stages`` does in a program. A value that was weakly
    typed in the program (a Python number: it takes the other operand's type) comes back a
    Python number, so the stages compute in the program's types (a float32 x with a float
    parameter stays float32)."""
    leaves, treedef = jax.tree_util.tree_flatten((x0, params))
    x0, params = treedef.unflatten([v.item() if w else v for v, w in zip(leaves, weak)])

    def retry(stage, best: FlatSolution) -> FlatSolution:
        if not (np.asarray(active) & np.asarray(needs_retry(best))):
            return best
        return merge_on_host(best, _run_stage(problem, stage, x0, params), np.True_)

    return jax.tree_util.tree_map(np.asarray, fall_back(stages, lambda _: first, retry))


@functools.partial(jax.jit, static_argnums=(0, 1))
def _run_stage(problem: FlatProblem, stage, x0, params: Any) -> FlatSolution:
    return stage.solve(problem, x0, params)

