"""Derivatives of a root with respect to the parameters, by the implicit function theorem.

At a root ``F(x*, p) = 0``: ``dx*/dp = -J^{-1} dF/dp`` with ``J = dF/dx`` at ``(x*, p)``.
The iterations are never differentiated: the solve runs under ``stop_gradient`` and this
layer attaches the derivative. It is a ``custom_jvp`` whose tangent is a
``lax.custom_linear_solve`` with the linear solver's ``solve`` and ``solve_transpose``, so
forward mode, reverse mode (which transposes that solve) and ``vmap`` all work, and sparse
or matrix-free back ends plug in unchanged. The rule's x* is itself the differentiable
root, so second and higher derivatives are exact too (inside a ``lax.scan`` or ``lax.map``
differentiated in reverse mode, where JAX drops the rule, `_moving_root` keeps second
derivatives exact). Values that ``fn`` closes over are
hoisted with ``jax.closure_convert`` and differentiated too.

Gradients are meaningful only for converged members: a member that did not converge gets
NaN derivatives (never a finite or infinite number that looks usable), while a zero
cotangent or tangent yields exactly zero (even at a singular Jacobian or a failed member),
so masking failed members with ``jnp.where`` is safe.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from ..linear._abstract import AbstractLinearSolver


def implicit_solution(fn, linear_solver: AbstractLinearSolver, x_star: jax.Array,
                      params: Any, converged: Any = True) -> jax.Array:
    """``x_star`` (a root of ``fn(., params)``) carrying its implicit derivative (NaN where
    ``converged`` is False)."""
    x_star = lax.stop_gradient(x_star)
    out = jax.eval_shape(fn, x_star, params)
    if out.shape != x_star.shape:
        # Least squares: no derivative rule here; keep the value, refuse differentiation.
        return _no_derivative(x_star, params)
    converted, consts = jax.closure_convert(fn, x_star, params)
    poison = jnp.where(converged, 1.0, jnp.nan).astype(x_star.dtype)
    return _root(converted, linear_solver, x_star, (params, tuple(consts)), poison)


def _call(fn, x, args):
    params, consts = args
    return fn(x, params, *consts)


@partial(jax.custom_jvp, nondiff_argnums=(0, 1))
def _root(fn, linear_solver, x_star, args, poison):
    return x_star


@_root.defjvp
def _root_jvp(fn, linear_solver, primals, tangents):
    x_star, args, poison = primals
    _, d_args, _ = tangents
    # The root again, not a constant: differentiating this rule (second derivatives) then
    # sees x* move with the parameters through this same rule. A failed member's x* there
    # moves not at all (poison 0, not NaN): its NaN belongs on dx alone, where a mask
    # (jnp.where on `converged`) removes it, also from second derivatives.
    x_star = _moving_root(fn, linear_solver, lax.stop_gradient(x_star), args,
                          jnp.where(jnp.isnan(poison), jnp.zeros_like(poison), poison))
    f = partial(_call, fn)
    _, op = linear_solver.linearize(f, x_star, args)
    _, rhs = jax.jvp(lambda a: f(x_star, a), (args,), (d_args,))
    return x_star, _solved(linear_solver, op, -rhs, poison)


def _solved(linear_solver, op, b, poison):
    """``J^{-1} b`` as a ``custom_linear_solve`` (its transpose: ``J^{-T}``), times
    ``poison``."""

    def safe(solve, b):
        # J^{-1} 0 = 0 even when J is singular, so masked-out members give zero, not NaN;
        # `poison` (1, NaN for a failed member, 0 for its x* inside this rule) keeps it so.
        zero = jnp.all(b == 0) | jnp.all(poison == 0)
        return jnp.where(zero, jnp.zeros_like(b),
                         poison * solve(op, jnp.where(zero, 1.0, b)))

    return lax.custom_linear_solve(
        lambda v: linear_solver.matvec(op, v), b,
        solve=lambda _, b: safe(linear_solver.solve, b),
        transpose_solve=lambda _, b: safe(linear_solver.solve_transpose, b))


@partial(jax.custom_jvp, nondiff_argnums=(0, 1))
def _moving_root(fn, linear_solver, x_star, args, poison):
    """``x_star`` as `_root` gives it, for the rule's own primal output, plus a Newton
    correction ``-J^{-1} F(x*, args)`` that is zero in value (``c - stop_gradient(c)``):
    where JAX keeps the rule (forward mode, and reverse mode outside loops) the rule
    differentiates it, exactly to every order; where JAX drops it and differentiates this
    function instead (a reverse-mode pass partially evaluates a ``lax.scan``'s or
    ``lax.map``'s body, inlining custom rules: the transient's replay, a solve inside a
    user's map), the correction still moves x* with the parameters, exactly to first
    order, so second derivatives (``jax.hessian``) stay exact there, where x* was a
    constant and every Hessian through the loop came out 0 (third derivatives there are
    not exact: one correction carries one order)."""
    f = partial(_call, fn)
    _, op = linear_solver.linearize(f, x_star, lax.stop_gradient(args))
    step = _solved(linear_solver, op, f(x_star, args), jnp.ones_like(poison))
    step = jnp.where(jnp.isfinite(step) & (poison != 0), step, jnp.zeros_like(step))
    return x_star - (step - lax.stop_gradient(step))


_moving_root.defjvp(_root_jvp)


@jax.custom_jvp
def _no_derivative(x_star, params):
    return x_star


@_no_derivative.defjvp
def _no_derivative_jvp(primals, tangents):
    raise NotImplementedError(
        "Implicit differentiation of a least-squares solution (more equations than "
        "unknowns) is not supported; differentiate a square system instead."
    )
