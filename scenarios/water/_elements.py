"""Element classes of a water network at one instant (EPANET's t = 0 snapshot), SI units.

Unknowns: the head of every junction and the flow of every open link (positive from ``start``
to ``end``). A junction's equation is its mass balance, ``inflow - outflow - demand = 0``, into
which links add their flows (``contributions``); a link's equation is its head law. Reservoirs
and tanks have a fixed head, no unknown and no equation: links skip them. Every method is
written for one element (the solver vmaps it over all elements of a kind).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

import simgraph as sg

__all__ = ["HW_EXPONENT", "HW_DIAMETER_EXPONENT", "Hydraulics", "Node", "Junction", "Reservoir",
           "Tank", "Pipe", "Pump", "CurvePump", "PowerPump", "WaterGraph", "signed_power"]

HW_EXPONENT = 1.852
HW_DIAMETER_EXPONENT = 4.871


class Hydraulics(sg.ReffableTreeNode):
    """Constants shared by all elements (see ``water/README.md``), in SI.

    ``k_hw``: Hazen-Williams constant; ``minor_g``: g in the minor-loss term; ``rho_g``: for
    constant-power pumps; ``rq_tol`` (s/m^2): EPANET's small-flow rule, a link law with a
    gradient below it continues as the line ``rq_tol * q``; ``regularisation``: WNTR's extra
    pipe loss ``regularisation * sqrt(r) * q``; ``max_gradient``: EPANET's CBIG limit on the
    power-pump gradient; ``demand_multiplier`` scales every junction demand (for sweeps).
    """

    k_hw: jax.Array
    minor_g: jax.Array
    rho_g: jax.Array
    rq_tol: jax.Array
    regularisation: jax.Array
    max_gradient: jax.Array
    demand_multiplier: jax.Array = 1.0


class Node(sg.ReffableTreeNode):
    """Base class of network nodes (links reference nodes through it)."""


class Junction(Node):
    """Unknown head (m); equation: inflow - outflow - demand_multiplier * demand = 0 (m3/s)."""

    hydraulics: Hydraulics
    elevation: jax.Array
    demand: jax.Array
    head: jax.Array = sg.unknown(default=0.0)

    def residual(self):
        return -self.hydraulics.demand_multiplier * self.demand


class Reservoir(Node):
    """Fixed head (m): no unknown, no equation."""

    head: jax.Array


class Tank(Node):
    """A tank at t = 0: fixed head ``elevation + level`` (m), no unknown, no equation."""

    elevation: jax.Array
    level: jax.Array

    @property
    def head(self):
        return self.elevation + self.level


def signed_power(q, r, n, slope):
    """``r |q|^n sign(q)``, continued as the line ``slope * q`` where ``r |q|^(n-1)`` falls
    below ``slope``: a continuous form of EPANET's small-flow rule (EPANET switches where
    ``n r |q|^(n-1) < slope``, with a jump; the two laws differ by less than ``slope * |q|``,
    about 1e-6 m per m3/s). Finite, with a nonzero gradient at q = 0 when ``slope > 0``."""
    a = jnp.abs(q)
    a_safe = jnp.where(a > 0, a, 1.0)
    steep = (a > 0) & (r * a_safe ** (n - 1.0) > slope)
    a_law = jnp.where(steep, a, 1.0)
    return jnp.where(steep, r * a_law ** (n - 1.0) * q, slope * q)


def _mass(terms):
    """Mass-balance contributions, skipping fixed-head nodes (they have no equation)."""
    return tuple((node, q) for node, q in terms if isinstance(node, Junction))


class _Link(sg.ReffableTreeNode):
    """Base of links: the unknown ``flow`` (m3/s, start -> end) leaves ``start`` and enters
    ``end``; subclasses declare it last, after their parameters."""

    start: Node
    end: Node
    hydraulics: Hydraulics

    def contributions(self):
        return _mass(((self.start, -self.flow), (self.end, self.flow)))


class Pipe(_Link):
    """Hazen-Williams pipe with minor loss: ``H_start - H_end = h_f(q) + m |q| q``.

    ``h_f = r |q|^0.852 q`` with ``r = k_hw L C^-1.852 D^-4.871`` (EPANET small-flow rule and
    WNTR regularisation from ``hydraulics``), ``m = 8 K / (g pi^2 D^4)``.
    """

    length: jax.Array
    diameter: jax.Array
    roughness: jax.Array
    minor_loss: jax.Array = 0.0
    flow: jax.Array = sg.unknown(default=0.0)

    def resistance(self):
        c = self.hydraulics
        return (c.k_hw * self.length * self.roughness ** -HW_EXPONENT
                * self.diameter ** -HW_DIAMETER_EXPONENT)

    def headloss(self):
        c, q, r = self.hydraulics, self.flow, self.resistance()
        friction = signed_power(q, r, HW_EXPONENT, c.rq_tol)
        minor = 8.0 * self.minor_loss / (c.minor_g * jnp.pi ** 2 * self.diameter ** 4)
        return friction + c.regularisation * jnp.sqrt(r) * q + minor * jnp.abs(q) * q

    def residual(self):
        return self.start.head - self.end.head - self.headloss()


class Pump(_Link):
    """Head pump with EPANET's power-function curve at relative speed ``speed`` (w):
    ``H_end - H_start = w^2 A - B w^(2-C) |q|^C sign(q)`` (small-flow rule as for pipes)."""

    shutoff_head: jax.Array
    coefficient: jax.Array
    exponent: jax.Array
    speed: jax.Array = 1.0
    flow: jax.Array = sg.unknown(default=0.0)

    def gain(self):
        w, c = self.speed, self.exponent
        r = self.coefficient * w ** (2.0 - c)
        return w ** 2 * self.shutoff_head - signed_power(self.flow, r, c, self.hydraulics.rq_tol)

    def residual(self):
        return self.end.head - self.start.head - self.gain()


class CurvePump(_Link):
    """Head pump with a multi-point curve, piecewise linear as in EPANET: ``gain = w^2 H(q/w)``
    with ``H`` through (``flows``, ``heads``), extended by its first and last segments."""

    flows: jax.Array
    heads: jax.Array
    speed: jax.Array = 1.0
    flow: jax.Array = sg.unknown(default=0.0)

    def gain(self):
        x, y, w = self.flows, self.heads, self.speed
        q = self.flow / w
        k = jnp.clip(jnp.searchsorted(x, q, side="left"), 1, x.shape[0] - 1)
        slope = (y[k] - y[k - 1]) / (x[k] - x[k - 1])
        return w ** 2 * (y[k - 1] + slope * (q - x[k - 1]))

    def residual(self):
        return self.end.head - self.start.head - self.gain()


class PowerPump(_Link):
    """Constant-power pump at relative speed ``speed`` (w): ``(H_end - H_start) q = w^3 P /
    (rho g)``, i.e. gain ``k / q`` with ``k = w^3 P / (rho g)``, as EPANET 2.2's ``pumpcoeff``
    where its gradient ``k / q^2`` is at most ``max_gradient``, and ``rq_tol * q`` (EPANET's
    line, continuous) where the gradient falls below ``rq_tol``.

    Below ``q* = sqrt(k / max_gradient)`` (and for q <= 0) EPANET uses the line
    ``max_gradient * q``, which rises from 0 and so gives a second, spurious root at a tiny
    or negative flow; EPANET's iteration (gradient of the wrong sign there) is repelled from
    it, Newton is not. Here the gain continues as the curve's tangent at ``q*``,
    ``2 sqrt(k max_gradient) - max_gradient q``: C1, falling, so EPANET's root is the only
    one near q = 0 (a pump that must pass q = 0 is closed by the status check)."""

    power: jax.Array
    speed: jax.Array = 1.0
    flow: jax.Array = sg.unknown(default=0.0)

    def gain(self):
        c, q = self.hydraulics, self.flow
        k = self.speed ** 3 * self.power / c.rho_g
        low = (q <= 0) | (c.max_gradient * q * q < k)
        high = ~low & (c.rq_tol * q * q > k)
        q_safe = jnp.where(low | high, 1.0, q)
        tangent = 2.0 * jnp.sqrt(jnp.where(low, k * c.max_gradient, 1.0)) - c.max_gradient * q
        return jnp.where(low, tangent, jnp.where(high, c.rq_tol * q, k / q_safe))

    def residual(self):
        return self.end.head - self.start.head - self.gain()


class WaterGraph(sg.ReffableTreeNode):
    """The root: nodes and open links by EPANET id (``.junctions['J10'].head``,
    ``.pipes['P3'].flow``); ``hydraulics`` is shared by every element."""

    hydraulics: Hydraulics
    junctions: dict
    reservoirs: dict
    tanks: dict
    pipes: dict
    pumps: dict
