"""The time loop of a transient: ``F(x, p, t) + dQ(x, p)/dt = 0`` from an initial state to
the last output time: a ``lax.scan`` over the output times whose body steps with a
``lax.while_loop`` until it passes the next one (jit-, vmap- and grad-able; no host loop).

Each step solves ``G(x) = F(x, p, t1) + a (Q(x) - q_eff) - b Qdot_n = 0`` by Newton (backward
Euler: ``a = 1/h, b = 0, q_eff = Q_n``; trapezoidal: ``a = 2/h, b = 1``; variable-coefficient
BDF2: ``a = (1 + 2w) / ((1 + w) h)``, ``q_eff = Q_n + w^2 (Q_n - Q_{n-1}) / (1 + 2w)``,
``w = h / h_prev``), whose matrix is ``dF/dx + a dQ/dx``. Gradients are not taken through
the loop: :func:`replay` recomputes the accepted states from the recorded step sequence,
each one carrying its derivative by the implicit function theorem (a discrete adjoint when
reversed).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from ..roots._implicit import implicit_solution
from ._integrator import TRANSIENT_RESULTS as R
from ._integrator import (RESOLUTION_ULPS, coefficients, divided_difference, lagrange_weights,
                          lte_constant)

HIST = 4  # accepted points kept: the output interpolant is cubic (error estimates use 3 + the new)


class State(NamedTuple):
    t: jax.Array
    h: jax.Array
    x: jax.Array
    q: jax.Array
    qd: jax.Array
    qp: jax.Array  # Q at the previous accepted point (BDF2)
    hist_t: jax.Array  # (HIST,) newest first; hist_t[0] == t
    hist_x: jax.Array  # (HIST, n)
    n_hist: jax.Array  # history points since the last breakpoint, it included (1..HIST + 1:
    #                    HIST + 1 when it has left the history)
    at_break: jax.Array  # the current point is a breakpoint: the next step restarts
    n_pts: jax.Array  # valid history points, breakpoints or not (for error estimates)
    bp: jax.Array  # next breakpoint
    n_acc: jax.Array
    n_rej: jax.Array
    n_newton: jax.Array
    result: jax.Array
    done: jax.Array
    # the record of the accepted steps for replay (length 1 unless cfg.save_steps):
    rec_t: jax.Array  # (S + 1,) accepted times
    rec_x: jax.Array  # (S + 1, n) accepted states
    rec_order: jax.Array  # (S,) 1 or 2 per accepted step


def _code(r) -> jax.Array:
    return jnp.asarray(int(r), jnp.int32)


def _residual_fn(problem):
    def fn(x, args):
        params, q, qd, a, b = args
        return problem.residual(x, params) + a * (problem.charge(x, params) - q) - b * qd
    return fn


def newton(problem, cfg, ls, x_pred, args, atol):
    """Newton on one step's ``G``; returns ``(x, converged, iterations)``. Solvers that
    keep factorizations (``factorize``) run `chord_newton`."""
    if hasattr(ls, "factorize"):
        return chord_newton(problem, cfg, ls, x_pred, args, atol)
    fn = _residual_fn(problem)
    params = args[0]

    def body(c):
        x, it, _, ok = c
        f, op = ls.linearize(fn, x, args)
        dx = -ls.solve(op, f)
        finite = jnp.all(jnp.isfinite(dx)) & jnp.all(jnp.isfinite(f))
        dx = jnp.where(finite, dx, 0.0)
        frac = _limited(problem, params, x, dx)
        new = x + frac * dx
        conv = finite & (frac >= 1.0) & jnp.all(
            jnp.abs(dx) <= cfg.newton_tol * (atol + cfg.rtol * jnp.abs(new)))
        return new, it + 1, conv, finite

    init = (x_pred, jnp.zeros((), jnp.int32), jnp.zeros((), bool), jnp.ones((), bool))
    x, it, conv, ok = lax.while_loop(
        lambda c: ~c[2] & c[3] & (c[1] < cfg.newton_steps), body, init)
    return x, conv & ok, it


def _limited(problem, params, x, dx):
    """The fraction of ``dx`` that the elements' step limits allow (at most 1)."""
    if problem.step_limit is None:
        return jnp.ones((), x.dtype)
    got = jnp.asarray(problem.step_limit(x, dx, params), x.dtype)
    return jnp.where(jnp.isfinite(got) & (got > 0), jnp.minimum(got, 1.0), 1.0)


