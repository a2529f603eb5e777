"""Whole solves of the scale networks: ``solvers.solve`` against SciPy on the same equations.

Two SciPy references, both on the residual that ``System`` lowered (jitted and compiled
before the clock starts), from the same start ``x0``, to the same tolerance max|F| <= TOL:

* ``scipy_lu_s`` (`solve_scipy_lu`): the sparse reference the issue asks for, Newton's method
  with a sparse Jacobian in SciPy. Each step factors the Jacobian as a ``scipy.sparse`` CSC
  matrix with ``scipy.sparse.linalg.spsolve`` (SuperLU with its default COLAMD ordering:
  what ``scipy.optimize.root`` users get from a sparse direct solve) and backtracks by
  halving on 0.5||F||^2 (Armijo), as our Newton does. Its Jacobian values are the model's
  own (the lowered system's coloured JVPs, the same function our solve uses, compiled before
  the clock) and it applies the model's step limit (``System.step_limit``, the diode grid's
  junction limiting): same equations, same globalisation, so the comparison is of the
  solve, not of the model. SciPy's ``root`` has no sparse-Jacobian Newton of its own
  (``hybr``/``lm`` form dense Jacobians, which at 10^5 unknowns do not fit in memory).
* ``scipy_s`` (`solve_scipy`): ``scipy.optimize.newton_krylov`` (``root(method="krylov")``),
  Jacobian-free Newton with LGMRES and no preconditioner, no step limit. It does not converge
  on either network (its inner iterations stall on these ill-conditioned Jacobians); the row
  is kept to show that, not as a target.
"""

from __future__ import annotations

import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import solvers
from solvers.linear._sparsity import sparse_jacobian

#: Both sides stop at max|F| <= TOL (SciPy's ``f_tol``; our default method's ``atol``).
TOL = 1e-10
COLUMNS = ("solve_s", "solve_warm_s", "scipy_lu_s", "scipy_lu_ok", "lu_speedup",
           "scipy_s", "scipy_ok", "solve_speedup")
#: Newton steps of the SciPy sparse reference (ours stops at 50 too).
MAX_STEPS = 50


class _OverBudget(Exception):
    pass


def solve_ours(system, repeats: int = 7, budget_s: float = 10.0) -> dict:
    """``solvers.solve`` with the default method: the first call (compile included), then
    the median of up to ``repeats`` warm calls (fewer once past ``budget_s``; a single warm
    call varies by 20-30% on a shared machine)."""
    times = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        sol = solvers.solve(system, solvers.default_method(system, atol=TOL))
        jax.block_until_ready(sol.x)
        times.append(time.perf_counter() - start)
        if len(times) >= 4 and sum(times[1:]) > budget_s:
            break
    return {"solve_s": times[0], "solve_warm_s": float(np.median(times[1:])),
            "ours_ok": bool(sol.converged)}


def _host_residual(system):
    """``x -> F(x)`` on NumPy arrays: the lowered residual, jitted."""
    fn = jax.jit(system.residual)
    return lambda x: np.asarray(fn(jnp.asarray(x), system.params))


def _converged(residual, x) -> tuple[bool, float]:
    worst = float(np.max(np.abs(residual(x))))
    return bool(np.isfinite(worst) and worst <= TOL), worst


def solve_scipy(system, budget_s: float = 60.0) -> dict:
    """``scipy.optimize.newton_krylov`` on the lowered residual; stops after ``budget_s``."""
    residual = _host_residual(system)
    x0 = np.asarray(system.x0)
    residual(x0)  # compile outside the clock
    start = time.perf_counter()

    def stop_if_over(x, f):
        if time.perf_counter() - start > budget_s:
            raise _OverBudget

    note = ""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            x = scipy.optimize.newton_krylov(residual, x0, f_tol=TOL, method="lgmres",
                                             maxiter=200, callback=stop_if_over)
        except scipy.optimize.NoConvergence as err:
            x, note = err.args[0], "no convergence"
        except _OverBudget:
            x, note = x0, f"stopped after {budget_s:.0f} s"
        except (ValueError, FloatingPointError, OverflowError) as err:
            x, note = x0, type(err).__name__
    seconds = time.perf_counter() - start
    ok, worst = _converged(residual, x) if x is not x0 else (False, float("nan"))
    why = note or f"max|F| {worst:.1e}"
    return {"scipy_s": seconds, "scipy_ok": "yes" if ok else f"no ({why})"}


