"""Homotopy continuation: follow a path of easy problems to the hard one.

The path is ``H(x, t) = 0`` for t from 0 to 1, traced by pseudo-arclength continuation
(Euler predictor along the unit tangent, Newton corrector on the bordered (n+1)-system),
so it passes turning points where t reverses. ``H`` is the problem's own continuation when
it has one (``continuation(params, t)``, e.g. source stepping: sources at 0 first), else
the Newton homotopy ``H(x, t) = F(x) - (1 - t) F(x0)``, which x0 solves at t = 0.

One corrector does all the work, on ``G(w) = [H(w); d . (w - w_pred)]``: with ``d = e_t``
it solves at a fixed t (the start at t = 0, the final polish at t = 1 where H = F), with
``d`` the tangent it corrects a predicted point back onto the path.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ._iterate import AbstractIterativeMethod, Progress
from ._method import FlatProblem, all_finite, check_count, check_tolerances, code, max_abs
from ._newton import Newton
from ._path import Corrected, correct, tangent
from .._result import RESULTS

_START, _TRACK, _POLISH = 0, 1, 2


class _State(NamedTuple):
    z: jax.Array        # (x, t): on the path, or the point to correct next (start/polish)
    tau: jax.Array      # unit tangent at z (tracking)
    ds: jax.Array       # next arclength step
    phase: jax.Array
    polishes: jax.Array
    f0: jax.Array       # F(x0) for the Newton homotopy (zeros with a continuation)


def _path(problem: FlatProblem):
    """``H(z, (params, f0))`` and the params of F at ``z``'s t."""
    if problem.continuation is not None:
        at = lambda a, t: problem.continuation(a[0], t)
        return (lambda z, a: problem.fn(z[:-1], at(a, z[-1]))), at
    return (lambda z, a: problem.fn(z[:-1], a[0]) - (1.0 - z[-1]) * a[1]), (lambda a, t: a[0])


def _check_continuation(continuation, params: Any, dtype) -> None:
    """Refuse (when traced) a hook whose result is not params of the same structure and
    shapes: F would receive it, and fail far from the cause."""
    got = jax.eval_shape(continuation, params, jnp.zeros((), dtype))
    want = jax.eval_shape(lambda p: p, params)
    shapes = lambda tree: jax.tree_util.tree_map(lambda a: a.shape, tree)  # noqa: E731
    same = jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)
    if not same or shapes(got) != shapes(want):
        raise TypeError(
            "the continuation hook continuation(params, t) must return params of the same "
            f"structure and shapes as the params it was given (t = 0 the easy problem, t = 1 "
            f"the problem itself); it returned {jax.tree_util.tree_structure(got)} for "
            f"{jax.tree_util.tree_structure(want)}. Return the scaled params, e.g. "
            "params * t or a copy with the sources scaled.")