def _only_where(pred, fn, x, old):
    """``fn(x)`` where ``pred``, else ``old``, computing ``fn`` only then: a ``while_loop``
    of at most one pass (a batched ``cond`` would batch the constants inside ``fn``)."""
    body = lambda c: (jnp.zeros((), bool), fn(x))  # noqa: E731
    return lax.while_loop(lambda c: c[0], body, (pred, old))[1]


def chord_newton(problem, cfg, ls, x_pred, args, atol):
    """Newton that keeps the LU of the Jacobian at the predictor while the updates shrink
    at least 4x an iteration (a large system's LU costs many residuals) and factors again
    where they do not, or where a step limit cut the update; ``(x, converged, iters)``.
    One copy of the factorization in the program: the loop factors where it is stale."""
    fn = _residual_fn(problem)

    def factors(x):
        return ls.factorize(ls.linearize(fn, x, args)[1])

    def body(c):
        x, it, _, _, fac, prev, stale = c
        fac = _only_where(stale, factors, x, fac)
        f = fn(x, args)
        dx = -ls.solve_factored(fac, f).value
        finite = jnp.all(jnp.isfinite(dx)) & jnp.all(jnp.isfinite(f))
        dx = jnp.where(finite, dx, 0.0)
        frac = _limited(problem, args[0], x, dx)
        new = x + frac * dx
        size = jnp.max(jnp.abs(dx) / (atol + cfg.rtol * jnp.abs(new)))
        conv = finite & (frac >= 1.0) & (size <= cfg.newton_tol)
        again = finite & ~conv & ((frac < 1.0) | ~(size <= 0.25 * prev))
        return new, it + 1, conv, finite, fac, jnp.where(again, jnp.inf, size), again

    blank = jax.tree_util.tree_map(lambda a: jnp.zeros(a.shape, a.dtype),
                                   jax.eval_shape(factors, x_pred))
    true = jnp.ones((), bool)
    init = (x_pred, jnp.zeros((), jnp.int32), ~true, true, blank,
            jnp.asarray(jnp.inf, x_pred.dtype), true)
    x, it, conv, ok, *_ = lax.while_loop(
        lambda c: ~c[2] & c[3] & (c[1] < cfg.newton_steps), body, init)
    return x, conv & ok, it


def init_state(problem, cfg, params, x0, t0, t_end, h0, start_ok) -> State:
    dtype, n, S = x0.dtype, x0.shape[0], cfg.max_steps
    q0 = problem.charge(x0, problem.at(params, t0))
    # Without saved steps the record shrinks to one entry: a batched while_loop selects
    # its whole carry at every iteration, so its size would cost time.
    keep = S + 1 if cfg.save_steps else 1
    zero = jnp.zeros((), jnp.int32)
    bp = _next_break(problem, problem.at(params, t0), t0, t_end)
    return State(t0, h0, x0, q0, jnp.zeros_like(q0), q0, jnp.full((HIST,), t0, dtype),
                 jnp.broadcast_to(x0, (HIST, n)), zero + 1, jnp.zeros((), bool), zero + 1, bp,
                 zero, zero, zero,
                 jnp.where(start_ok, _code(R.successful), _code(R.initial_point_failed)),
                 ~start_ok, jnp.zeros((keep,), dtype).at[0].set(t0),
                 jnp.zeros((keep, n), dtype).at[0].set(x0),
                 jnp.zeros((max(keep - 1, 1),), jnp.int8))


def _next_break(problem, params, t, t_end):
    """The next breakpoint, at most ``t_end``, ignoring corners within a relative 1e-12 of
    the span after ``t`` (the same corner computed another way, e.g. a pulse's end at the
    next period's start); one that close before ``t_end`` is ``t_end`` (a pulse's corner an
    ulp short of a tstop that is a multiple of its period would leave an ulp to step).
    Corners not after the time asked are dropped where the elements' answers are
    gathered (`Storage.next_breakpoint`)."""
    tol = 1e-12 * jnp.maximum(jnp.abs(t_end), jnp.abs(t))
    bp = jnp.minimum(problem.next_breakpoint(params, t + tol), t_end)
    return jnp.where(bp >= t_end - tol, t_end, bp)


