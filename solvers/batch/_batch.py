"""``solve_flat_batch``: many members at once, in chunks, over all devices (the flat form
of ``solvers.solve_batch``).

On CPU each chunk runs as a ``lax.map`` over blocks of members sized so that one block's
Newton iteration stays in cache (`block_size`); each block's loops also stop as soon as its
own members are done. On the 100-node diode ladder blocks of 128 are 3-4x faster than one
``vmap`` over 10 000 members.
"""

from __future__ import annotations

import sys
from functools import lru_cache, partial
from typing import Any, Callable, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from .._concrete import is_concrete
from ..roots._method import AbstractRootMethod, Continuation, FlatProblem, StepLimit
from ..roots._polyalgorithm import Default
from .._inputs import check_flat_inputs
from ..roots._solution import Solution
from ..roots._staging import member_starts, member_values, retrying, run_staged
from ..linear._pattern_check import check_pattern_once
from ..linear._sparsity import SparsityPattern
from ..roots._solve import check_arguments, linear_solver_of, raise_if_failed_anywhere, solve_core

#: Members per chunk on CPU (and the least on an accelerator).
DEFAULT_CHUNK = 16384
#: On an accelerator a chunk is bounded by memory only (this many bytes of dense Jacobians
#: and per-unknown state, at most `MAX_ACCELERATOR_CHUNK` members): every chunk is one
#: serial pass of the Newton loop, with its kernel launches and a host sync per loop test,
#: and a GPU is fed best by one wide pass. On an H100, 100 000 10-node ladders took
#: 91.5 ms in chunks of 16 384 and 57.7 ms in one pass (docs/benchmarks-gpu.md).
ACCELERATOR_CHUNK_BYTES = 1 << 28
MAX_ACCELERATOR_CHUNK = 1 << 17


#: Members per vmapped block on CPU aim at this many bytes of traced intermediates (the
#: linearization's jaxpr, summed; XLA fuses most of them away): blocks whose working set
#: stays in cache run 2-4x faster than one vmap over thousands of members, and each block's
#: loops stop on their own. Measured on a 2-core EPYC (1 MiB L2 per core), solves/s at
#: B = 10 000 by block size: 100-node diode ladder (~160 kB per member, BandedLU) 32: 10.9k,
#: 64: 12.6k, 128: 15.0k, 256: 14.3k, 512: 10.4k; 10x10 diode grid (~330 kB, SparseLU)
#: 32: 4.6k, 64: 5.9k, 128: 5.0k; 10-node ladder: flat from 64 to 1024.
BLOCK_BYTES = 1 << 25
MIN_BLOCK, MAX_BLOCK = 16, 256


def check_chunk_size(chunk_size: Any) -> None:
    """A given ``chunk_size`` must be a positive whole number of members."""
    if chunk_size is not None and (isinstance(chunk_size, bool)
                                   or not isinstance(chunk_size, (int, np.integer))
                                   or chunk_size < 1):
        raise ValueError(f"chunk_size must be a positive number of members (or None for "
                         f"the default), got {chunk_size!r}.")


def default_chunk(n: int) -> int:
    """Members per chunk of a batch of ``n``-unknown systems when ``chunk_size`` is None:
    `DEFAULT_CHUNK` on CPU; on an accelerator as many as `ACCELERATOR_CHUNK_BYTES` allows."""
    if jax.default_backend() == "cpu":
        return DEFAULT_CHUNK
    per_member = 8 * n * n + 128 * n
    return int(np.clip(ACCELERATOR_CHUNK_BYTES // max(per_member, 1), DEFAULT_CHUNK,
                       MAX_ACCELERATOR_CHUNK))


