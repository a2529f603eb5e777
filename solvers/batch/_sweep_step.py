"""One step of a sweep: a process solves one chunk of its own members.

The step runs on this process's devices alone (a mesh of its local devices; each device
solves its rows as `solve_flat_batch` would: ``shard_map`` of the blocked ``vmap``, no
communication inside a solve), so processes never wait for each other between chunks.
``Default`` runs as `run_staged` runs it: Newton alone, then the fallback stages only for
the members that need them, padded to a power of two (few shapes to compile).
"""

from __future__ import annotations

from functools import lru_cache, partial

import jax
import numpy as np

from ._batch import _solve_batched, block_size, fit_blocks
from ._distributed import batch_mesh, from_local, spec, to_local
from ..roots._attempts import merge
from ..roots._polyalgorithm import Default
from ..roots._staging import needs_fallback
from ..roots._solution import ARRAYS as FIELDS, FlatSolution


class ChunkSolver:
    """Solves members of this process (one chunk per step) on its own devices."""

    def __init__(self, problem, method, x0, params, axes: tuple, chunk: int = 1):
        leaves, self.treedef = jax.tree_util.tree_flatten(params)
        x0_axis = 0 if x0.ndim == 2 else None
        self.problem, self.method, self.x0_axis, self.axes = problem, method, x0_axis, axes
        self.leaves, self.leaf_axes = [x0] + leaves, (x0_axis,) + tuple(axes)
        self.batched = [np.asarray(leaf) for leaf, axis in zip(self.leaves, self.leaf_axes)
                        if axis is not None]
        self.names = ["start"] * (x0_axis is not None) + [
            f"param_{i}" for i in range(len(self.batched) - (x0_axis is not None))]
        self.mesh = batch_mesh(local=True)
        self.block = block_size(problem, method, x0, params, axes)
        fixed = [leaf for leaf, axis in zip(self.leaves, self.leaf_axes) if axis is None]
        self.fixed = from_local(self.mesh, fixed, [None] * len(fixed))
        self.stages = _stages(problem, method, self._member(0))
        self.chunk = chunk  # every chunk is padded to this size: one compilation for all

    def inputs(self, members: np.ndarray) -> dict[str, np.ndarray]:
        """The members' batched inputs for the results file: ``start`` (if batched) and
        ``param_i``, the i-th batched parameter leaf (`solve_batch`: the i-th swept key)."""
        return {name: leaf[members] for name, leaf in zip(self.names, self.batched)}

    def __call__(self, members: np.ndarray) -> dict[str, np.ndarray]:
        """Solve ``members`` (indices into the batch; may differ in length per process)."""
        size = max(len(members), self.chunk)
        if self.stages is None:
            return self._solve(self.method, members, size)
        first, rest = self.stages
        sol = self._solve(first, members, size)
        retry = np.flatnonzero(needs_fallback(FlatSolution(**sol)))
        if len(retry) == 0:
            return sol
        size = 1 << int(len(retry) - 1).bit_length()  # few distinct shapes to compile
        new = self._solve(rest, members[retry], size)
        new = FlatSolution(**{f: v[: len(retry)] for f, v in new.items()})
        old = FlatSolution(**{f: v[retry] for f, v in sol.items()})
        merged = jax.vmap(merge)(old, new, np.ones(len(retry), bool))
        for f in FIELDS:
            sol[f][retry] = np.asarray(getattr(merged, f))
        return sol

    def _solve(self, method, members: np.ndarray, size: int) -> dict[str, np.ndarray]:
        local = len(jax.local_devices())
        rows, block = fit_blocks(-(-max(size, len(members)) // local), self.block)
        take = np.concatenate([members, np.repeat(members[-1:], rows * local - len(members))])
        placed = iter(from_local(self.mesh, [leaf[take] for leaf in self.batched],
                                 [0] * len(self.batched)))
        fixed = iter(self.fixed)
        leaves = [next(placed) if axis is not None else next(fixed) for axis in self.leaf_axes]
        solve = _compiled(self.problem, method, self.x0_axis, self.axes, block, self.treedef,
                          self.mesh)
        out = to_local(solve(leaves[0], jax.tree_util.tree_unflatten(self.treedef, leaves[1:])))
        return {f: np.array(getattr(out, f)[: len(members)]) for f in FIELDS}

    def _member(self, index: int) -> tuple:
        one = [np.asarray(leaf)[index] if axis is not None else leaf
               for leaf, axis in zip(self.leaves, self.leaf_axes)]
        return one[0], jax.tree_util.tree_unflatten(self.treedef, one[1:])

    def empty(self) -> dict[str, np.ndarray]:
        """Zero members, with the solution's shapes and dtypes (for a process without any)."""
        x, params = self._member(slice(0, 1))
        method = self.method if self.stages is None else self.stages[0]  # what __call__ runs
        out = jax.eval_shape(partial(_solve_batched, self.problem, method, self.x0_axis,
                                     self.axes, 0), x, params)
        return {f: np.zeros((0,) + getattr(out, f).shape[1:], getattr(out, f).dtype)
                for f in FIELDS}


def _stages(problem, method, member: tuple):
    """``Default``'s (Newton, fallbacks) as `run_staged` splits them, else None."""
    if not isinstance(method, Default):
        return None
    x, params = member
    m = jax.eval_shape(problem.fn, x, params).shape
    return method.split(int(np.prod(m)), int(x.shape[-1]))


@lru_cache(maxsize=32)
def _compiled(problem, method, x0_axis, axes: tuple, block: int, treedef, mesh):
    """The blocked solve of `solve_flat_batch`, run by every device on its own rows."""
    params_specs = jax.tree_util.tree_unflatten(treedef, [spec(a) for a in axes])
    local = partial(_solve_batched, problem, method, x0_axis, axes, block)
    return jax.jit(jax.shard_map(local, mesh=mesh, in_specs=(spec(x0_axis), params_specs),
                                 out_specs=spec(0), check_vma=False))