def _error(cfg, order, hist_t, hist_x, n_pts, t1, x1, h, atol, mask):
    """Scaled local truncation error (<= 1 passes) of a step of ``order`` over the unknowns
    in ``mask`` (the differential ones); 0 when the history is too short to estimate it.
    The first steps after a breakpoint use points before it: the kink inflates the
    estimate, so these steps are conservative (as SPICE's)."""
    ts = jnp.concatenate([t1[None], hist_t])
    xs = jnp.concatenate([x1[None], hist_x])
    scale = cfg.lte_factor * (atol + cfg.rtol * jnp.maximum(jnp.abs(x1), jnp.abs(hist_x[0])))
    dd2 = divided_difference(ts, xs, 3) * h ** 2  # backward Euler: h^2 x''/2
    dd3 = divided_difference(ts, xs, 4) * lte_constant(_gear(cfg), h, hist_t[0] - hist_t[1])
    lte = jnp.where(order == 1, dd2, dd3)
    enough = n_pts + 1 >= order + 2
    ratio = jnp.where(mask, jnp.abs(lte) / scale, 0.0)
    return jnp.where(enough, jnp.max(ratio, initial=0.0), 0.0)


BUFFERS = ("rec_t", "rec_x", "rec_order")


def _gear(cfg) -> bool:
    return cfg.method == "gear"


def _restart_points(cfg) -> int:
    """History points since a breakpoint that an order-2 step needs (BDF2: the previous
    point; the trapezoidal rule: also a derivative not taken across the breakpoint)."""
    return 2 if _gear(cfg) else 3


def step(problem, cfg, ls, params, t_end, hmin, atol, mask, s: State) -> State:
    """One attempted step (accepted or rejected; nothing changes once ``s.done``). The
    buffers are written only where a step is accepted (masked indices, no copies)."""
    n_hist = jnp.where(s.at_break, 1, s.n_hist)
    higher = (cfg.order == 2) & (n_hist >= _restart_points(cfg))
    order = jnp.where(higher, 2, 1)
    h = proposed = jnp.minimum(s.h, cfg.hmax)
    land = s.t + h >= s.bp - 0.1 * h
    t1 = jnp.where(land, s.bp, s.t + h)
    h = t1 - s.t  # the step taken: s.t + h rounds where h is a few ulps of t (0: no step)
    valid = jnp.arange(HIST) < jnp.minimum(n_hist, order + 1)
    x_pred = lagrange_weights(s.hist_t, valid, t1) @ s.hist_x
    a, b, k = coefficients(_gear(cfg), higher, h, s.hist_t[0] - s.hist_t[1])
    q_eff = s.q + k * (s.q - s.qp)
    p1 = problem.at(params, t1)
    x1, ok, iters = newton(problem, cfg, ls, x_pred, (p1, q_eff, s.qd, a, b), atol)
    err = _error(cfg, order, s.hist_t, s.hist_x, s.n_pts, t1, x1, h, atol, mask)
    ok = ok & jnp.isfinite(err)
    accept = ok & (err <= 1.0) & ~s.done
    factor = jnp.clip(0.9 * jnp.where(err > 0, err, 1e-30) ** (-1.0 / (order + 1.0)), 0.2, 2.0)
    h_next = jnp.where(ok, h * factor, h / 8.0)
    # a rejected step shrinks: landing (or rounding t + h up) may stretch h past ``proposed``
    h_next = jnp.where(accept, h_next, jnp.minimum(h_next, 0.9 * proposed))
    # as ngspice: a step cut below hmin is tried once at hmin; one failing there ends the run
    # (``proposed``, not ``h``: a landing may stretch an hmin step by 10 %)
    h_next = jnp.where(accept | (proposed > hmin), jnp.maximum(h_next, hmin), h_next)
    new = _accepted(problem, cfg, s, p1, x1, t1, (h, h_next, hmin), (a, b, q_eff), order, land,
                    t_end, accept)
    new = new._replace(n_hist=jnp.minimum(n_hist + 1, HIST + 1))
    new = new._replace(n_newton=s.n_newton + iters)
    rejected = s._replace(h=h_next, n_rej=s.n_rej + 1, n_newton=s.n_newton + iters)
    out = _finish(cfg, _select(accept, new, rejected, new), t_end, hmin)
    return _select(s.done, s, out, out)


