"""Newton on the host LU, stepped from Python: a compiled program without host callbacks.

A ``Newton`` whose linear solver is the host LU (``SparseHostLU``: SciPy's SuperLU or KLU)
compiles to one program with a host callback in its loop. JAX never stores such a program in
its persistent compilation cache, and it takes seconds to compile at 10^4 unknowns. Solved
on concrete inputs on CPU, the same steps run here instead: one compiled program takes the
step the elements' step limit accepts and evaluates F and J there, the host LU solves
between its calls. The program holds no callback, so a second process reads it from the
cache. Each step costs a dispatch and a transfer more than the compiled loop (~0.1 ms),
little next to a sparse factorization.

The steps are ``Newton``'s full (step-limited) steps, so a run that converges on them gives
``Newton``'s answer (to rounding: KLU refactors with the last step's pivots, and NumPy sums
0.5||F||^2, so a near-tie in a test can fall the other way). Where ``Newton`` would backtrack (no watchdog, or a watchdog's streak
of steps that did not improve), the run stops and says so: the caller then runs the
compiled method.
"""

from __future__ import annotations

import functools
from typing import Any, Optional

import jax
import numpy as np

from .._result import RESULTS
from ..linear._sparse import SparseHostLU
from ._method import FlatProblem, apply_step_limit
from ._newton import Newton
from ._solution import FlatSolution


def steps_on_host(newton: Any, x0, params: Any = None) -> bool:
    """Whether `host_newton` runs ``newton`` from ``x0``: a ``Newton`` on a ``SparseHostLU``
    bound to a square pattern of x0's size, whose full steps it takes (a watchdog, or no
    line search), on CPU, from finite inputs (the compiled method reports others as
    ``nonfinite_input``)."""
    solver = getattr(newton, "linear_solver", None)
    return (isinstance(newton, Newton) and isinstance(solver, SparseHostLU)
            and solver.jacobian is not None and np.ndim(x0) == 1 and np.size(x0) > 0
            and solver.jacobian.pattern.shape == (np.size(x0),) * 2
            and (newton.watchdog > 0 or not newton.line_search)
            and jax.default_backend() == "cpu" and _finite_on_host((x0, params)))


def _finite_on_host(tree: Any) -> bool:
    """`all_finite` read on the host: the leaves are concrete CPU values here, and eager
    ``jnp`` checks would compile one program per leaf shape (a third of a large system's
    first solve)."""
    for leaf in jax.tree_util.tree_leaves(tree):
        value = np.asarray(leaf)
        if jax.dtypes.issubdtype(value.dtype, np.inexact) and not np.isfinite(value).all():
            return False
    return True


def host_newton(problem: FlatProblem, newton: Newton, x0, params) -> Optional[FlatSolution]:
    """``newton``'s full steps from ``x0`` with the host LU between compiled evaluations of
    F and J (None where `steps_on_host` says no). Stops converged, at ``max_steps``, on a
    singular Jacobian, at a non-finite F (``nonfinite_residual``), or where ``newton`` would
    search: where its watchdog goes back to the best point (``watchdog`` steps in a row
    without lowering 0.5||F||^2 by the factor ``Newton`` asks; ``line_search_failed``),
    each failure with its best point."""
    if not steps_on_host(newton, x0, params):
        return None
    solver, watchdog = newton.linear_solver, newton.watchdog if newton.line_search else 0
    x = np.array(x0)
    dx, steps, small, rel = np.zeros_like(x), 0, False, np.nan
    best, streak = None, 0  # (phi, x, max|F|): the watchdog's point
    solve = solver.host_sequence()  # KLU: refactors with the last step's pivots
    while True:
        x, f, values = map(np.asarray, _advance(solver, problem, x, dx, params))
        norm = float(np.max(np.abs(f)))
        with np.errstate(over="ignore", invalid="ignore"):
            phi = float(0.5 * np.sum(f * f))
        if not np.isfinite(phi):  # Newton does not move there (`half_sq_norm`): it decides
            return _flat(x if best is None else best[1], RESULTS.nonfinite_residual, steps,
                         np.inf if best is None else best[2], rel)
        if norm <= newton.atol or small:
            return _flat(x, RESULTS.successful, steps, norm, rel)
        if best is None or phi <= (1.0 - 1e-4) * best[0]:  # as ``Newton._watch``
            best, streak = (phi, x, norm), 0
        else:
            streak += 1
        if watchdog and streak >= watchdog:
            return _flat(best[1], RESULTS.line_search_failed, steps, best[2], rel)
        if steps >= newton.max_steps:
            return _flat(x, RESULTS.max_steps_reached, steps, norm, rel)
        dx = -np.asarray(solve(values, f), x.dtype)
        if not np.all(np.isfinite(dx)):  # the host LU's signal for a singular Jacobian
            return _flat(x, RESULTS.singular_jacobian, steps, norm, np.inf)
        small = bool(np.all(np.abs(dx) <= newton.rtol * np.abs(x)))
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = float(np.max(np.where(dx == 0, 0.0, np.abs(dx) / np.abs(x))))
        steps += 1


@functools.partial(jax.jit, static_argnums=(0, 1))
def _advance(solver, problem: FlatProblem, x, dx, params):
    """``(x', F(x'), J(x')'s values in pattern order)`` for ``x' = x + fraction * dx``, the
    fraction the elements' step limit accepts (``dx = 0``: x itself). One program per
    structure and solver, one dispatch per step."""
    x = x + apply_step_limit(problem, x, dx, params) * dx  # 1 without a step limit
    f, op = solver.linearize(problem.fn, x, params)
    return x, f, solver.values(op)


def _flat(x, code, steps: int, norm: float, rel: float) -> FlatSolution:
    """A one-member solution, counted as ``Newton`` counts (F at x0 and per step, J per
    step), its norms in x's dtype."""
    real, count = x.dtype.type, np.int32
    result = count(code)
    # one transfer of host values: eager jnp conversions would compile a program each
    return FlatSolution(*jax.device_put((x, result, result == int(RESULTS.successful),
                                         count(steps), count(steps + 1), count(steps),
                                         real(norm), real(rel))))
