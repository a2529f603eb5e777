"""Is a solved truss an equilibrium with a meaning? Its tangent stiffness on the free degrees
of freedom says.

A mechanism (a square frame without a diagonal, a node held by a support that fixes nothing)
has no stiffness against some motion: unloaded, every position along it balances, so "the"
solution is arbitrary; loaded in compression it balances only in an unstable position that
any disturbance leaves. Neither is the array's structure (the library's structural check sees
whole arrays, and a support's ``jnp.where`` joins a free component to its node), so the
stiffness matrix is checked here, in NumPy: ``K = EA/L0 n n^T + N/L (I - n n^T)`` per bar
(``n`` the bar's direction in the deformed geometry, ``N`` its axial force), assembled over
the displacements no support fixes. A zero eigenvalue is a mechanism, a negative one an
unstable equilibrium; the solve is refused for either (``MechanismError``), naming the nodes
that move in the weakest mode.
"""
from __future__ import annotations

import numpy as np

import simgraph as sg

from .._islands import shown

__all__ = ["MechanismError", "check_stable", "unstable_points", "SINGULAR", "ROUNDOFF"]

#: Eigenvalue of the free stiffness taken as zero, relative to the softest bar's EA / L0.
SINGULAR = 1e-9
#: ... but never below this fraction of the largest eigenvalue: what double precision
#: resolves in a stiffness computed from solved positions (a ratio to the largest
#: eigenvalue alone, 1e-9, refused a stable truss whose bars' EA differ by 1e9).
ROUNDOFF = 1e-12


def zero_stiffness(truss, k: np.ndarray) -> tuple[float, bool]:
    """The stiffness (N/m) below which an eigenvalue of the free stiffness ``k`` counts as
    zero, and whether precision sets it (the bars' stiffnesses span more than it resolves)."""
    soft = min((float(np.min(np.asarray(b.EA, float) / np.asarray(b.L0, float)))
                for b in truss.bars), default=0.0)
    top = max(float(np.max(np.sum(np.abs(k), axis=1))) if k.size else 0.0,
              np.finfo(float).tiny)
    return max(SINGULAR * soft, ROUNDOFF * top), ROUNDOFF * top > SINGULAR * soft


class MechanismError(sg.GraphError):
    """The truss is a mechanism, or balances only unstably; ``nodes`` names the nodes that
    move in the weakest mode, ``result`` is the solve (its numbers, not a meaningful answer)."""

    def __init__(self, message: str, nodes: tuple, result=None):
        super().__init__(message)
        self.nodes, self.result = nodes, result


def free_stiffness(truss, displacements=None) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """The tangent stiffness (N/m) on the free displacements of a solved (unbatched) truss,
    and the ``(node index, component)`` of each of its rows. ``displacements``: (nodes, 2)
    to use instead of the nodes' own ``u`` (a sweep point)."""
    index = {id(n): k for k, n in enumerate(truss.nodes)}
    if displacements is None:
        displacements = [np.asarray(n.u, float) for n in truss.nodes]
    pos = [np.asarray(n.X, float) + np.asarray(u, float)
           for n, u in zip(truss.nodes, displacements)]
    k = np.zeros((2 * len(pos), 2 * len(pos)))
    for bar in truss.bars:
        a, b = index[id(bar.a)], index[id(bar.b)]
        d = pos[b] - pos[a]
        length = float(np.linalg.norm(d))
        n = d / length
        ea, l0 = float(bar.EA), float(bar.L0)
        block = ea / l0 * np.outer(n, n) + ea * (length - l0) / l0 / length * (
            np.eye(2) - np.outer(n, n))
        for i, j, sign in ((a, a, 1), (b, b, 1), (a, b, -1), (b, a, -1)):
            k[2 * i:2 * i + 2, 2 * j:2 * j + 2] += sign * block
    fixed = set()
    for s in truss.supports:
        for comp in np.flatnonzero(np.asarray(s.fixed)):
            fixed.add((index[id(s.node)], int(comp)))
    free = [(i, c) for i in range(len(pos)) for c in (0, 1) if (i, c) not in fixed]
    rows = [2 * i + c for i, c in free]
    return k[np.ix_(rows, rows)], free


def unstable_points(truss, displacements, converged) -> np.ndarray:
    """Indices of the converged sweep points (``displacements``: (points, nodes, 2)) whose
    free stiffness is not safely positive definite: Cholesky of ``K - s I`` with
    ``s = SINGULAR ||K||_inf`` (at least SINGULAR times the largest eigenvalue) fails."""
    bad = []
    for p in np.flatnonzero(np.asarray(converged, bool)):
        k, free = free_stiffness(truss, displacements[p])
        if not free or not np.all(np.isfinite(k)):
            continue
        k = 0.5 * (k + k.T)
        shift = zero_stiffness(truss, k)[0]
        try:
            np.linalg.cholesky(k - shift * np.eye(len(k)))
        except np.linalg.LinAlgError:
            bad.append(p)
    return np.asarray(bad, dtype=int)


def check_stable(truss, result=None) -> None:
    """Raise ``MechanismError`` if the solved ``truss`` has a free stiffness that is singular
    (a mechanism) or not positive definite (an unstable equilibrium)."""
    k, free = free_stiffness(truss)
    if not free:
        return
    k = 0.5 * (k + k.T)
    values, vectors = np.linalg.eigh(k)
    if not np.all(np.isfinite(values)):
        return  # a non-finite solve is reported as not converged already
    top = max(float(np.max(np.abs(values))), np.finfo(float).tiny)
    zero, precision = zero_stiffness(truss, k)
    if values[0] > zero:
        return
    mode = np.abs(vectors[:, 0])
    moving = sorted({free[r][0] for r in np.flatnonzero(mode > 0.1 * mode.max())})
    names = tuple(truss.node_names[i] for i in moving)
    what = ("is a mechanism: nothing resists a motion of" if values[0] >= -zero
            else "balances only unstably (compression lets it buckle away) in a motion of")
    why = (f" (or its bars' stiffnesses span more than double precision resolves: below "
           f"{zero:.3g} N/m a stiffness cannot be told from zero beside {top:.3g} N/m; give "
           "the bars EA values closer together)") if precision else ""
    raise MechanismError(
        f"the truss {what} node(s) {shown(list(names))} (smallest stiffness {values[0]:.3g} "
        f"N/m, largest {top:.3g} N/m){why}, so the solution is not a meaningful equilibrium. "
        "Add bars (a diagonal) or supports that hold those nodes.", names, result)
