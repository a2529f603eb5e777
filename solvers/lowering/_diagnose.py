"""Find the parts of a system whose Jacobian is numerically singular, by name.

Structural checks cannot see an island with no reference (a sub-network whose equations are
only determined up to a constant): its pattern has full structural rank. Here the pattern is
split into connected components and each is tested at a point: a component whose equations
sum to zero identically (conservation with no reference: ``J^T 1 = 0`` on it) is flagged at
any size; small components are also checked by the singular values of their Jacobian block.
Equations whose derivatives are NaN or inf at the point are named first (one JVP finds them:
``J 1`` is non-finite exactly in those rows); such a matrix is never handed to an SVD, so
diagnosing never raises on non-finite values.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from . import _kinds
from ._model_errors import listing


def components(rows: np.ndarray, cols: np.ndarray, m: int, n: int):
    """Connected components of the equations-unknowns graph: (row labels, col labels)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    graph = coo_matrix((np.ones(len(rows), np.int8), (rows, cols + m)), shape=(m + n, m + n))
    _, labels = connected_components(graph, directed=False)
    return labels[:m], labels[m:]


def diagnose(system, x, params, max_block: int = 256, rtol: float = 1e-10) -> str | None:
    """A message naming the equations with non-finite derivatives and the nodes of each
    numerically singular component at ``x``, or None."""
    rows, cols, (m, n) = system.sparsity()
    if m == 0 or n == 0:
        return None
    nonfinite = _nonfinite_rows(system, x, params)
    if nonfinite.any():
        labels = [label for label, bad in zip(system.residual_labels(), nonfinite) if bad]
        return (f"the Jacobian has NaN or inf entries in the equations {listing(labels)} at "
                "this x (a derivative that is infinite or undefined there, e.g. sqrt(|x|) or "
                "|x|^p with p < 1 at 0): regularise it there, or start away from such points.")
    row_c, col_c = components(rows, cols, m, n)
    found = _conservation(system, x, params, row_c, col_c, rtol)
    found += _small_blocks(system, x, params, row_c, col_c, max_block, rtol, skip={c for c, _ in found})
    if not found:
        return None
    an = system._s.an
    owners = np.repeat(np.arange(an.n_nodes), an.x_size)
    parts = []
    for comp, why in found:
        names = [_kinds.node_path(an, k) for k in np.unique(owners[col_c == comp]).tolist()]
        parts.append(f"the part with the unknowns of {listing(names)} {why}")
    return ("the Jacobian is singular: " + "; ".join(parts) + ". Such a part usually lacks a "
            "reference (ground, reservoir, slack bus) or is disconnected from it: connect it or "
            "remove it.")


def _nonfinite_rows(system, x, params) -> np.ndarray:
    """Rows of J with a NaN or inf entry (J 1 is non-finite there)."""
    x = jnp.asarray(x)
    _, j_ones = jax.jvp(lambda y: system.residual(y, params), (x,), (jnp.ones_like(x),))
    return ~np.isfinite(np.asarray(j_ones))


def _conservation(system, x, params, row_c, col_c, rtol) -> list:
    m = len(row_c)
    _, vjp = jax.vjp(lambda y: system.residual(y, params), x)
    signs = jnp.asarray(np.random.default_rng(0).choice([-1.0, 1.0], m), dtype=x.dtype)
    ones, scale = (np.abs(np.asarray(vjp(v)[0])) for v in (jnp.ones(m, x.dtype), signs))
    found = []
    for comp in np.unique(row_c).tolist():
        on = col_c == comp
        if on.any() and ones[on].max() <= rtol * max(scale[on].max(), 1e-300):
            found.append((comp, "has equations that sum to zero identically (a conservation "
                                "law with nothing fixing the level)"))
    return found


def _small_blocks(system, x, params, row_c, col_c, max_block, rtol, skip) -> list:
    comps = [c for c in np.unique(col_c).tolist() if c not in skip]
    sizes = {c: int((col_c == c).sum()) for c in comps}
    small = [c for c in comps if sizes[c] <= max_block and sizes[c] == int((row_c == c).sum())]
    if not small:
        return []
    width = max(sizes[c] for c in small)
    pos = np.zeros(len(col_c), np.int64)
    basis = np.zeros((width, len(col_c)), dtype=np.asarray(x).dtype)
    for c in small:
        idx = np.flatnonzero(col_c == c)
        pos[idx] = np.arange(len(idx))
        basis[pos[idx], idx] = 1.0
    jvp = jax.vmap(lambda v: jax.jvp(lambda y: system.residual(y, params), (x,), (v,))[1])
    probes = np.asarray(jax.jit(jvp)(jnp.asarray(basis)))  # (width, m)
    found = []
    for c in small:
        r_idx, c_idx = np.flatnonzero(row_c == c), np.flatnonzero(col_c == c)
        block = probes[pos[c_idx]][:, r_idx].T
        if not np.isfinite(block).all():  # never hand a non-finite matrix to an SVD
            found.append((c, "has NaN or inf entries in its Jacobian block"))
            continue
        s = np.linalg.svd(block, compute_uv=False)
        if s[-1] <= rtol * max(s[0], 1e-300):
            rank = int((s > rtol * max(s[0], 1e-300)).sum())
            found.append((c, f"has a singular Jacobian block (rank {rank} of {len(s)})"))
    return found
