"""``Default`` on concrete inputs, one stage at a time, without recompiling.

Outside transforms the graph entry points run ``Default``'s stages from the host: Newton for
every member, then each fallback only for the members still failing, merged as
``Default.run`` merges (same answer, codes and summed counts). A stage is compiled only when
some member reaches it. The failing members of a batch are retried in buckets of one fixed
size (per batch size), padded with dummy members whose start is NaN (they stop at once with
``nonfinite_input`` and are dropped): gathers, merges and scatters have fixed shapes too, so
a call whose number of failing members differs compiles nothing new.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import contextvars
import dataclasses
import functools
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np

from ._attempts import fall_back, merge, merge_on_host, needs_retry
from ._polyalgorithm import Default
from ._solution import FlatSolution

#: Failing members are retried in buckets of at most this many (the whole batch when it is
#: smaller): one compiled program per stage, structure and batch size. On CPU a bucket runs
#: in cache-sized blocks whose loops stop on their own, so dummies cost one residual each.
BUCKET = 1024

Attempt = Callable[[Any, Optional[np.ndarray]], FlatSolution]

_merge_rows = jax.jit(jax.vmap(merge))

_RETRYING = contextvars.ContextVar("solvers_staged_retry", default=False)


def retrying() -> bool:
    """True while `run_staged` runs a fallback stage for members an earlier stage solved
    (a progress meter has counted them already)."""
    return _RETRYING.get()


def needs_fallback(sol: FlatSolution) -> np.ndarray:
    """`needs_retry` on the host: the members a fallback stage retries."""
    # ``[()]``: one member's values as NumPy scalars, whose operations cost a fraction of
    # 0-d arrays' (~20 us of a 100 us eager solve); a batch's arrays stay as they are
    return needs_retry(SimpleNamespace(converged=np.asarray(sol.converged)[()],
                                       result=np.asarray(sol.result)[()]))


def stages_of(method: Any, m: int, n: int) -> Optional[tuple]:
    """``Default``'s stages when it can run them one by one, else None (run it whole).
    Kept per configuration: making and checking the stage objects costs more than a small
    warm solve."""
    try:
        return _stages_kept(method, m, n)
    except TypeError:  # a configuration that cannot be a dictionary key
        return _stages(method, m, n)


def _stages(method: Any, m: int, n: int) -> Optional[tuple]:
    stages = method.plan(m, n) if isinstance(method, Default) else ()
    return stages if len(stages) > 1 else None


_stages_kept = functools.lru_cache(maxsize=64)(_stages)


def run_staged(method: Any, m: int, n: int, attempt: Attempt) -> FlatSolution:
    """Run ``method`` on concrete inputs: ``attempt(stage, members)`` solves the batch
    members ``members`` (an index array padded with -1 for dummies; None: all) with a
    stage. ``Default`` goes stage by stage (`fall_back`), other methods run as they are."""
    stages = stages_of(method, m, n)
    if stages is None:
        return attempt(method, None)
    settled = []  # the last solution that no later stage needs to retry: read back once

    def retry(stage, sol: FlatSolution) -> FlatSolution:
        if settled and settled[-1] is sol:
            return sol
        token = _RETRYING.set(True)
        try:
            out = _retry(stage, sol, attempt)
        finally:
            _RETRYING.reset(token)
        if out is sol:
            settled.append(sol)
        return out

    return fall_back(stages, lambda stage: attempt(stage, None), retry)


def _retry(stage, sol: FlatSolution, attempt: Attempt) -> FlatSolution:
    """``stage`` for the members that need it (none: nothing runs, nothing compiles)."""
    retry = needs_fallback(sol)
    if retry.ndim == 0:
        return merge_on_host(sol, attempt(stage, None), jnp.asarray(True)) if retry else sol
    if not retry.any():
        return sol
    return _retry_in_buckets(sol, retry, stage, attempt)


def _retry_in_buckets(sol: FlatSolution, retry: np.ndarray, stage, attempt: Attempt):
    """Run ``stage`` on the members ``retry`` marks, a fixed-size bucket at a time."""
    host = jax.tree_util.tree_map(np.array, sol)  # writable copies
    failing, size = np.flatnonzero(retry), min(retry.size, BUCKET)
    for start in range(0, len(failing), size):
        part = failing[start:start + size]
        members = np.concatenate([part, np.full(size - len(part), -1, part.dtype)])
        old = jax.tree_util.tree_map(lambda a: a[np.maximum(members, 0)], host)
        merged = _merge_rows(old, attempt(stage, members), members >= 0)
        for name, rows in _fields(merged):
            getattr(host, name)[part] = np.asarray(rows)[: len(part)]
    return jax.tree_util.tree_map(jnp.asarray, host)


def _fields(sol: FlatSolution):
    return ((f.name, getattr(sol, f.name)) for f in dataclasses.fields(sol))


def member_starts(x0: Any, members: np.ndarray) -> np.ndarray:
    """Starts of the given members, (len(members), n) on the host, NaN for dummies (-1):
    a NaN start ends a member at once (``nonfinite_input``). ``x0`` is (n,) or (B, n)."""
    x0 = np.asarray(x0)
    rows = (np.repeat(x0[None], len(members), 0) if x0.ndim == 1
            else x0[np.maximum(members, 0)].copy())
    rows[members < 0] = np.nan
    return rows


def member_values(values: Any, members: np.ndarray) -> np.ndarray:
    """Rows of a batched value for the given members, on the host (dummies get row 0)."""
    return np.asarray(values)[np.maximum(members, 0)]
