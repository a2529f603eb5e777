"""Node positions for drawing a network that has no coordinates: stress majorization.

Graph distances (hops) are matched by distances in the plane, starting from classical MDS and
refined by SMACOF iterations (Gansner, Koren & North 2004), in numpy with SciPy's shortest
paths. Deterministic: the same graph always gets the same picture.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import shortest_path

__all__ = ["graph_layout", "MAX_LAYOUT_NODES"]

#: Above this many nodes a computed layout is a hairball (and O(n^2) memory): callers draw a
#: chart instead.
MAX_LAYOUT_NODES = 500


def graph_layout(n: int, edges: Sequence[tuple[int, int]], iterations: int = 100) -> np.ndarray:
    """Positions (n, 2) of the nodes ``0..n-1`` joined by ``edges`` (pairs of node indices),
    scaled to the unit square (nodes of separate components one hop further apart than the
    farthest connected pair)."""
    if n == 0:
        return np.zeros((0, 2))
    dist = _hop_distances(n, edges)
    x = _classical_mds(dist)
    x = _smacof(dist, x, iterations)
    x -= x.min(axis=0)
    return x / max(float(x.max()), 1e-12)


def _hop_distances(n: int, edges) -> np.ndarray:
    """Shortest-path hop counts; pairs in different components get the largest distance + 1."""
    pairs = np.asarray(list(edges), dtype=np.int64).reshape(-1, 2)
    adjacency = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])),
                           shape=(n, n)).tocsr()   # SciPy's dense (Floyd-Warshall) path needs CSR
    dist = shortest_path(adjacency, directed=False, unweighted=True)
    finite = np.isfinite(dist)
    dist[~finite] = (dist[finite].max() if finite.any() else 0.0) + 1.0
    return dist


def _classical_mds(dist: np.ndarray) -> np.ndarray:
    """The best 2-D embedding of the distances in the least-squares sense of inner products."""
    n = len(dist)
    centre = np.eye(n) - 1.0 / n
    gram = -0.5 * centre @ (dist ** 2) @ centre
    values, vectors = np.linalg.eigh(gram)
    top = np.argsort(values)[::-1][:2]
    x = vectors[:, top] * np.sqrt(np.maximum(values[top], 1e-9))
    if x.shape[1] < 2:  # a single node
        x = np.pad(x, ((0, 0), (0, 2 - x.shape[1])))
    jitter = np.random.default_rng(0).normal(scale=1e-3, size=x.shape)  # split coincident nodes
    return x + jitter


def _smacof(dist: np.ndarray, x: np.ndarray, iterations: int, tol: float = 1e-5) -> np.ndarray:
    """Minimise sum w_ij (|x_i - x_j| - d_ij)^2 with w = d^-2 by majorization steps, until
    the positions move less than ``tol`` (relative) in a step."""
    n = len(dist)
    with np.errstate(divide="ignore"):
        weights = np.where(dist > 0, dist ** -2.0, 0.0)
    inverse = np.linalg.pinv(np.diag(weights.sum(axis=1)) - weights)
    pull = weights * dist
    diagonal = np.arange(n)
    for _ in range(iterations):
        gap = np.hypot(x[:, 0, None] - x[None, :, 0], x[:, 1, None] - x[None, :, 1])
        with np.errstate(divide="ignore", invalid="ignore"):
            b = np.where(gap > 0, -pull / gap, 0.0)
        b[diagonal, diagonal] = -b.sum(axis=1)
        new = inverse @ (b @ x)
        done = np.abs(new - x).max() <= tol * np.abs(new).max()
        x = new
        if done:
            break
    return x
