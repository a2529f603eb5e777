"""Newton's loop does no more work than a hand-written one: per accepted step one Jacobian
(with its residual) and one trial residual, and F traced as few times as possible."""

import jax
import jax.numpy as jnp

import solvers
from solvers import FlatProblem


def sinh_residual(x, c):
    return jnp.sinh(x) - c


def test_one_jacobian_and_one_trial_per_accepted_step():
    sol = solvers.solve_flat(sinh_residual, jnp.zeros(3), jnp.asarray([0.5, 1.0, 2.0]),
                             solver=solvers.Newton(watchdog=4))
    assert bool(sol.converged) and int(sol.iterations) > 2
    assert int(sol.num_jev) == int(sol.iterations)
    assert int(sol.num_fev) == int(sol.iterations) + 1  # F(x0), then one trial per step


def test_residual_traced_once_per_role():
    # F(x0), the linearization (jvp: sinh and cosh), the line search's full step and its
    # backtracking trials: one trace each. The full step sits outside the backtracking loop
    # (a trip through a loop body costs several times the same work inline).
    method = solvers.Newton(watchdog=4)
    jaxpr = jax.make_jaxpr(lambda x0, c: method.solve(FlatProblem(sinh_residual), x0, c).x)(
        jnp.zeros(3), jnp.ones(3))
    assert str(jaxpr).count("sinh") == 4


def test_accepted_full_step_never_enters_the_backtracking_loop():
    # The backtracking loop sits in a cond taken only when the full step fails: Newton's
    # loop body then holds no nested loop on the usual path.
    from jax.extend.core import jaxprs_in_params

    from solvers.roots._line_search import backtrack, half_sq_norm

    def search(x, c):
        f = sinh_residual(x, c)
        phi = half_sq_norm(f)
        return backtrack(sinh_residual, x, -f, c, phi, -2.0 * phi).alpha

    eqns = jax.make_jaxpr(search)(jnp.zeros(3), jnp.ones(3)).jaxpr.eqns
    assert [e.primitive.name for e in eqns if e.primitive.name in ("while", "cond")] == ["cond"]
    cond = next(e for e in eqns if e.primitive.name == "cond")
    inner = [e.primitive.name for b in cond.params["branches"] for e in b.jaxpr.eqns]
    assert "while" in inner
    # a failing full step still backtracks: x^2 - 1 from x = 3 with a step of -8
    quad = lambda x, _: x * x - 1.0  # noqa: E731
    x = jnp.asarray([3.0])
    dx, f = jnp.asarray([-8.0]), quad(x, None)
    slope = jnp.sum(f * (2.0 * x * dx))  # F . (J dx)
    found = backtrack(quad, x, dx, None, half_sq_norm(f), slope)
    assert bool(found.ok) and float(found.alpha) < 1.0 and int(found.num_fev) > 1


def _flops(fn, *args) -> float:
    cost = jax.jit(fn).lower(*args).compile().cost_analysis()
    return float((cost[0] if isinstance(cost, list) else cost)["flops"])


def test_fallback_stages_cost_one_stage_in_the_program_estimate():
    # XLA:CPU runs a program inline on the caller's thread when its cost estimate (a loop
    # body counted once, a branch at its largest) is small; Default's fallbacks run in one
    # loop over a switch, so adding stages does not add their costs to the estimate.
    x0, c = jnp.zeros(2), jnp.asarray([0.5, 1.0])

    def cost(*stages):
        method = solvers.Default(methods=stages) if stages else solvers.Default()
        return _flops(lambda x, p: solvers.solve_flat(sinh_residual, x, p, solver=method).x,
                      x0, c)

    newton = solvers.Newton()
    trust, homotopy = solvers.TrustRegion(), solvers.Homotopy(inner=newton)
    largest = max(cost(newton, trust), cost(newton, homotopy))
    assert cost(newton, trust, homotopy) <= 1.05 * largest
    assert cost(newton, trust, homotopy, trust, homotopy) <= 1.05 * largest


def _conds(jaxpr) -> list:
    """Every cond/switch equation in ``jaxpr`` and its sub-jaxprs."""
    from jax.extend.core import jaxprs_in_params

    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "cond":
            found.append(eqn)
        for sub in jaxprs_in_params(eqn.params):
            found += _conds(sub)
    return found


def test_vmapped_default_switches_one_stage_a_turn():
    # The stage index must stay unbatched under vmap: a batched switch becomes a select over
    # every stage's outputs, running all stages on every turn of the loop.
    stages = solvers.Default().plan(2, 2)
    batched = jax.make_jaxpr(jax.vmap(lambda x, c: solvers.solve_flat(sinh_residual, x, c).x))(
        jnp.zeros((3, 2)), jnp.ones((3, 2)))
    switches = [e for e in _conds(batched.jaxpr) if len(e.params["branches"]) == len(stages) - 1]
    assert switches, "Default's stage switch was batched away under vmap"


def test_default_under_vmap_retries_only_failing_members():
    # x^2 = p: no real root for p < 0 (every stage fails), Newton solves p > 0 at once.
    def f(x, p):
        return x * x - p

    p = jnp.asarray([4.0, -1.0, 9.0])
    sol = jax.jit(jax.vmap(lambda x, q: solvers.solve_flat(f, x, q)))(jnp.ones((3, 1)), p[:, None])
    assert list(map(bool, sol.converged)) == [True, False, True]
    assert abs(float(sol.x[0, 0]) - 2.0) < 1e-12 and abs(float(sol.x[2, 0]) - 3.0) < 1e-12
    assert int(sol.iterations[1]) > int(sol.iterations[0])  # the fallbacks ran for it only
