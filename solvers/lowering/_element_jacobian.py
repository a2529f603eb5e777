"""dF/dx assembled element by element, as finite-element codes assemble a stiffness matrix.

A coloured Jacobian costs one JVP of the whole residual per colour, and the colours are at
least the most unknowns any equation touches: a substation bus with 40 lines needs 80 JVPs of
the whole network. Here each group of alike elements differentiates its own outputs with
respect to its own unknown inputs (one linearization of the group, then one direction per
local unknown, shared by all members), and the entries are added into the pattern's values
with one scatter: the cost is the largest
number of unknowns one element reads, whatever the network's degrees. It is used when that is
smaller than the number of colours (`worthwhile`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from . import _groups
from ._grouped import Stores, gather, index, vmap
from ._pattern import bits, dependencies

#: Groups of at least this many elements take their directions in a loop (``lax.map``), not
#: one ``vmap``: XLA fuses each element's primal work (sines, cosines) into the tangent of
#: every direction and output entry, where a loop computes it once. case_ACTIVSg2000's
#: 2 733 branches (4 directions): the Jacobian 25-30% faster; groups of ~100 diodes (2
#: directions) run 10-20% slower in a loop.
LOOP_DIRECTIONS_FROM = 1024


class _GroupTerms:
    """Where one group's derivatives land: its unknown inputs, and per output the positions
    in the pattern's values of each (element, output entry, input entry)."""

    def __init__(self, an, evaluator, group, keys: np.ndarray, n: int):
        self.group = group
        kinds = [an.kinds[slot.kind] for slot in group.slots]
        columns = [(j, c) for j, slot in enumerate(group.slots) if slot.alias == j
                   for c in range(len(kinds[j].columns))]
        self.inputs = [(j, c) for j, c in columns if kinds[j].columns[c].unknown]
        xcols = [kinds[j].xidx[c][group.slots[j].rows] for j, c in self.inputs]
        self.sizes = [a.shape[1] for a in xcols]
        self.width = int(sum(self.sizes))
        offsets = np.cumsum([0] + self.sizes)
        data = _groups.abstract_data(an, group, batched=False)
        masks = dependencies(jax.make_jaxpr(evaluator.fns[id(group)])(data))
        self.outputs, positions, self.takes = evaluator.outputs[id(group)], [], []
        for out, mask in zip(self.outputs, masks):
            read = set(bits(mask))
            used = [i for i, (j, c) in enumerate(self.inputs) if columns.index((j, c)) in read]
            take = np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in used] or
                                  [np.zeros(0, np.int64)])
            cols = np.concatenate([xcols[i] for i in used], axis=1) if used else \
                np.zeros((group.count, 0), np.int64)
            rows = out.rows.reshape(group.count, -1)
            key = rows[:, :, None] * n + cols[:, None, :]
            pos = np.searchsorted(keys, key)
            if pos.size and not np.array_equal(keys[np.minimum(pos, len(keys) - 1)], key):
                raise AssertionError("element Jacobian entry outside the sparsity pattern")
            positions.append(pos.reshape(-1))
            self.takes.append(index(take))
        self.positions = positions

    def evaluate(self, fn, stores: Stores, dtype):
        """``(outputs, derivatives)`` of every member: outputs as `Grouped.residual` lays them
        out, derivatives flattened in the order of ``positions``. One linearization of the
        group's vmapped methods, then one direction per local unknown, the same direction for
        every member: members do not share inputs, so each gets its own Jacobian column."""
        data = gather(self.group, stores)
        count = self.group.count
        if not self.width:
            return vmap(fn, self.group)(data), [jnp.zeros(p.shape, dtype) for p in self.positions]
        us = [data[j][c] for j, c in self.inputs]

        def group_fn(us):
            d = [None if slot is None else list(slot) for slot in data]
            for (j, c), u in zip(self.inputs, us):
                d[j][c] = u
            return vmap(fn, self.group)(d)

        outs, linear = jax.linearize(group_fn, us)
        directions = self._directions(us)
        tangents = (jax.lax.map(linear, directions) if count >= LOOP_DIRECTIONS_FROM
                    else jax.vmap(linear)(directions))
        derivs = []
        for tangent, out, take in zip(tangents, self.outputs, self.takes):
            pad = (1,) * (len(out.shape) - len(out.term))
            t = jnp.moveaxis(jnp.reshape(tangent, (self.width, count) + out.term), 0, -1)
            t = jnp.reshape(t, (count,) + pad + out.term + (self.width,))
            t = jnp.broadcast_to(t, (count,) + out.shape + (self.width,))
            t = jnp.reshape(t, (count, -1, self.width))[:, :, take]
            derivs.append(t.reshape(-1).astype(dtype))
        return outs, derivs

    def _directions(self, us: list) -> list:
        """Per input, ``(width, count, *shape)``: direction k is 1 at local unknown k."""
        eye, start, out = np.eye(self.width), 0, []
        for u, size in zip(us, self.sizes):
            block = eye[:, start:start + size].reshape((self.width, 1) + jnp.shape(u)[1:])
            out.append(jnp.broadcast_to(jnp.asarray(block, jnp.result_type(u)),
                                        (self.width,) + jnp.shape(u)))
            start += size
        return out


class ElementJacobian:
    """``(F, dF/dx values aligned with the pattern)`` of a grouped evaluation."""

    def __init__(self, an, evaluator, pattern):
        n = pattern.shape[1]
        keys = pattern.rows.astype(np.int64) * n + pattern.cols
        self.evaluator, self.nnz = evaluator, pattern.nnz
        self.terms = [_GroupTerms(an, evaluator, g, keys, n) for g in evaluator.groups
                      if evaluator.outputs[id(g)]]
        positions = [p for t in self.terms for p in t.positions]
        self.positions = index(np.concatenate(positions) if positions else np.zeros(0, np.int64))
        self.width = max((t.width for t in self.terms), default=0)

    def contributions(self, x, params):
        """``(F, every element's dF/dx entries)``, the entries in the order of ``positions``
        (several may add into one nonzero)."""
        ev = self.evaluator
        stores, dtype = Stores(ev.an, x, params), ev.eq.dtype
        outputs, derivs = [], []
        for t in self.terms:
            outs, ds = t.evaluate(ev.fns[id(t.group)], stores, dtype)
            outputs.append((t.group, outs))
            derivs.extend(ds)
        flat = jnp.concatenate(derivs) if derivs else jnp.zeros(0, dtype)
        return ev.assemble(outputs), flat

    def linearize(self, x, params):
        f, flat = self.contributions(x, params)
        values = jnp.zeros(self.nnz, flat.dtype).at[self.positions].add(flat, mode="promise_in_bounds")
        return f, values


def worthwhile(element: ElementJacobian, n_colors: int) -> bool:
    """Element assembly costs about ``width`` evaluations of the elements (plus a scatter of
    every element's entries); colouring ``n_colors`` JVPs of the whole residual."""
    return element.width < n_colors
