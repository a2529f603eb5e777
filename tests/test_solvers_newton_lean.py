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
    # F(x0), the linearization (jvp: sinh and cosh) and the line search's trial point: a
    # line search that traced the full step and the backtracking trials apart shows 4.
    method = solvers.Newton(watchdog=4)
    jaxpr = jax.make_jaxpr(lambda x0, c: method.solve(FlatProblem(sinh_residual), x0, c).x)(
        jnp.zeros(3), jnp.ones(3))
    assert str(jaxpr).count("sinh") == 3
