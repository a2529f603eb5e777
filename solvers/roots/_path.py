"""Linear algebra and the Newton corrector for a path ``H(x, t) = 0`` in ``z = (x, t)``.

The bordered systems ``[[J_x, H_t], [d_x, d_t]] [v; s] = [r; q]`` of continuation are
solved by block elimination with two solves with ``J_x`` only, so the linear solver sees
the n x n Jacobian of the model (a sparse back end's fixed pattern still fits).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from ._line_search import backtrack, half_sq_norm
from ._method import code, max_abs, step_is_small
from .._result import RESULTS


class PathLinearization(NamedTuple):
    h: jax.Array    # H(z)
    op: Any         # J_x operator from the linear solver
    ht: jax.Array   # dH/dt


def linearize_path(ls, hfun, z, aux) -> PathLinearization:
    x, t = z[:-1], z[-1]
    at_t = lambda y, a: hfun(jnp.concatenate([y, t[None]]), a)
    h, op = ls.linearize(at_t, x, aux)
    _, ht = jax.jvp(lambda s: hfun(jnp.concatenate([x, s[None]]), aux), (t,),
                    (jnp.ones_like(t),))
    return PathLinearization(h, op, ht)


def bordered_solve(ls, lin: PathLinearization, d, r, q) -> jax.Array:
    """[v; s] with J_x v + H_t s = r and d . [v; s] = q."""
    a = ls.solve(lin.op, r)
    b = ls.solve(lin.op, lin.ht)
    s = (q - d[:-1] @ a) / (d[-1] - d[:-1] @ b)
    return jnp.concatenate([a - s * b, s[None]])


def bordered_matvec(ls, lin: PathLinearization, d, v) -> jax.Array:
    return jnp.concatenate([ls.matvec(lin.op, v[:-1]) + lin.ht * v[-1], (d @ v)[None]])


def tangent(ls, hfun, z, previous, aux):
    """Unit tangent of the path at z, oriented along ``previous`` (ok flag)."""
    lin = linearize_path(ls, hfun, z, aux)
    v = bordered_solve(ls, lin, previous, jnp.zeros_like(lin.h), jnp.ones((), z.dtype))
    norm = jnp.sqrt(jnp.sum(v * v))
    ok = jnp.isfinite(norm) & (norm > 0)
    return jnp.where(ok, v / jnp.where(ok, norm, 1.0), previous), ok


class Corrected(NamedTuple):
    z: jax.Array
    converged: jax.Array
    result: jax.Array   # RESULTS code
    iterations: jax.Array
    num_fev: jax.Array
    num_jev: jax.Array


def correct(newton, hfun, aux, z_pred, d, max_steps: int, step_limit=None) -> Corrected:
    """Newton (with the settings of ``newton``: tolerances, linear solver, line search) on
    ``G(w) = [H(w); d . (w - z_pred)] = 0`` from ``z_pred``.
    ``step_limit(w, dw)`` is the model's accepted fraction of a step, if any."""
    ls = newton.linear_solver
    g = lambda w, a: jnp.concatenate([hfun(w, a), (d @ (w - z_pred))[None]])

    def body(c: Corrected) -> Corrected:
        f = g(c.z, aux)
        lin = linearize_path(ls, hfun, c.z, aux)
        dw = bordered_solve(ls, lin, d, -lin.h, -f[-1])
        ok = jnp.all(jnp.isfinite(dw))
        dw = jnp.where(ok, dw, 0.0)
        small = ok & step_is_small(dw, c.z, newton.rtol)
        if step_limit is not None:
            dw = step_limit(c.z, dw) * dw
        slope = f @ bordered_matvec(ls, lin, d, dw)
        search = backtrack(g, c.z, dw, aux, half_sq_norm(f), slope,
                           max_backtracks=newton.max_backtracks)
        moved = ok & search.ok
        z = jnp.where(moved, c.z + search.alpha * dw, c.z)
        converged = small | (moved & (max_abs(search.f) <= newton.atol))
        why = jnp.where(converged, code(RESULTS.successful),
                        jnp.where(~ok, code(RESULTS.singular_jacobian),
                                  jnp.where(moved, code(RESULTS.max_steps_reached),
                                            code(RESULTS.line_search_failed))))
        return Corrected(z, converged, why, c.iterations + 1, c.num_fev + search.num_fev + 1,
                         c.num_jev + 1)

    def cond(c: Corrected):
        running = c.result == int(RESULTS.max_steps_reached)
        return ~c.converged & running & (c.iterations < max_steps)

    f0 = g(z_pred, aux)
    finite = jnp.all(jnp.isfinite(f0))
    converged = finite & (max_abs(f0) <= newton.atol)
    result = jnp.where(converged, code(RESULTS.successful),
                       jnp.where(finite, code(RESULTS.max_steps_reached),
                                 code(RESULTS.nonfinite_residual)))
    zero = jnp.zeros((), jnp.int32)
    return lax.while_loop(cond, body, Corrected(z_pred, converged, result, zero, zero + 1, zero))
