"""Gathering a graph's leaf values into a lowered layout: ``(x0, params)`` for one build.

Runs on every `System.build` (on a structure-cache hit it is all that runs besides the
flatten), so it stays on the host where it can: numbers and concrete CPU arrays are stacked
with numpy; accelerator arrays and tracers with one compiled call. A graph whose columns are
all scalars of one dtype, given as numbers (what builders usually make) or concrete CPU
arrays, takes `ScalarLayout`: one numpy array of the leaves and one precomputed index per
column and for x.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

import simgraph as sg

from .._concrete import is_traced
from .._inputs import check_integer_range
from ._kinds import Analysis, Column, _Keys, _python_keys


class ScalarLayout:
    """Where each column and each unknown sits among a graph's flat leaves, for graphs whose
    columns are all scalars of one dtype (built once per plan; None otherwise)."""

    def __init__(self, an: Analysis, positions: list, key: tuple):
        self.key, self.x_dtype = key, np.dtype(an.x_dtype)
        self.x_index = np.zeros(an.n, np.int64)
        self.params: list = []  # (kind label, [(column label, leaf indices)])
        for kind, pos in zip(an.kinds, positions):
            cols = []
            for j, col in enumerate(kind.columns):
                if col.unknown:
                    self.x_index[kind.xidx[j].reshape(-1)] = pos[:, j]
                else:
                    cols.append((col.label, np.ascontiguousarray(pos[:, j])))
            self.params.append((kind.label, cols))

    @classmethod
    def of(cls, an: Analysis, positions: list):
        keys = {(c.shape, c.dtype) for kind in an.kinds for c in kind.columns}
        if len(keys) != 1 or next(iter(keys))[0] != ():
            return None
        return cls(an, positions, keys.pop())

    def gather(self, leaves: list):
        """``(x0, params)``, or None unless every leaf is a number of the layout's type or a
        concrete CPU array of its shape and dtype."""
        arrays = self._fits(leaves)
        if arrays is None:
            return None
        if arrays:  # read each array first: numpy's own conversion of a list is slower
            leaves = [np.asarray(v) if isinstance(v, jax.Array) else v for v in leaves]
        flat = np.asarray(leaves, dtype=self.key[1])
        params = {label: {name: flat[index] for name, index in cols} for label, cols in self.params}
        return flat[self.x_index].astype(self.x_dtype, copy=False), params

    def _fits(self, leaves: list) -> bool | None:
        """None if some leaf does not fit the layout, else whether any leaf is an array."""
        numbers = _python_keys(jax.config.jax_enable_x64)
        arrays = False
        for t in set(map(type, leaves)):
            if t in numbers:
                if numbers[t] != self.key:
                    return None
            elif issubclass(t, jax.Array):
                arrays = True
            else:
                return None
        if not arrays:
            return False
        arrays = [v for v in leaves if isinstance(v, jax.Array)]
        fits = (all(v.shape == () and v.dtype == self.key[1] for v in arrays)
                and readable_on_host(arrays))
        return True if fits else None


def gather(an: Analysis, positions: list, leaves: list, scalar: ScalarLayout | None = None):
    """``(x0, params)`` from a graph's flat leaves (``jax.tree_util.tree_leaves`` order) into the
    stacked per-kind layout of ``an``; None if a leaf's shape or dtype differs from the layout
    (the graph then needs a new analysis). ``scalar``: the plan's `ScalarLayout`, tried first.
    Numbers, numpy leaves and concrete CPU arrays are stacked on the host into numpy params,
    other jax arrays on the device (one compiled gather per layout: no accelerator leaf
    leaves the device)."""
    if scalar is not None:
        values = scalar.gather(leaves)
        if values is not None:
            return values
    columns = _columns(an, positions, leaves)
    if columns is None:
        return None
    x_pieces, params = [], {}
    for ki, kind in enumerate(an.kinds):
        cols = params[kind.label] = {}
        for j, col in enumerate(kind.columns):
            if col.unknown:
                x_pieces.append((kind.xidx[j], columns[ki, j]))
            else:  # host values stay numpy: a jitted solve takes them with its own transfer
                cols[col.label] = columns[ki, j]
    return _assemble_x(an, x_pieces), params


def _columns(an: Analysis, positions: list, leaves: list) -> dict | None:
    """The columns, each checked against the layout; None at the first mismatch."""
    keys, host, device = _Keys(), {}, {}
    for ki, (kind, pos) in enumerate(zip(an.kinds, positions)):
        for j, col in enumerate(kind.columns):
            values = list(map(leaves.__getitem__, pos[:, j].tolist()))
            if not _matches(values, col, keys):
                return None
            if any(isinstance(v, jax.Array) for v in values):
                if not readable_on_host(values):
                    device[ki, j] = values
                    continue
                values = [np.asarray(v) for v in values]
            if col.dtype.kind in "iu":  # numpy would wrap what JAX narrows (x64 off)
                check_integer_range(np.asarray(values), f"{kind.label}.{col.label} values")
            host[ki, j] = np.asarray(values, dtype=col.dtype).reshape((kind.count,) + col.shape)
    if device:
        dtypes = tuple(an.kinds[ki].columns[j].dtype for ki, j in device)
        host.update(zip(device, _stack_on_device(tuple(device.values()), dtypes)))
    return host


def readable_on_host(values: list) -> bool:
    """Whether every array among ``values`` is a concrete CPU array: reading one costs
    less than a microsecond, a compiled stacking call on the device ~15 us. Elsewhere
    (an accelerator, a tracer) the values are stacked on the device."""
    return all(not isinstance(v, jax.Array)
               or (not is_traced(v) and next(iter(v.devices())).platform == "cpu")
               for v in values)


def _matches(values: list, col: Column, keys: _Keys) -> bool:
    """Whether every value has the column's shape and (canonical) dtype."""
    expect = (col.shape, col.dtype)
    types = set(map(type, values))
    if all(t in keys.py for t in types):
        return all(keys.py[t] == expect for t in types)
    try:
        return all(keys.leaf(v, (object, col.field)) == expect for v in values)
    except sg.GraphTypeError:
        return False


@functools.partial(jax.jit, static_argnums=1)
def _stack_on_device(columns: tuple, dtypes: tuple) -> list:
    return [jnp.stack([jnp.asarray(v, dtype) for v in values]) for values, dtype in zip(columns, dtypes)]


def _assemble_x(analysis: Analysis, pieces: list):
    if not any(isinstance(v, jax.Array) for _, v in pieces):
        x0 = np.zeros(analysis.n, dtype=analysis.x_dtype)
        for idx, values in pieces:
            x0[idx] = np.asarray(values).reshape(idx.shape)
        return x0
    indices, values = zip(*pieces)
    return _scatter_x(values, indices, analysis.n, np.dtype(analysis.x_dtype))


@functools.partial(jax.jit, static_argnums=(2, 3))
def _scatter_x(values: tuple, indices: tuple, n: int, dtype) -> jax.Array:
    """x0 from device columns in one compiled call (eager ``.at[].set``s cost ~0.3 ms each)."""
    x0 = jnp.zeros(n, dtype)
    for idx, column in zip(indices, values):
        x0 = x0.at[idx].set(jnp.reshape(column, idx.shape).astype(dtype))
    return x0