@dataclasses.dataclass(frozen=True)
class Homotopy(AbstractIterativeMethod):
    """Continuation in t from 0 to 1 with ``inner`` (a Newton) as corrector and polisher.

    ``steps`` sets the first step (about 1/steps in t); steps then double when the corrector
    converges in <= 3 iterations and halve when it fails. ``max_steps`` bounds the path
    steps, ``corrector_steps`` the inner iterations per path step. The path is lost
    (``continuation_failed``) if it turns back past t = -1 or its step vanishes.
    """

    inner: Newton = Newton()
    steps: int = 10
    max_steps: int = 300
    corrector_steps: int = 8
    max_polishes: int = 6
    min_cosine: float = 0.7

    def __post_init__(self) -> None:
        for name, minimum in (("steps", 1), ("max_steps", 1), ("corrector_steps", 1),
                              ("max_polishes", 0)):
            check_count(self, name, minimum)
        check_tolerances(self, "min_cosine")
        if not isinstance(self.inner, Newton):
            raise TypeError(f"Homotopy(inner=...) must be a solvers.Newton (the corrector), "
                            f"got {type(self.inner).__name__}; to fall back through other "
                            "methods use solvers.Default(methods=(..., Homotopy())).")

    def start(self, problem: FlatProblem, x0, params: Any, active):
        """Any finite start begins a path (F(x0) is the Newton homotopy's, not a check)."""
        inputs_ok = jnp.all(jnp.isfinite(x0)) & all_finite(params)
        x0 = jnp.where(jnp.isfinite(x0), x0, 0.0)
        f0 = problem.fn(x0, params) if problem.continuation is None else jnp.zeros_like(x0)
        return x0, f0, code(RESULTS.nonfinite_input), ~active | ~inputs_ok

    def init(self, problem: FlatProblem, x0, f0, params: Any, options: Any) -> _State:
        z0 = jnp.concatenate([x0, jnp.zeros((1,), x0.dtype)])
        zero = jnp.zeros((), jnp.int32)
        return _State(z0, jnp.zeros_like(z0), jnp.zeros((), x0.dtype), zero + _START, zero, f0)

    def finish(self, problem: FlatProblem, params: Any, state: _State, result):
        x = state.z[:-1]
        return x, max_abs(problem.fn(x, params)), None

    def run(self, problem: FlatProblem, x0, params: Any, active):
        """The path's end, which is a root only where the problem's own ``continuation`` at
        t = 1 gives F itself: where it does not (a broken hook), ``continuation_failed``."""
        if problem.continuation is not None:
            _check_continuation(problem.continuation, params, x0.dtype)
        sol = super().run(problem, x0, params, active)
        if problem.continuation is None:
            return sol
        at_one = problem.fn(sol.x, problem.continuation(params, jnp.ones((), sol.x.dtype)))
        other = max_abs(problem.fn(sol.x, params) - at_one) > self.inner.atol
        result = jnp.where(sol.converged & other, code(RESULTS.continuation_failed),
                           sol.result)
        return dataclasses.replace(sol, result=result,
                                   converged=result == int(RESULTS.successful))

    def _correct(self, problem, hfun, at, aux, z_pred, direction) -> Corrected:
        """Newton on [H(w); direction . (w - z_pred)] = 0 from z_pred."""
        limit = None
        if problem.step_limit is not None:
            limit = lambda w, dw: problem.step_limit(w[:-1], dw[:-1], at(aux, w[-1]))
        return correct(self.inner, hfun, aux, z_pred, direction, self.corrector_steps,
                       limit)

    def step(self, problem: FlatProblem, params: Any, s: _State,
             running) -> tuple[_State, Progress]:
        hfun, at = _path(problem)
        aux = (params, s.f0)
        tracking = s.phase == _TRACK
        e_t = jnp.zeros_like(s.z).at[-1].set(1.0)
        z_pred = jnp.where(tracking, s.z + s.ds * s.tau, s.z)
        sol = self._correct(problem, hfun, at, aux, z_pred, jnp.where(tracking, s.tau, e_t))
        w = sol.z
        tau, tan_ok = tangent(self.inner.linear_solver, hfun, w,
                              jnp.where(tracking, s.tau, e_t), aux)
        turned = tau @ s.tau >= self.min_cosine
        ok = sol.converged & tan_ok & (turned | ~tracking)
        new = dict(z=jnp.where(ok, w, s.z), tau=jnp.where(ok, tau, s.tau), ds=s.ds,
                   phase=s.phase, polishes=s.polishes)
        # start solved: begin tracking with a step of about 1/steps in t
        begin = (s.phase == _START) & ok
        new["ds"] = jnp.where(begin, 1.0 / (self.steps * jnp.maximum(jnp.abs(tau[-1]), 1e-12)),
                              s.ds)
        new["phase"] = jnp.where(begin, _TRACK, new["phase"])
        # tracking: adapt the step; once past t = 1, interpolate to t = 1 and polish there
        fast = sol.iterations <= 3
        new["ds"] = jnp.where(tracking, jnp.where(ok, jnp.where(fast, 2.0, 1.0), 0.5) * s.ds,
                              new["ds"])
        crossed = tracking & ok & (w[-1] >= 1.0)
        frac = (1.0 - s.z[-1]) / jnp.where(crossed, w[-1] - s.z[-1], 1.0)
        x1 = s.z[:-1] + frac * (w[:-1] - s.z[:-1])
        new["z"] = jnp.where(crossed, jnp.concatenate([x1, jnp.ones((1,), x1.dtype)]),
                             new["z"])
        new["phase"] = jnp.where(crossed, _POLISH, new["phase"])
        # polishing: continue from where the corrector stopped if it did not converge
        polishing = s.phase == _POLISH
        new["z"] = jnp.where(polishing & jnp.all(jnp.isfinite(w)), w, new["z"])
        new["polishes"] = s.polishes + polishing
        return self._verdict(s, sol, ok, tracking, polishing, new)

    def _verdict(self, s: _State, sol: Corrected, ok, tracking, polishing,
                 new) -> tuple[_State, Progress]:
        """The new state, and whether the path is finished (polished at t = 1) or lost."""
        lost = tracking & ((new["ds"] * jnp.max(jnp.abs(s.tau)) < 1e-12 * (1 + max_abs(s.z)))
                           | (ok & (sol.z[-1] < -1.0)))
        start_failed = (s.phase == _START) & ~ok
        polished = polishing & sol.converged
        gave_up = polishing & ~sol.converged & (new["polishes"] >= self.max_polishes)
        failure = jnp.where(
            start_failed | gave_up,
            jnp.where(sol.converged, code(RESULTS.singular_jacobian), sol.result),
            jnp.where(lost, code(RESULTS.continuation_failed), code(RESULTS.successful)))
        out = _State(new["z"], new["tau"], new["ds"], new["phase"], new["polishes"], s.f0)
        return out, Progress(polished, failure, sol.num_fev, sol.num_jev + 1)
