"""Whole solves of the scale networks: ``solvers.solve`` against SciPy on the same equations.

SciPy's ``root`` methods ``hybr``/``lm`` (MINPACK) form dense Jacobians, so at N = 10^4 to
10^5 its tool is ``scipy.optimize.newton_krylov`` (``root(method="krylov")``): Jacobian-free
Newton with LGMRES, no preconditioner. It evaluates the residual that ``System`` lowered
(``jax.jit(system.residual)``, compiled before the clock starts), so both solve the same
equations from the same start ``x0``; the diode grid's step limit is ours only (SciPy has no
such hook).
"""

from __future__ import annotations

import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize

import solvers

#: Both sides stop at max|F| <= TOL (SciPy's ``f_tol``; our default method's ``atol``).
TOL = 1e-10
COLUMNS = ("solve_s", "solve_warm_s", "scipy_s", "scipy_ok", "solve_speedup")


class _OverBudget(Exception):
    pass


def solve_ours(system) -> dict:
    """``solvers.solve`` with the default method: first call (compile included), then warm."""
    times = []
    for _ in range(2):
        start = time.perf_counter()
        sol = solvers.solve(system, solvers.default_method(system, atol=TOL))
        jax.block_until_ready(sol.x)
        times.append(time.perf_counter() - start)
    return {"solve_s": times[0], "solve_warm_s": times[1], "ours_ok": bool(sol.converged)}


def solve_scipy(system, budget_s: float = 60.0) -> dict:
    """``scipy.optimize.newton_krylov`` on the lowered residual; stops after ``budget_s``."""
    fn = jax.jit(system.residual)
    params = system.params

    def residual(x):
        return np.asarray(fn(jnp.asarray(x), params))

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
    worst = float(np.max(np.abs(residual(x)))) if x is not x0 else float("nan")
    ok = bool(np.isfinite(worst) and worst <= TOL)
    why = note or f"max|F| {worst:.1e}"
    return {"scipy_s": seconds, "scipy_ok": "yes" if ok else f"no ({why})"}


def compare(system, budget_s: float = 60.0) -> dict:
    """Both solves of ``system``; ``solve_speedup`` = SciPy's time / our first call's (compile
    included), given only when both converged."""
    row = solve_ours(system)
    row.update(solve_scipy(system, budget_s))
    ours_ok = row.pop("ours_ok")
    row["solve_speedup"] = (row["scipy_s"] / row["solve_s"]
                            if ours_ok and row["scipy_ok"] == "yes" else None)
    if not ours_ok:
        row["solve_s"] = f"{row['solve_s']:.3g} (not converged)"
    return row