def _select(cond, a: State, b: State, written: State) -> State:
    """``a`` where ``cond`` else ``b`` for the small fields; the buffers of ``written``."""
    return State(*[getattr(written, f) if f in BUFFERS
                   else jnp.where(cond, getattr(a, f), getattr(b, f)) for f in State._fields])


def _accepted(problem, cfg, s, p1, x1, t1, steps, coef, order, land, t_end, accept) -> State:
    h, h_next, hmin = steps
    a, b, q_eff = coef
    q1 = problem.charge(x1, p1)
    qd1 = a * (q1 - q_eff) - b * s.qd
    hist_t = jnp.concatenate([t1[None], s.hist_t[:-1]])
    hist_x = jnp.concatenate([x1[None], s.hist_x[:-1]])
    n_acc = s.n_acc + 1
    at = jnp.where(accept, n_acc, cfg.max_steps + 2)  # out of bounds: dropped
    rec_t, rec_x, rec_order = s.rec_t, s.rec_x, s.rec_order
    if cfg.save_steps:
        rec_t = rec_t.at[at].set(t1, mode="drop")
        rec_x = rec_x.at[at].set(x1, mode="drop")
        rec_order = rec_order.at[at - 1].set(order.astype(jnp.int8), mode="drop")
    bp = jnp.where(land, _next_break(problem, p1, t1, t_end), s.bp)
    # as ngspice (dctran.c): 0.1 of the last step or of the gap to the next breakpoint, but
    # not below 2 hmin "for no reason" (the landing on a closer breakpoint still clips it)
    restart = jnp.maximum(0.1 * jnp.minimum(h, bp - t1), 2.0 * hmin)
    return s._replace(
        t=t1, h=jnp.where(land, restart, h_next), x=x1, q=q1, qd=qd1, qp=s.q, hist_t=hist_t,
        hist_x=hist_x, at_break=land, n_pts=jnp.minimum(s.n_pts + 1, HIST), bp=bp,
        n_acc=n_acc, rec_t=rec_t, rec_x=rec_x, rec_order=rec_order)


def _finish(cfg, s: State, t_end, hmin) -> State:
    ended = s.t >= t_end
    full = s.n_acc >= cfg.max_steps
    tiny = s.h < hmin
    bad = ~jnp.all(jnp.isfinite(s.x))
    result = jnp.where(ended, _code(R.successful), jnp.where(
        bad, _code(R.nonfinite), jnp.where(tiny, _too_small(s.t, hmin), jnp.where(
            full, _code(R.max_steps_reached), s.result))))
    return s._replace(result=result, done=ended | full | tiny | bad)


def _too_small(t, hmin) -> jax.Array:
    """Why the step fell below ``hmin`` at ``t``: ``time_resolution`` where ``hmin`` is under
    :data:`RESOLUTION_ULPS` spacings of ``t`` (the steps there round to multiples of it:
    float32's limit, not hmin's), else ``step_too_small``."""
    t = lax.stop_gradient(t)  # a label: nextafter has no derivative rule
    ulp = jnp.nextafter(t, jnp.asarray(jnp.inf, t.dtype)) - t
    return jnp.where(hmin < RESOLUTION_ULPS * ulp, _code(R.time_resolution),
                     _code(R.step_too_small))


class Output(NamedTuple):
    ys: jax.Array  # (G, n) the states on the grid (NaN after a member stopped early)
    g_idx: jax.Array  # (G, HIST) accepted steps interpolated for each grid point
    g_w: jax.Array  # (G, HIST) their weights for the differential unknowns
    g_w_alg: jax.Array  # (G, HIST) and for the algebraic ones (`_algebraic_points`)


