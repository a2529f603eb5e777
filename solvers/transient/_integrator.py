"""Settings and result codes of a transient, and the small formulas of its steps: divided
differences (error estimates), Lagrange weights (predictor and output interpolant)."""

from __future__ import annotations

import dataclasses
import enum
import math
import numbers
from typing import Optional

import jax.numpy as jnp
import numpy as np

from ..linear._abstract import AbstractLinearSolver


class TRANSIENT_RESULTS(enum.IntEnum):
    """Why a transient stopped (one code per batch member). ``successful`` is the only success."""

    successful = 0
    max_steps_reached = 1
    step_too_small = 2
    initial_point_failed = 3
    nonfinite = 4
    time_resolution = 5
    invalid_times = 6

    @property
    def message(self) -> str:
        return _MESSAGES[self]


_MESSAGES = {
    TRANSIENT_RESULTS.successful: "Reached the end time.",
    TRANSIENT_RESULTS.max_steps_reached: (
        "The step buffer is full before the end time: raise Integrator(max_steps=...), loosen "
        "rtol/atol, or shorten the run; the output after the last step is NaN."),
    TRANSIENT_RESULTS.step_too_small: (
        "Newton failed (or the error test kept failing) down to the smallest step hmin: the "
        "model may jump (a discontinuity with no breakpoint) or have no solution there; "
        "declare breakpoints, lower hmin, or check the model at that time."),
    TRANSIENT_RESULTS.initial_point_failed: (
        "The initial (DC) operating point did not converge: check the model with solvers.solve "
        "at the start time t0 (its Clock's t set to t0) and that no parameter is NaN, or "
        "start from given initial conditions (initial='given')."),
    TRANSIENT_RESULTS.nonfinite: "A residual or state became NaN/inf.",
    TRANSIENT_RESULTS.time_resolution: (
        "The step fell below the resolution of the time (not hmin): times near t are rounded "
        "to the floating-point spacing of t (float32: about 1.2e-7 |t|; float64: 2.2e-16 |t|), "
        "which exceeds hmin / 8, so a smaller step is rounded to a cruder one or to none "
        "(lowering hmin cannot help). In float32, enable float64 with "
        "jax.config.update(\"jax_enable_x64\", True) before building the model; or run a "
        "shorter or coarser simulation (times nearer 0, where the spacing is finer; looser "
        "rtol/atol; a breakpoint at a jump). If float64 fails too, the model may jump there "
        "with no breakpoint or have no solution. The output after that time is NaN."),
    TRANSIENT_RESULTS.invalid_times: (
        "Nothing was simulated: the output times t_eval must be finite and strictly "
        "increasing, from a finite t0 on (t0 <= t_eval[0]). They were traced (under jit or "
        "vmap), so simulate could not refuse them before the run: pass valid times (checked "
        "eagerly when t_eval and t0 are concrete). The output is NaN."),
}

#: The smallest step is under this many spacings (ulps) of t: ``time_resolution``, not
#: ``step_too_small`` (a step of a few ulps is rounded by a good fraction of itself).
RESOLUTION_ULPS = 8.0


METHODS = ("trapezoidal", "gear")


