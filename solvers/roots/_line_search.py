"""Backtracking (Armijo) line search on ``phi(x) = 0.5 ||F(x)||^2``."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax


class LineSearchResult(NamedTuple):
    alpha: jax.Array       # accepted step fraction (last tried one if not ok)
    f: jax.Array           # F at x + alpha * dx
    phi: jax.Array         # 0.5 ||f||^2 (inf if not finite)
    ok: jax.Array          # Armijo condition met
    any_finite: jax.Array  # some trial point gave a finite residual
    num_fev: jax.Array


def half_sq_norm(f: jax.Array) -> jax.Array:
    """0.5 ||f||^2, or inf if f is not finite (so a NaN trial is simply rejected)."""
    phi = 0.5 * jnp.sum(f * f)
    return jnp.where(jnp.isfinite(phi), phi, jnp.inf)


def backtrack(fn, x, dx, params: Any, phi0, slope, *, max_backtracks: int = 30,
              c1: float = 1e-4, active: Any = True) -> LineSearchResult:
    """Find alpha in (0, 1] with ``phi(x + alpha dx) <= phi0 + c1 alpha slope``.

    ``slope`` is the directional derivative ``F . (J dx)`` (negative for a descent
    direction). Steps shrink by safeguarded quadratic interpolation (factor in [0.1, 0.5]),
    or by 0.1 when the trial residual is not finite. An inactive member (``active`` False:
    a finished member of a vmapped Newton) evaluates the full step only and never
    backtracks, so it does not keep the batch's backtracking loop running.
    """

    def trial(alpha):
        f = fn(x + alpha * dx, params)
        return f, half_sq_norm(f)

    def accepted(alpha, phi):
        # Strict decrease too: near a minimum c1*alpha*slope falls below rounding.
        return (phi <= phi0 + c1 * alpha * slope) & (phi < phi0)

    descent = (slope < 0) & active
    one = jnp.ones_like(phi0)
    # The full step is tried outside the loop: a step that is accepted (most of Newton's)
    # never enters it, and a trip through a loop body costs several times the same work
    # inline (on CPU ~8 us for a 10-node ladder's F against ~1 us).
    f, phi = trial(one)
    first = LineSearchResult(one, f, phi, accepted(one, phi) & descent, jnp.isfinite(phi),
                             jnp.ones((), jnp.int32))

    def cond(state):
        return ~state.ok & descent & (state.num_fev <= max_backtracks)

    def body(state):
        a, phi = state.alpha, state.phi
        denom = 2.0 * (phi - phi0 - slope * a)
        quad = jnp.where(denom > 0, -slope * a * a / jnp.where(denom > 0, denom, 1.0), 0.5 * a)
        new_a = jnp.where(jnp.isfinite(phi), jnp.clip(quad, 0.1 * a, 0.5 * a), 0.1 * a)
        f, new_phi = trial(new_a)
        return LineSearchResult(new_a, f, new_phi, accepted(new_a, new_phi) & descent,
                                state.any_finite | jnp.isfinite(new_phi), state.num_fev + 1)

    return lax.cond(cond(first), lambda: lax.while_loop(cond, body, first), lambda: first)