def _algebraic_points(s: State, tg, count):
    """How many history points interpolate the algebraic unknowns at ``tg``: after a
    breakpoint, not the breakpoint's state, which holds the sources' values before a jump
    there (a step in a PWL, a pulse edge of zero rise); a polynomial through it is off by
    the jump and overshoots for several steps. The points after it (one: a constant)
    serve. The differential unknowns are continuous there."""
    breakpoint_t = s.hist_t[jnp.clip(s.n_hist - 1, 0, HIST - 1)]
    drop = ~s.at_break & (s.n_hist >= 2) & (s.n_hist <= HIST) & (tg > breakpoint_t)
    return jnp.where(drop, jnp.minimum(count, s.n_hist - 1), count)


def integrate(problem, cfg, ls, params, x0, start_ok, grid, t0, h0, hmin, atol, mask):
    """The whole time run of one member from ``x0`` at ``t0`` to ``grid[-1]``: a scan over
    the output times, each stepping until it passes the time, then interpolating (cubic at
    most, through points since the last breakpoint; BDF2: the quadratic its derivative
    comes from, through the newest three). The output is no part of the loops'
    carry, which a batched ``while_loop`` selects whole at every iteration."""
    t_end = grid[-1]
    s = init_state(problem, cfg, params, x0, t0, t_end, h0, start_ok)
    advance = lambda s: step(problem, cfg, ls, params, t_end, hmin, atol, mask, s)  # noqa: E731

    def output(s, tg):
        s = lax.while_loop(lambda s: ~s.done & (s.t < tg), advance, s)
        count = jnp.minimum(s.n_hist, 3 if _gear(cfg) else HIST)
        w = lagrange_weights(s.hist_t, jnp.arange(HIST) < count, tg)
        w_alg = lagrange_weights(s.hist_t, jnp.arange(HIST) < _algebraic_points(s, tg, count),
                                 tg)
        y = jnp.where(mask, w @ s.hist_x, w_alg @ s.hist_x)
        y = jnp.where(s.t >= tg, y, jnp.nan)
        idx = jnp.maximum(s.n_acc - jnp.arange(HIST), 0).astype(jnp.int32)
        return s, Output(y, idx, w, w_alg)

    return lax.scan(output, s, grid)


def replay(problem, cfg, ls, params, x0, s: State, out: Output) -> tuple[jax.Array, jax.Array]:
    """The grid output and the accepted states (``rec_x``'s shape: rows past ``n_acc``
    repeat the last state) recomputed from the recorded steps, differentiable in ``params``
    and ``x0``: each accepted state is its step's root with an implicit derivative."""
    fn = _residual_fn(problem)
    q0 = problem.charge(x0, problem.at(params, s.rec_t[0]))

    def body(carry, j):
        x, q, qd, qp = carry
        h = s.rec_t[j + 1] - s.rec_t[j]
        h_prev = jnp.where(j > 0, s.rec_t[j] - s.rec_t[jnp.maximum(j - 1, 0)], 0.0)
        a, b, k = coefficients(_gear(cfg), s.rec_order[j] == 2, jnp.where(h > 0, h, 1.0),
                               h_prev)
        q_eff = q + k * (q - qp)
        p1 = problem.at(params, s.rec_t[j + 1])
        live = j < s.n_acc
        x1 = implicit_solution(fn, ls, s.rec_x[j + 1], (p1, q_eff, qd, a, b))
        q1 = problem.charge(x1, p1)
        qd1 = a * (q1 - q_eff) - b * qd
        pick = lambda u, v: jnp.where(live, u, v)  # noqa: E731
        return (pick(x1, x), pick(q1, q), pick(qd1, qd), pick(q, qp)), pick(x1, x)

    _, xs = lax.scan(body, (x0, q0, jnp.zeros_like(q0), q0), jnp.arange(cfg.max_steps))
    xs = jnp.concatenate([x0[None], xs])
    near = xs[out.g_idx]
    return jnp.where(jnp.asarray(problem.lowered.differential),
                     jnp.einsum("gk,gkn->gn", out.g_w, near),
                     jnp.einsum("gk,gkn->gn", out.g_w_alg, near)), xs


def start_root(problem, ls, params, x_star, t0, converged=True) -> jax.Array:
    """The DC operating point ``x_star`` with its implicit derivative (NaN where the
    operating point was not found: ``converged`` False)."""
    return implicit_solution(lambda x, p: problem.residual(x, p), ls, x_star,
                             problem.at(params, t0), converged)