def _jacobian_fn(system):
    """``x -> (F(x), CSC Jacobian)`` from the lowered system's coloured JVPs (jitted)."""
    pattern = system.sparsity_pattern()
    both = jax.jit(lambda x, params: sparse_jacobian(system.residual, x, params, pattern))

    def fn(x):
        f, values = both(jnp.asarray(x), system.params)
        jac = sp.csc_matrix((np.asarray(values), (pattern.rows, pattern.cols)), pattern.shape)
        return np.asarray(f), jac
    return fn


def _newton_lu(residual, jacobian, limit, x, budget_s, start) -> tuple[np.ndarray, str]:
    """Newton with ``spsolve`` steps, the model's step limit and halving backtracking."""
    f = residual(x)
    for _ in range(MAX_STEPS):
        if np.max(np.abs(f)) <= TOL:
            return x, ""
        if time.perf_counter() - start > budget_s:
            return x, f"stopped after {budget_s:.0f} s"
        _, jac = jacobian(x)
        dx = spla.spsolve(jac, -f)
        if not np.all(np.isfinite(dx)):
            return x, "singular Jacobian"
        dx = dx * (limit(x, dx) if limit is not None else 1.0)
        phi0, alpha = 0.5 * f @ f, 1.0
        for _ in range(30):  # slope of phi along dx is -2 phi0 (a Newton step, scaled)
            trial = residual(x + alpha * dx)
            if 0.5 * trial @ trial <= (1.0 - 2e-4 * alpha) * phi0:
                break
            alpha *= 0.5
        else:
            return x, "line search failed"
        x, f = x + alpha * dx, trial
    return x, "" if np.max(np.abs(f)) <= TOL else f"{MAX_STEPS} steps"


def solve_scipy_lu(system, budget_s: float = 60.0) -> dict:
    """The SciPy sparse reference (see the module docstring); stops after ``budget_s``."""
    residual = _host_residual(system)
    jacobian = _jacobian_fn(system)
    limit = None
    if system.has_step_limit:
        step = jax.jit(system.step_limit)
        limit = lambda x, dx: float(step(jnp.asarray(x), jnp.asarray(dx), system.params))  # noqa: E731
    x0 = np.asarray(system.x0)
    residual(x0), jacobian(x0)  # compile outside the clock
    if limit is not None:
        limit(x0, x0)
    start = time.perf_counter()
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        x, note = _newton_lu(residual, jacobian, limit, x0, budget_s, start)
    seconds = time.perf_counter() - start
    ok, worst = _converged(residual, x)
    return {"scipy_lu_s": seconds,
            "scipy_lu_ok": "yes" if ok else f"no ({note or f'max|F| {worst:.1e}'})"}


def compare(system, budget_s: float = 60.0) -> dict:
    """Our solve and both SciPy references on ``system``, speedups given only when both
    converged: ``lu_speedup`` = scipy_lu_s / solve_warm_s (neither side compiles on the
    clock: SciPy's residual and Jacobian are compiled before it), ``solve_speedup`` =
    scipy_s / solve_s (our first call, compile included)."""
    row = solve_ours(system)
    row.update(solve_scipy_lu(system, budget_s))
    row.update(solve_scipy(system, budget_s))
    ours_ok = row.pop("ours_ok")
    for speedup, seconds, ok, ours in (("lu_speedup", "scipy_lu_s", "scipy_lu_ok", "solve_warm_s"),
                                       ("solve_speedup", "scipy_s", "scipy_ok", "solve_s")):
        row[speedup] = row[seconds] / row[ours] if ours_ok and row[ok] == "yes" else None
    if not ours_ok:
        row["solve_s"] = f"{row['solve_s']:.3g} (not converged)"
    return row
