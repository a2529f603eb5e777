"""Every method on every standard problem, from 1x, 10x and 100x the standard start.

All problems share one compiled program per method to keep compilations few: one function
``lax.switch``-es on a problem index, and a problem of k < N unknowns becomes
``(F(x[:k]), x[k:])`` in N unknowns, started at ``x[k:] = 0``, where the extra unknowns sit
at their root from the start and decouple (the Jacobian is block diagonal with an identity
block), so each method takes the problem's own steps. Each problem's three starts are one
batch whose problem index is unbatched (``params_axes=None``, as benchmarks/robustness.py
solves): the switch stays a real branch, so each member evaluates exactly its own F (a
batched index would evaluate all 23 problems at every step), and every problem reuses the
program of the first. Every method must be honest (success only with max|F| <= 1e-8; a
failure always carries a code and message); the default method must keep what it achieves
(see docs/solver_robustness.md).
"""

import dataclasses
import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize
from jax import lax

from benchmarks import nonlinear_problems as nlp
import solvers
from solvers import RESULTS

METHODS = {
    "Default": solvers.Default(),
    "Newton": solvers.Newton(),
    "TrustRegion": solvers.TrustRegion(),
    "LevenbergMarquardt": solvers.LevenbergMarquardt(),
    "Homotopy": solvers.Homotopy(),
    "JaxoptBroyden": solvers.JaxoptBroyden(),
    "JaxoptGaussNewton": solvers.JaxoptGaussNewton(),
    "JaxoptLM": solvers.JaxoptLevenbergMarquardt(),
}
# jaxopt compiles slowly: in the test suite it runs on the 2-unknown problems only (all 23,
# and Newton-GMRES, are in benchmarks/robustness.py and docs/solver_robustness.md).
JAXOPT = {"JaxoptBroyden", "JaxoptGaussNewton", "JaxoptLM"}


def cases():
    for method in METHODS:
        for p in nlp.PROBLEMS:
            if method not in JAXOPT or len(p.x0) == 2:
                yield pytest.param(method, p, id=f"{method}-{p.number:02d}-{p.name}")
# Runs (problem, start factor) the default method does not solve; see the robustness table.
DEFAULT_MISSES = {("trigonometric", 10.0)}
# Regression floors: runs solved of 69 (measured counts minus a small margin for rounding).
FLOORS = {"Default": 68, "Newton": 52, "TrustRegion": 52, "LevenbergMarquardt": 47,
          "Homotopy": 40}
TOL = 1e-8
SIZES = sorted({len(p.x0) for p in nlp.PROBLEMS})


def group(n):
    return [p for p in nlp.PROBLEMS if len(p.x0) == n]


def _padded(problem, width: int):
    """``problem``'s F in ``width`` unknowns: the extra ones solve ``x_i = 0``."""
    k, params = len(problem.x0), nlp.params_of(problem)
    return lambda x: jnp.concatenate([problem.fn(x[:k], params), x[k:]])


@functools.lru_cache(maxsize=None)
def all_run(method_name: str, sizes: tuple) -> dict:
    """Solve every (problem with a size in ``sizes``, start) with one method: one batch of
    its starts per problem, every batch through the same compiled program."""
    probs = [p for n in sizes for p in group(n)]
    width = max(sizes)
    fn = jax.jit(lambda x, pid: lax.switch(pid, [_padded(p, width) for p in probs], x))
    out = {}
    for i, p in enumerate(probs):
        x0 = np.stack([np.pad(nlp.start(p, k), (0, width - len(p.x0))) for k in nlp.FACTORS])
        sol = solvers.solve_flat_batch(fn, jnp.asarray(x0), jnp.asarray(i), params_axes=None,
                                       solver=METHODS[method_name])
        one = jax.tree_util.tree_map(np.asarray, sol)
        out[p.name] = dataclasses.replace(one, x=one.x[:, :len(p.x0)])
    return out


def group_run(method_name: str, n: int) -> dict:
    """Problem name -> results of one method, from the batch that holds the problems of n
    unknowns (every size in one batch; the jaxopt methods on the 2-unknown ones only)."""
    sizes = (2,) if method_name in JAXOPT else tuple(SIZES)
    return all_run(method_name, sizes)


def residual(problem, x):
    return np.max(np.abs(nlp.numpy_fn(problem)(x)))


def solved(problem, x) -> bool:
    return bool(np.all(np.isfinite(x)) and residual(problem, x) <= TOL)


@pytest.mark.parametrize("method, problem", list(cases()))
def test_method_is_honest_on_problem(method, problem):
    sol = group_run(method, len(problem.x0))[problem.name]
    for k, factor in enumerate(nlp.FACTORS):
        x, result = sol.x[k], RESULTS(int(sol.result[k]))
        if sol.converged[k]:
            assert solved(problem, x), (method, factor, residual(problem, x))
        else:
            assert result is not RESULTS.successful
            assert len(result.message) > 40
        assert sol.num_fev[k] >= 1


@pytest.mark.parametrize("problem", nlp.PROBLEMS, ids=lambda p: f"{p.number:02d}-{p.name}")
def test_default_solves_what_it_solves(problem):
    sol = group_run("Default", len(problem.x0))[problem.name]
    for k, factor in enumerate(nlp.FACTORS):
        if (problem.name, factor) in DEFAULT_MISSES:
            continue
        assert sol.converged[k] and solved(problem, sol.x[k]), (
            f"{problem.name} from {factor}x: {RESULTS(int(sol.result[k])).name}, "
            f"max|F| = {residual(problem, sol.x[k]):.3g}")


@pytest.mark.parametrize("method", [m for m in METHODS if m not in JAXOPT])
def test_method_keeps_its_robustness(method):
    count = sum(solved(p, x) for n in SIZES for p in group(n)
                for x in group_run(method, n)[p.name].x)
    assert count >= FLOORS[method]


def scipy_root(problem):
    params = nlp.params_of(problem)
    jac = jax.jit(jax.jacfwd(problem.fn))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return scipy.optimize.root(nlp.numpy_fn(problem), problem.x0, method="hybr",
                                   jac=lambda x: np.asarray(jac(jnp.asarray(x), params)))


# Roots where J is singular: x is only determined to about sqrt(max|F|).
SINGULAR_ROOTS = {"powell_singular", "sample_19"}
# Every point of both axes is a root: the two methods stop at different ones.
ROOT_CURVES = {"sample_18"}
# Several isolated roots: Boggs's (0, 1) and (-1, 2). From (1, 0) Default's first Newton step
# raises ||F||; its watchdog keeps that step and reaches (-1, 2), hybr's trust region (0, 1).
OTHER_ROOTS = {"boggs": np.array([-1.0, 2.0])}


@pytest.mark.parametrize("problem", nlp.PROBLEMS, ids=lambda p: f"{p.number:02d}-{p.name}")
def test_default_agrees_with_scipy_hybr(problem):
    ref = scipy_root(problem)
    ours = group_run("Default", len(problem.x0))[problem.name].x[0]
    if not solved(problem, ref.x):
        pytest.skip(f"scipy hybr does not solve {problem.name} from its standard start")
    assert solved(problem, ours)
    if problem.name in ROOT_CURVES:
        return
    if problem.name in OTHER_ROOTS and np.allclose(ours, OTHER_ROOTS[problem.name], atol=1e-7):
        return
    atol = 1e-3 if problem.name in SINGULAR_ROOTS else 1e-7
    np.testing.assert_allclose(ours, ref.x, rtol=1e-6, atol=atol)
