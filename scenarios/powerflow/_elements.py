"""Element classes of an AC power-flow case (MATPOWER conventions), per unit, angles in radians.

Every bus balances the complex power it sends into the network (branches, shunts, loads) against
its generation. A PQ bus has unknowns Vm, Va and both balances as equations; a PV bus has the
unknown Va, a fixed Vm and the P balance (its Q is an output); the slack bus has fixed Vm, Va
and no equation (P and Q are outputs). Elements add their power to the buses' equations through
``contributions``, skipping what a bus has no equation for. Methods are written for one element.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

import simgraph as sg

__all__ = ["Bus", "PQBus", "PVBus", "SlackBus", "Loading", "Load", "Generator", "Shunt",
           "Branch", "PowerGraph", "branch_power"]


class Bus(sg.ReffableTreeNode):
    """Base class of buses: every bus has ``vm`` (p.u.) and ``va`` (rad)."""


class PQBus(Bus):
    """Load bus: unknowns Va, Vm; equations: P and Q balance (power sent out = 0 net). Va is
    declared first so that x pairs each equation with the unknown it depends on most (P with
    Va, Q with Vm): a strong diagonal for LU with static pivoting."""

    va: jax.Array = sg.unknown(default=0.0)
    vm: jax.Array = sg.unknown(default=1.0)

    def residual(self):
        return jnp.zeros(2, jnp.result_type(self.vm))


class PVBus(Bus):
    """Generator bus: Vm fixed at the set point, unknown Va; equation: P balance only."""

    vm: jax.Array
    va: jax.Array = sg.unknown(default=0.0)

    def residual(self):
        return jnp.zeros((), jnp.result_type(self.va))


class SlackBus(Bus):
    """Reference bus: Vm and Va fixed; no unknown and no equation (P, Q are outputs)."""

    vm: jax.Array
    va: jax.Array


def _power(terms):
    """Contributions of power ``(bus, P, Q)`` sent into the network at ``bus``: (P, Q) to a PQ
    bus, P to a PV bus, nothing to the slack."""
    out = []
    for bus, p, q in terms:
        if isinstance(bus, PQBus):
            out.append((bus, jnp.stack([p, q])))
        elif isinstance(bus, PVBus):
            out.append((bus, p))
    return tuple(out)


class Loading(sg.ReffableTreeNode):
    """Shared by all loads and generators: ``scale`` multiplies every load's P and Q and every
    generator's scheduled P (for sweeps: the dispatch follows the load, so the slack covers
    the change of the losses, not the whole change of the load, which on a large grid would
    be far beyond what one bus can carry)."""

    scale: jax.Array = 1.0


class Load(sg.ReffableTreeNode):
    """Constant-power load ``p + j q`` (p.u.) at ``bus``, times ``loading.scale``."""

    bus: Bus
    loading: Loading
    p: jax.Array
    q: jax.Array

    def contributions(self):
        s = self.loading.scale
        return _power(((self.bus, s * self.p, s * self.q),))


class Generator(sg.ReffableTreeNode):
    """Fixed generation ``p * loading.scale + j q`` (p.u.) at ``bus``; at a PV bus only the P
    counts (Q is whatever holds Vm), at the slack neither."""

    bus: Bus
    loading: Loading
    p: jax.Array
    q: jax.Array = 0.0

    def contributions(self):
        return _power(((self.bus, -self.loading.scale * self.p, -self.q),))


class Shunt(sg.ReffableTreeNode):
    """Shunt admittance ``g + j b`` (p.u. at V = 1; b > 0 capacitive): draws Vm^2 (g - j b)."""

    bus: Bus
    g: jax.Array
    b: jax.Array

    def contributions(self):
        v2 = self.bus.vm ** 2
        return _power(((self.bus, self.g * v2, -self.b * v2),))


def branch_power(vm_f, va_f, vm_t, va_t, r, x, b, tap, shift, xp=jnp):
    """Power ``(P_f, Q_f, P_t, Q_t)`` sent into the branch at its FROM and TO ends: the MATPOWER
    pi model (``Yff = (ys + j b/2)/tap^2``, ``Yft = -ys/conj(T)``, ``Ytf = -ys/T``, ``Ytt = ys +
    j b/2``, ``T = tap exp(j shift)``, ``S = V conj(I)``) in real arithmetic. ``xp``: the array
    module (``numpy`` for results on the host: no dispatch or compile per shape)."""
    z2 = r * r + x * x
    gs, bs = r / z2, -x / z2
    phi = va_f - va_t - shift
    cos, sin = xp.cos(phi), xp.sin(phi)
    k = vm_f * vm_t / tap
    f2, t2 = vm_f * vm_f / (tap * tap), vm_t * vm_t
    p_f = f2 * gs - k * (gs * cos + bs * sin)
    q_f = -f2 * (bs + 0.5 * b) - k * (gs * sin - bs * cos)
    p_t = t2 * gs - k * (gs * cos - bs * sin)
    q_t = -t2 * (bs + 0.5 * b) + k * (gs * sin + bs * cos)
    return p_f, q_f, p_t, q_t


class Branch(sg.ReffableTreeNode):
    """Line or transformer from ``f`` to ``t``: series ``r + j x``, total charging ``b``,
    off-nominal ``tap`` and phase ``shift`` (rad) at the FROM end."""

    f: Bus
    t: Bus
    r: jax.Array
    x: jax.Array
    b: jax.Array = 0.0
    tap: jax.Array = 1.0
    shift: jax.Array = 0.0

    def power(self):
        return branch_power(self.f.vm, self.f.va, self.t.vm, self.t.va, self.r, self.x, self.b,
                            self.tap, self.shift)

    def contributions(self):
        p_f, q_f, p_t, q_t = self.power()
        return _power(((self.f, p_f, q_f), (self.t, p_t, q_t)))


class PowerGraph(sg.ReffableTreeNode):
    """The root: buses by case bus number (``.buses[5].vm``), branches in case order, and the
    loads, generators and shunts by bus number; ``loading`` is shared by every load and
    generator."""

    loading: Loading
    buses: dict
    branches: tuple
    loads: dict
    generators: dict
    shunts: dict
