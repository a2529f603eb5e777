"""The truss solve's default tolerance: on the forces (N), scaled to the truss.

A fixed ``max|F| <= 1e-10`` N cannot hold for stiff bars: a bar's force ``EA (L - L0) / L0``
is computed from node positions rounded to ``eps |X|``, so the equilibrium residual never
falls below about ``eps * EA / L0 * |X|`` (a steel bar, EA = 2.1e8 N, 4 m long: ~1e-8 N),
and the step test cannot pass for displacements whose exact value is 0 (pinned nodes, which
end at ~1e-27 m). The tolerance is therefore the larger of a relative accuracy on the
largest applied force (loads, and the forces that prescribed displacements call up) and a
small multiple of that rounding floor: a steel truss converges in a few Newton steps, and a
soft one (EA = 1000 N) is held as tightly as before.
"""
from __future__ import annotations

from typing import Any

import jax
import numpy as np

import solvers

__all__ = ["RTOL", "FORCE_RTOL", "FLOOR", "default_solver", "force_tolerance"]

#: The Newton step test (relative change of every unknown), as ``solvers.Default``'s.
RTOL = 1e-10
#: Accuracy asked of the equilibrium, relative to the largest applied force.
FORCE_RTOL = 1e-12
#: Multiple of the rounding floor ``eps * max(EA / L0) * max|X|`` accepted as converged.
FLOOR = 16.0


def force_tolerance(truss: Any, eps: float, swept: float = 0.0) -> float | None:
    """``max|F|`` (N) below which ``truss`` counts as in equilibrium, for unknowns with
    machine epsilon ``eps``; ``swept``: a larger force a sweep applies. None when the
    truss's values are traced (under ``jit``: the method's default is used)."""
    try:
        stiffness = max((float(np.max(np.asarray(b.EA) / np.asarray(b.L0)))
                         for b in truss.bars), default=0.0)
        size = max([float(np.max(np.abs(np.asarray(n.X)))) for n in truss.nodes]
                   + [float(np.max(np.asarray(b.L0))) for b in truss.bars] + [0.0])
        applied = [float(np.max(np.abs(np.asarray(q.factor) * np.asarray(q.force))))
                   for q in truss.loads]
        applied += [stiffness * float(np.max(np.abs(np.asarray(s.prescribed))))
                    for s in truss.supports]
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        return None
    tol = max(FORCE_RTOL * max(applied + [swept]), FLOOR * eps * stiffness * size)
    return tol if np.isfinite(tol) and tol > 0 else None


def default_solver(truss: Any, system: solvers.System, batch_size: int | None = None,
                   swept: float = 0.0) -> Any:
    """``solvers.default_method`` for ``system`` (the lowered ``truss``) with the force
    tolerance :func:`force_tolerance` and the step test :data:`RTOL`."""
    eps = float(np.finfo(np.dtype(system.x0.dtype)).eps)
    atol = force_tolerance(truss, eps, swept)
    options = {"rtol": RTOL} if atol is None else {"rtol": RTOL, "atol": atol}
    return solvers.default_method(system, batch_size=batch_size, **options)
