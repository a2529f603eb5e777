"""Flat nonlinear test systems with known Jacobian sparsity (until the graph lowering lands).

Each generator returns ``(fn, x0, params, rows, cols)`` with ``fn(x, params) -> residual``
written with gathers and segment sums (like the lowered graph), ``params`` a dict of
arrays that can be batched, and ``rows, cols`` the structural nonzeros of ``dF/dx``.
Circuits are in modified nodal analysis (MNA) form: node voltages, then one current per
voltage source, whose equation ``v - V = 0`` has a zero diagonal.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

VT = 0.025852  # thermal voltage at 300 K
IS = 1e-14  # diode saturation current


def diode_current(v, is_=IS, vt=VT, vmax=0.8):
    """Shockley diode with a linear continuation above ``vmax`` (keeps Newton finite)."""
    vc = jnp.minimum(v, vmax)
    e = jnp.exp(vc / vt)
    return is_ * (e - 1.0) + is_ / vt * e * (v - vc) + 1e-12 * v


def _mna(n_nodes, edges, sources):
    """Residual and pattern for resistors on ``edges``, a diode per node, voltage sources."""
    a, b = (np.asarray(e, np.int32) for e in zip(*edges))
    src = np.asarray(sources, np.int32)
    n = n_nodes + src.size

    def fn(x, p):
        v, i_src = x[:n_nodes], x[n_nodes:]
        cur = (v[a] - v[b]) * p["g"]
        kcl = (jax.ops.segment_sum(cur, a, n_nodes) - jax.ops.segment_sum(cur, b, n_nodes)
               + diode_current(v))
        kcl = kcl.at[src].add(i_src)
        return jnp.concatenate([kcl, v[src] - p["vsrc"]])

    s_rows = n_nodes + np.arange(src.size)
    rows = np.concatenate([a, b, a, b, np.arange(n_nodes), src, s_rows])
    cols = np.concatenate([a, b, b, a, np.arange(n_nodes), s_rows, src])
    return fn, n, rows, cols


def diode_ladder(n_nodes=100, r=1e3, vsrc=2.0, dtype=jnp.float64):
    """Series resistors between consecutive nodes, a diode from each node to ground,
    a voltage source at node 0: ``n_nodes + 1`` unknowns, tridiagonal plus the source."""
    edges = [(k, k + 1) for k in range(n_nodes - 1)]
    fn, n, rows, cols = _mna(n_nodes, edges, [0])
    params = dict(g=jnp.full((len(edges),), 1.0 / r, dtype), vsrc=jnp.asarray([vsrc], dtype))
    return fn, jnp.zeros((n,), dtype), params, rows, cols


def diode_grid(k=10, r=1e3, v1=2.0, v2=1.5, dtype=jnp.float64):
    """A k x k grid of resistors with a diode from every node to ground, driven by two
    voltage sources at opposite corners: ``k*k + 2`` unknowns (the ngspice grid case)."""
    idx = np.arange(k * k).reshape(k, k)
    edges = list(zip(idx[:, :-1].ravel(), idx[:, 1:].ravel()))
    edges += list(zip(idx[:-1, :].ravel(), idx[1:, :].ravel()))
    fn, n, rows, cols = _mna(k * k, edges, [0, k * k - 1])
    params = dict(g=jnp.full((len(edges),), 1.0 / r, dtype), vsrc=jnp.asarray([v1, v2], dtype))
    return fn, jnp.zeros((n,), dtype), params, rows, cols


def random_sparse_function(n=30, density=0.1, seed=0, dtype=jnp.float64):
    """``F(x) = A x + (B sin(x)) * x - c`` with random sparse A (diagonally dominant) and B."""
    rng = np.random.default_rng(seed)
    mask = rng.random((n, n)) < density
    np.fill_diagonal(mask, True)
    rows, cols = np.nonzero(mask)
    a_vals = rng.normal(size=rows.size)
    a_vals[rows == cols] = 2.0 + np.abs(a_vals[rows == cols]) + mask.sum(1)[rows[rows == cols]]
    b_vals = 0.1 * rng.normal(size=rows.size)

    def fn(x, p):
        ax = jax.ops.segment_sum(p["a"] * x[cols], rows, n)
        bs = jax.ops.segment_sum(p["b"] * jnp.sin(x[cols]), rows, n)
        return ax + bs * x - p["c"]

    params = dict(a=jnp.asarray(a_vals, dtype), b=jnp.asarray(b_vals, dtype),
                  c=jnp.asarray(rng.normal(size=n), dtype))
    return fn, jnp.zeros((n,), dtype), params, rows, cols