def _number(value) -> float:
    """``value`` as a float (NaN for what is not a number: refused by the caller's test)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


@dataclasses.dataclass(frozen=True)
class Integrator:
    """How a transient steps (hashable: static under ``jit``).

    ``order=2``: ``method="trapezoidal"`` (the trapezoidal rule) or ``method="gear"``
    (variable-coefficient BDF2), with backward Euler at the start and after every
    breakpoint (as SPICE); ``order=1``: backward Euler throughout. The step comes from a
    local truncation error estimate (divided differences of the accepted states) held to
    ``lte_factor * (atol + rtol * |x|)``; ``atol`` may be a vector (one per unknown).
    Steps never exceed ``hmax`` and land exactly on breakpoints. Each step is a Newton
    solve (at most ``newton_steps`` iterations, converged when every update is below
    ``newton_tol * (atol + rtol |x|)``) with the elements' ``step_limit``; a failed step is
    retried 8 times smaller, an inaccurate one smaller by the estimate, one cut below
    ``hmin`` once at ``hmin`` (the run stops when that fails, as ngspice's at delmin:
    ``step_too_small``, or ``time_resolution`` where ``hmin`` is under 8 floating-point
    spacings of t, a limit that float32 reaches first).
    ``max_steps`` sizes the buffer of accepted steps (kept for gradients and inspection
    when ``save_steps``). ``linear_solver``: None picks dense LU or a sparse LU by size.
    """

    rtol: float = 1e-3
    atol: float = 1e-6
    order: int = 2
    method: str = "trapezoidal"
    hmax: float = math.inf
    hmin: Optional[float] = None
    h0: Optional[float] = None
    lte_factor: float = 1.0
    newton_steps: int = 10
    newton_tol: float = 0.1
    max_steps: int = 20000
    save_steps: bool = True
    linear_solver: Optional[AbstractLinearSolver] = None

    def __post_init__(self) -> None:
        if self.order not in (1, 2):
            raise ValueError(f"Integrator(order={self.order!r}): use 1 (backward Euler) or 2 "
                             "(trapezoidal).")
        if self.method not in METHODS:
            raise ValueError(f"Integrator(method={self.method!r}): use one of {METHODS} "
                             "(gear: variable-coefficient BDF2).")
        for name in ("rtol", "lte_factor", "newton_tol", "hmax"):
            if not _number(getattr(self, name)) > 0:
                raise ValueError(f"Integrator({name}=...) must be a positive number, got "
                                 f"{getattr(self, name)!r}.")
        for name in ("newton_steps", "max_steps"):
            value = getattr(self, name)
            if not isinstance(value, numbers.Integral) or isinstance(value, (bool, np.bool_)) \
                    or value < 1:
                raise ValueError(f"Integrator({name}=...) must be an integer >= 1, got {value!r}.")
            object.__setattr__(self, name, int(value))  # np.int64: hashable and equal as int
        for name in ("h0", "hmin"):  # a NaN step never ends the loop; a negative one never starts
            value = getattr(self, name)
            if value is not None and not (math.isfinite(_number(value)) and _number(value) > 0):
                raise ValueError(f"Integrator({name}={value!r}) must be a positive, finite time "
                                 "step, or None for the default.")
        if self.hmin is not None and float(self.hmin) > float(self.hmax):
            raise ValueError(f"Integrator(hmin={self.hmin!r}, hmax={self.hmax!r}): the smallest "
                             "step exceeds the largest; give hmin <= hmax.")
        atol = np.asarray(self.atol, dtype=float)
        if atol.ndim > 1 or not (np.all(np.isfinite(atol)) and np.all(atol >= 0)):
            raise ValueError(f"Integrator(atol={self.atol!r}) must be a finite number >= 0 or "
                             "a vector of them (one per unknown).")
        if atol.ndim == 1:  # hashable, so the settings stay a static jit argument
            object.__setattr__(self, "atol", tuple(float(a) for a in atol))


def divided_difference(ts, xs, count: int):
    """The divided difference of order ``count - 1`` of the points ``(ts[i], xs[i])``,
    ``i < count`` (static count); ``xs`` has the points on its leading axis."""
    vals = [xs[i] for i in range(count)]
    for level in range(1, count):
        vals = [(vals[i] - vals[i + 1]) / (ts[i] - ts[i + level]) for i in range(count - level)]
    return vals[0]


def lagrange_weights(ts, valid, t):
    """Weights ``w`` with ``sum_i w_i x_i`` the polynomial through the valid points at ``t``
    (invalid points get weight 0)."""
    n = ts.shape[0]
    ws = []
    for i in range(n):
        w = jnp.ones((), ts.dtype)
        for j in range(n):
            if j != i:
                factor = (t - ts[j]) / jnp.where(valid[j], ts[i] - ts[j], 1.0)
                w = w * jnp.where(valid[j], factor, 1.0)
        ws.append(jnp.where(valid[i], w, 0.0))
    return jnp.stack(ws)


def coefficients(gear: bool, higher, h, h_prev):
    """``(a, b, k)`` of one step: ``dQ/dt(t1) ~ a (Q1 - q_eff) - b Qdot_n`` with ``q_eff =
    Q_n + k (Q_n - Q_{n-1})``. Backward Euler where not ``higher``; else the trapezoidal
    rule, or (``gear``) variable-coefficient BDF2 on the steps ``h`` and ``h_prev``."""
    if not gear:
        return (jnp.where(higher, 2.0, 1.0) / h, jnp.where(higher, 1.0, 0.0),
                jnp.zeros_like(h))
    w = h / jnp.where(h_prev > 0, h_prev, h)  # step ratio omega
    a = jnp.where(higher, (1.0 + 2.0 * w) / (1.0 + w), 1.0) / h
    return a, jnp.zeros_like(h), jnp.where(higher, w * w / (1.0 + 2.0 * w), 0.0)


def lte_constant(gear: bool, h, h_prev):
    """An order-2 step's local error per third divided difference (about x'''/6):
    trapezoidal ``h^3 / 2`` (``h^3 x'''/12``); BDF2 ``h^2 (h + h_prev) (1 + w) / (1 + 2 w)``
    with ``w = h / h_prev`` (``2/9 h^3 x'''`` on equal steps)."""
    if not gear:
        return 0.5 * h ** 3
    w = h / jnp.where(h_prev > 0, h_prev, h)
    return h * h * (h + h_prev) * (1.0 + w) / (1.0 + 2.0 * w)
