"""Time functions of independent sources (SPICE PULSE, SIN, EXP, PWL), as ngspice-39 evaluates
them (``src/spicelib/devices/vsrc/vsrcload.c``), and their corners as breakpoints.

Each waveform reads the time from a shared ``solvers.Clock``; ``next_breakpoint(t)`` gives the
integrator the first corner after ``t`` so that steps land on it. Defaults that depend on the
analysis (``TR = TF = tstep``, ``PW = PER = tstop``, EXP's ``TD1 = tstep``, ...) are filled in
by :func:`waveform`.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp

import simgraph as sg
import solvers

__all__ = ["Pulse", "Sine", "Exponential", "PiecewiseLinear", "waveform"]

_NONE = jnp.inf


def _after(t, corners):
    """The smallest of ``corners`` strictly after ``t`` (inf if none)."""
    return jnp.min(jnp.where(corners > t, corners, _NONE))


class Pulse(sg.ReffableTreeNode):
    """``PULSE(V1 V2 TD TR TF PW PER NP)``: PW is the flat top between rise and fall; after
    ``NP`` periods (``t - TD > NP PER``) the value stays V1 (``NP <= 0``: pulses forever)."""

    clock: solvers.Clock
    v1: jax.Array
    v2: jax.Array
    td: jax.Array
    tr: jax.Array
    tf: jax.Array
    pw: jax.Array
    per: jax.Array
    pulses: jax.Array = 0.0

    def _end(self):
        """Where the pulses stop, as ``t - TD`` (inf for unlimited pulses)."""
        return jnp.where(self.pulses > 0, self.pulses * self.per, _NONE)

    def value(self):
        delayed = self.clock.t - self.td
        x = jnp.where(delayed > self.per,
                      delayed - self.per * jnp.floor(delayed / self.per), delayed)
        top = self.tr + self.pw
        rise = self.v1 + (self.v2 - self.v1) * x / self.tr
        fall = self.v2 + (self.v1 - self.v2) * (x - top) / self.tf
        inside = jnp.where(x < self.tr, rise, jnp.where(x <= top, self.v2, fall))
        off = (x <= 0) | (x >= top + self.tf) | (delayed > self._end())
        return jnp.where(off, self.v1, inside)

    def next_breakpoint(self, t):
        period = jnp.floor(jnp.maximum(t - self.td, 0.0) / self.per)
        starts = self.td + self.per * (period + jnp.arange(2.0))
        offsets = jnp.stack([0.0 * self.tr, self.tr, self.tr + self.pw, self.tr + self.pw + self.tf])
        end = self.td + self._end()
        corners = (starts[:, None] + offsets[None, :]).reshape(-1)
        corners = jnp.where(corners > end, _NONE, corners)  # no corner after the last pulse
        return _after(t, jnp.concatenate([corners, end[None]]))


class Sine(sg.ReffableTreeNode):
    """``SIN(VO VA FREQ TD THETA PHASE)``: VO before TD, then a damped sine."""

    clock: solvers.Clock
    vo: jax.Array
    va: jax.Array
    freq: jax.Array
    td: jax.Array
    theta: jax.Array
    phase: jax.Array

    def value(self):
        x = self.clock.t - self.td
        phase = self.phase * (math.pi / 180.0)
        wave = self.va * jnp.exp(-x * self.theta) * jnp.sin(2.0 * math.pi * self.freq * x + phase)
        return self.vo + jnp.where(x <= 0, self.va * jnp.sin(phase), wave)

    def next_breakpoint(self, t):
        return _after(t, jnp.stack([self.td]))


class Exponential(sg.ReffableTreeNode):
    """``EXP(V1 V2 TD1 TAU1 TD2 TAU2)``: rise towards V2 from TD1, back towards V1 from
    ``max(TD1, TD2)``."""

    clock: solvers.Clock
    v1: jax.Array
    v2: jax.Array
    td1: jax.Array
    tau1: jax.Array
    td2: jax.Array
    tau2: jax.Array

    def value(self):
        """V1 up to TD1; then the rise, plus the fall once past TD2 too (ngspice: with
        TD2 < TD1 both start at TD1)."""
        t = self.clock.t
        rise = (self.v2 - self.v1) * -jnp.expm1(-jnp.maximum(t - self.td1, 0.0) / self.tau1)
        fall = (self.v1 - self.v2) * -jnp.expm1(-jnp.maximum(t - self.td2, 0.0) / self.tau2)
        both = rise + jnp.where(t > self.td2, fall, 0.0)
        return self.v1 + jnp.where(t > self.td1, both, 0.0)

    def next_breakpoint(self, t):
        return _after(t, jnp.stack([self.td1, jnp.maximum(self.td1, self.td2)]))


class PiecewiseLinear(sg.ReffableTreeNode):
    """``PWL(t1 v1 t2 v2 ...)``: linear between points, the end values outside; at a time
    given twice (a step) the first point's value, as ngspice (after it, the second's)."""

    clock: solvers.Clock
    times: jax.Array
    values: jax.Array

    def value(self):
        t = self.clock.t
        first = jnp.clip(jnp.searchsorted(self.times, t, side="left"), 0, len(self.times) - 1)
        return jnp.where(self.times[first] == t, self.values[first],
                         jnp.interp(t, self.times, self.values))

    def next_breakpoint(self, t):
        return _after(t, self.times)


def waveform(kind: str, params: tuple, clock: solvers.Clock, tstep: float, tstop: float):
    """The waveform node of a netlist's ``KIND(params)`` with ngspice's defaults."""
    p = list(params)
    get = lambda i, default: p[i] if len(p) > i and p[i] != 0.0 else default  # noqa: E731
    if kind == "PULSE":
        v1, v2 = get(0, 0.0), p[1] if len(p) > 1 else 0.0
        return Pulse(clock, v1, v2, get(2, 0.0), get(3, tstep), get(4, tstep), get(5, tstop),
                     get(6, tstop), get(7, 0.0))
    if kind == "SIN":
        return Sine(clock, get(0, 0.0), get(1, 0.0), get(2, 1.0 / tstop), get(3, 0.0),
                    get(4, 0.0), get(5, 0.0))
    if kind == "EXP":  # ngspice-39: TD1 = TSTEP, TD2 = TD1 + TSTEP, TAU = TSTEP when 0/omitted
        td1 = get(2, tstep)
        return Exponential(clock, get(0, 0.0), get(1, 0.0), td1, get(3, tstep),
                           get(4, td1 + tstep), get(5, tstep))
    if kind == "PWL":
        return PiecewiseLinear(clock, jnp.asarray(p[0::2]), jnp.asarray(p[1::2]))
    raise ValueError(f"waveform {kind} is not supported")