@partial(jax.jit, static_argnums=(0, 1, 2, 3, 4))
def _solve_batched(problem, method, x0_axis, axes_leaves, block, x0, params):
    """``vmap`` of the solve; with ``block`` (a divisor of the batch) a ``lax.map`` over
    blocks of ``block`` members, each a ``vmap``."""
    solve = partial(_vmapped, problem, method, x0_axis, axes_leaves)
    size = _batch_size(x0, x0_axis, params, axes_leaves)
    if not block or block >= size:
        return solve(x0, params)
    leaves, treedef = jax.tree_util.tree_flatten(params)
    split = lambda a: a.reshape((size // block, block) + a.shape[1:])  # noqa: E731
    mapped = ([split(x0)] if x0_axis is not None else [],
              [split(leaf) for leaf, axis in zip(leaves, axes_leaves) if axis is not None])

    def one(parts):
        xs, batched = iter(parts[0]), iter(parts[1])
        full = [next(batched) if axis is not None else leaf
                for leaf, axis in zip(leaves, axes_leaves)]
        return solve(next(xs, x0), jax.tree_util.tree_unflatten(treedef, full))

    out = jax.lax.map(one, mapped)
    return jax.tree_util.tree_map(lambda a: a.reshape((size,) + a.shape[2:]), out)


def _vmapped(problem, method, x0_axis, axes_leaves, x0, params):
    treedef = jax.tree_util.tree_structure(params)
    params_axes = jax.tree_util.tree_unflatten(treedef, axes_leaves)
    return jax.vmap(partial(solve_core, problem, method),
                    in_axes=(x0_axis, params_axes))(x0, params)


def block_size(problem, method, x0, params, axes) -> int:
    """Members per vmapped block (0: the whole chunk at once, on accelerators)."""
    if jax.default_backend() != "cpu":
        return 0
    leaves, treedef = jax.tree_util.tree_flatten(params)
    return _block_for(problem, linear_solver_of(method),
                      _member_spec(x0, None if x0.ndim == 1 else 0), treedef,
                      tuple(_member_spec(a, axis) for a, axis in zip(leaves, axes)))


def _member_spec(leaf, axis) -> tuple:
    """One member's (shape, dtype) of ``leaf``, batched along its leading axis (``axis`` 0)
    or shared (None), read from its shape: slicing a member out would compile a program."""
    shape = tuple(jnp.shape(leaf))
    return (shape if axis is None else shape[1:]), jnp.result_type(leaf)


@lru_cache(maxsize=64)
def _block_for(problem, linear_solver, x_spec, treedef, leaf_specs) -> int:
    structs = [jax.ShapeDtypeStruct(*s) for s in (x_spec,) + leaf_specs]
    params = jax.tree_util.tree_unflatten(treedef, structs[1:])
    try:
        jaxpr = jax.make_jaxpr(lambda x, p: linear_solver.linearize(problem.fn, x, p))(
            structs[0], params)
    except Exception:  # noqa: BLE001 (a back end that cannot linearize alone: no blocks)
        return 0
    per_member = max(_traced_bytes(jaxpr.jaxpr), 1)
    block = 2 ** int(np.floor(np.log2(max(BLOCK_BYTES / per_member, 1))))
    return int(np.clip(block, MIN_BLOCK, MAX_BLOCK))


def _traced_bytes(jaxpr) -> int:
    """Bytes of every value a jaxpr (and its sub-jaxprs) computes."""
    total = 0
    for eqn in jaxpr.eqns:
        total += sum(int(np.prod(v.aval.shape)) * np.dtype(v.aval.dtype).itemsize
                     for v in eqn.outvars if hasattr(v.aval, "shape"))
        for param in eqn.params.values():
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    total += _traced_bytes(inner)
    return total


def _axes_leaves(params, params_axes) -> tuple:
    """Per-leaf batch axis (0 or None) from a prefix tree of axes (or one axis for all)."""
    leaves = jax.tree_util.tree_leaves(params)
    if params_axes is None or isinstance(params_axes, int):
        axes = tuple(params_axes for _ in leaves)
    else:
        try:
            full = jax.tree_util.tree_map(
                lambda axis, sub: jax.tree_util.tree_map(lambda _: axis, sub), params_axes,
                params, is_leaf=lambda a: a is None or isinstance(a, int))
        except ValueError as bad:
            raise ValueError(
                f"params_axes {params_axes!r} is not a prefix of the structure of params "
                f"({jax.tree_util.tree_structure(params)}): give one 0/None per subtree of "
                f"params, e.g. a dict with params' keys, or one 0/None for all. JAX: {bad}"
            ) from None
        axes = tuple(jax.tree_util.tree_leaves(full, is_leaf=lambda a: a is None))
    for axis in axes:
        if axis is not None and (isinstance(axis, bool) or axis != 0):
            move = (f" Move the batch axis first (jnp.moveaxis(p, {axis}, 0)) and pass 0."
                    if isinstance(axis, int) and not isinstance(axis, bool) else "")
            raise ValueError(f"params_axes holds {axis!r}: give 0 (batched along the leading "
                             f"axis) or None (shared), or a prefix tree of them.{move}")
    return axes


def _batch_size(x0, x0_axis, params, axes) -> int:
    leaves = jax.tree_util.tree_leaves_with_path(params)
    for (path, leaf), axis in zip(leaves, axes):
        if axis is not None and np.ndim(leaf) == 0:
            where = "params" + jax.tree_util.keystr(path)
            raise ValueError(
                f"{where} is a scalar but batched (params_axes 0): give it one "
                "value per member along a leading axis (a list of numbers is a pytree of "
                "scalar leaves: pass np.asarray(values)), or None in params_axes to share it.")
    sizes = {np.shape(leaf)[0] for (_, leaf), axis in zip(leaves, axes) if axis is not None}
    if x0_axis is not None:
        sizes.add(x0.shape[0])
    if not sizes:
        raise ValueError(
            "nothing is batched: give params_axes=0 (or a prefix tree with 0 on the batched "
            "params) or a 2-D x0 of shape (B, n); for one member use solvers.solve(fn, x0, params)."
        )
    if len(sizes) != 1:
        raise ValueError(
            f"batched inputs must share one leading batch size, got sizes {sorted(sizes)}; "
            "give unbatched params axis None in params_axes (and a 1-D x0 to share it)."
        )
    return sizes.pop()


def batch_devices() -> Sequence[jax.Device]:
    """The devices a batch is split over (all local devices of the default backend)."""
    return jax.devices()


def solve_flat_batch(fn: Callable[[jax.Array, Any], jax.Array], x0, params: Any, *,
                     solver: Optional[AbstractRootMethod] = None,
                     step_limit: Optional[StepLimit] = None,
                     continuation: Optional[Continuation] = None,
                     params_axes: Any = 0, chunk_size: Optional[int] = None,
                     progress: Any = None, sparsity: Optional[SparsityPattern] = None,
                     throw: bool = False) -> Solution:
    """Solve ``fn(x, params_b) = 0`` for every batch member b; the same as
    ``solvers.solve_batch(fn, x0, params, ...)``, returning a batched `Solution` (no graph).

    ``x0`` is (n,) (shared start) or (B, n). ``params_axes`` is 0 (every leaf batched along
    its leading axis), None, or a prefix tree of 0/None like ``vmap``'s ``in_axes``.
    Outside transforms the batch runs in chunks of ``chunk_size`` members (memory stays
    bounded; one compilation, as the last chunk is padded; None: `default_chunk`, 16 384 on
    CPU and up to 131 072 on an accelerator), with a tqdm bar when stderr is a
    terminal (``progress`` forces it on/off, or is a meter whose ``update(n)`` is given the
    members each chunk finishes), split over all devices with a
    ``NamedSharding`` when there are several; on one CPU each chunk runs in cache-sized
    blocks of members (`block_size`). Under ``jit``/``grad``/``vmap`` it is a plain ``vmap``
    (differentiable). ``sparsity``: the Jacobian's `SparsityPattern` (as in `solve_flat`;
    checked at the first member).
    """
    check_chunk_size(chunk_size)
    check_flat_inputs("solve_batch", x0, params)
    x0, method = check_arguments(x0, solver, sparsity)
    problem = FlatProblem(fn, step_limit, continuation)
    if x0.ndim not in (1, 2):
        raise ValueError(f"x0 of solve_batch has shape {x0.shape}: give (n,) (one start for "
                         "every member) or (B, n) (one per member), n the number of unknowns.")
    x0_axis = 0 if x0.ndim == 2 else None
    axes = _axes_leaves(params, params_axes)
    size = _batch_size(x0, x0_axis, params, axes)
    if size == 0:
        raise ValueError("the batch is empty (0 members along the leading axis): give at "
                         "least one member.")
    if sparsity is not None and is_concrete((x0, params)):
        check_pattern_once(fn, *_first_member(x0, x0_axis, params, axes), sparsity)
    if not is_concrete((x0, params)):
        sol = _solve_batched(problem, method, x0_axis, axes, 0, x0, params)
    elif jax.process_count() > 1:  # several processes: split over all (solvers._sweep)
        from ._sweep import sweep_flat
        sol = sweep_flat(problem, method, x0, params, params_axes, chunk_size=chunk_size,
                         results_dir=None, fingerprint={}, gather=True, progress=progress)[0]
    else:
        sol = _staged(problem, method, x0_axis, axes, x0, params, size, chunk_size, progress)
    return raise_if_failed_anywhere(sol) if throw else sol


def _first_member(x0, x0_axis, params, axes) -> tuple:
    """``(x0, params)`` of the batch's first member."""
    leaves, treedef = jax.tree_util.tree_flatten(params)
    first = [l if a is None else jnp.asarray(l)[0] for l, a in zip(leaves, axes)]
    return (x0 if x0_axis is None else x0[0]), jax.tree_util.tree_unflatten(treedef, first)


def _staged(problem, method, x0_axis, axes, x0, params, size, chunk_size, progress):
    """The batch in chunks; ``Default`` stage by stage (`run_staged`: each fallback only for
    the members still failing, in fixed-size buckets), as `solve_batch` of a graph runs it."""
    if not isinstance(method, Default):
        return _chunked(problem, method, x0_axis, axes, x0, params, size, chunk_size, progress)
    one = lambda a, axis: jax.ShapeDtypeStruct(a.shape[1:] if axis is not None else a.shape,
                                               a.dtype)
    leaves, treedef = jax.tree_util.tree_flatten(params)
    member = jax.tree_util.tree_unflatten(treedef, [one(jnp.asarray(l), a)
                                                    for l, a in zip(leaves, axes)])
    m = int(np.prod(jax.eval_shape(problem.fn, one(x0, x0_axis), member).shape))

    def attempt(stage, members):
        if members is None:
            return _chunked(problem, stage, x0_axis, axes, x0, params, size, chunk_size,
                            progress)
        rows = [l if a is None else member_values(l, members) for l, a in zip(leaves, axes)]
        return _chunked(problem, stage, 0, axes, member_starts(x0, members),
                        jax.tree_util.tree_unflatten(treedef, rows), len(members), chunk_size,
                        progress)

    return run_staged(method, m, int(x0.shape[-1]), attempt)


def _take(tree, axes, start, stop, pad_to):
    """Rows start:stop of batched leaves, padded (repeating the last row) to pad_to."""

    def take(leaf, axis):
        if axis is None:
            return leaf
        rows = np.asarray(leaf[start:stop])
        if rows.shape[0] < pad_to:
            rows = np.concatenate([rows, np.repeat(rows[-1:], pad_to - rows.shape[0], 0)])
        return rows

    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return jax.tree_util.tree_unflatten(treedef, [take(l, a) for l, a in zip(leaves, axes)])


def placer(n_devices: int):
    """``place(tree, axes)``: each leaf of ``tree`` split over a 1-D mesh of ``n_devices``
    devices along its leading axis where its entry of ``axes`` (one per leaf) is 0,
    replicated where it is None; the identity on one device."""
    if n_devices == 1:
        return lambda tree, tree_axes: tree
    mesh = Mesh(np.asarray(batch_devices()), ("batch",))
    split, whole = NamedSharding(mesh, PartitionSpec("batch")), NamedSharding(mesh, PartitionSpec())

    def place(tree, tree_axes):
        leaves, treedef = jax.tree_util.tree_flatten(tree)
        placed = [jax.device_put(l, whole if a is None else split)
                  for l, a in zip(leaves, tree_axes)]
        return jax.tree_util.tree_unflatten(treedef, placed)

    return place


def _chunked(problem, method, x0_axis, axes, x0, params, size, chunk_size, progress):
    n_dev = len(batch_devices())
    if chunk_size is None:
        chunk_size = default_chunk(int(x0.shape[-1]))
    chunk = max(1, min(int(chunk_size), size))
    chunk = -(-chunk // n_dev) * n_dev
    block = block_size(problem, method, x0, params, axes) if n_dev == 1 else 0
    chunk, block = fit_blocks(chunk, block)
    starts = list(range(0, size, chunk))
    place = placer(n_dev)
    bar, members = _chunk_meter(progress, len(starts))
    parts = []
    for start in starts:
        stop = min(start + chunk, size)
        xc = _take(x0, (x0_axis,), start, stop, chunk)
        pc = _take(params, axes, start, stop, chunk)
        xc, pc = place(xc, (x0_axis,)), place(pc, axes)
        out = _solve_batched(problem, method, x0_axis, axes, block, xc, pc)
        if chunk == size and n_dev == 1:  # one unpadded chunk: its arrays stay where they are
            if bar is not None:  # only a caller's meter: no tqdm bar for one chunk
                bar.update(size)
            return out
        parts.append(jax.tree_util.tree_map(lambda a: np.asarray(a)[: stop - start], out))
        if bar is not None:
            bar.update(stop - start if members else 1)
    if bar is not None and not members:
        bar.close()
    return jax.tree_util.tree_map(lambda *a: jnp.asarray(np.concatenate(a)), *parts)


def _chunk_meter(progress: Any, n_chunks: int) -> tuple[Any, bool]:
    """``(bar, per_member)``: the caller's meter (an object with ``update(n)``, counting
    finished members, as a sweep's does; silent while `Default` retries members it has
    counted), a new tqdm bar of chunks (``True``; None: on a terminal), or None."""
    if hasattr(progress, "update"):
        return (None if retrying() else progress), True
    show = sys.stderr.isatty() if progress is None else progress
    return (_progress(n_chunks) if show and n_chunks > 1 else None), False


def fit_blocks(rows: int, block: int) -> tuple[int, int]:
    """``(rows, block)`` with rows split into equal blocks of at most ``block`` members
    (little padding); ``block`` 0 or >= rows: one block."""
    if block and rows > block:
        n_blocks = -(-rows // block)
        block = -(-rows // n_blocks)
        rows = n_blocks * block
    return rows, block


def _progress(total, desc="solve chunks", unit="chunk"):
    try:
        from tqdm.auto import tqdm
    except ImportError:  # the optional "progress" extra is not installed: stay quiet
        return None
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr)
