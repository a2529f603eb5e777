"""Element classes of a nonlinear DC circuit, written for one element (the solver vmaps them).

Every non-ground node has one unknown, its voltage, and one equation, Kirchhoff's current law
(sum of the currents *leaving* the node = 0) that the elements fill through ``contributions``.
Ground is a node with a fixed 0 V and no equation: elements simply skip it. A voltage source
adds its current as an unknown and its ``V(pos) - V(neg) = value`` as an equation. The
physics (Vt, GMIN, the SPICE3 diode law, ``pnjlim``) follows ngspice-39, see
``../shared/validation/circuits/README.md``.
"""
from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

import simgraph as sg

__all__ = ["Node", "Ground", "Physics", "DiodeModel", "Resistor", "Capacitor", "Inductor",
           "Diode", "ZenerDiode", "VoltageSource", "CurrentSource", "Circuit", "diode_current",
           "pnjlim", "U_LINEAR"]

#: Above ``v / (N Vt) = U_LINEAR`` the diode exponential continues as its tangent line, so the
#: residual is finite for any voltage; ``IS * exp(80)`` exceeds 1e18 A for any IS >= 1e-17 A,
#: so a real operating point never reaches it.
U_LINEAR = 80.0


class Node(sg.ReffableTreeNode):
    """A circuit node: its voltage is an unknown; its equation is KCL (filled by elements)."""

    v: jax.Array = sg.unknown(default=0.0)

    def residual(self):
        return jnp.zeros((), jnp.result_type(self.v))


class Ground(sg.ReffableTreeNode):
    """The reference node (SPICE ``0``): fixed potential, no unknown, no equation."""

    v: jax.Array = 0.0


def _kcl(terminal_pairs):
    """Contributions to KCL, skipping ground (it has no equation)."""
    return tuple((node, i) for node, i in terminal_pairs if not isinstance(node, Ground))


class Physics(sg.ReffableTreeNode):
    """Conditions shared by every diode: thermal voltage ``vt = kT/q`` (V) and ``gmin`` (S)."""

    vt: jax.Array
    gmin: jax.Array


class DiodeModel(sg.ReffableTreeNode):
    """A ``.model NAME D(...)`` card, shared by the diodes that use it: IS (A), N."""

    i_s: jax.Array
    n: jax.Array


class Resistor(sg.ReffableTreeNode):
    """Current ``(V(a) - V(b)) / r`` flows from ``a`` to ``b``."""

    a: Node
    b: Node
    r: jax.Array

    def current(self):
        return (self.a.v - self.b.v) / self.r

    def contributions(self):
        i = self.current()
        return _kcl(((self.a, i), (self.b, -i)))


class Capacitor(sg.ReffableTreeNode):
    """Charge ``c (V(a) - V(b))`` on ``a`` (and its negative on ``b``): no DC current."""

    a: Node
    b: Node
    c: jax.Array

    def charge(self):
        q = self.c * (self.a.v - self.b.v)
        return _kcl(((self.a, q), (self.b, -q)))


class Inductor(sg.ReffableTreeNode):
    """``V(a) - V(b) = l di/dt``; ``i`` (unknown) flows from ``a`` through L to ``b``."""

    a: Node
    b: Node
    l: jax.Array  # noqa: E741
    i: jax.Array = sg.unknown(default=0.0)

    def residual(self):
        return self.a.v - self.b.v

    def contributions(self):
        return _kcl(((self.a, self.i), (self.b, -self.i)))

    def charge(self):
        return ((self, -self.l * self.i),)


def diode_current(v, i_s, vte, gmin, xp=jnp, bv=0.0):
    """SPICE3 junction current at ``v = V(anode) - V(cathode)``, GMIN included.

    ``v >= -3 vte``: ``IS (exp(v/vte) - 1) + GMIN v`` (the exponential continued linearly
    above ``U_LINEAR``); below: ``-IS (1 + (3 vte / (v e))^3) + GMIN v``, and below ``-bv``
    when ``bv > 0`` (breakdown; ngspice's NBV = N): ``-IS exp(-(bv + v) / vte) + GMIN v``,
    continued linearly the same way. Finite, with finite derivatives, for every finite
    ``v``. ``xp=numpy`` evaluates it on the host (results).
    """
    knee = -3.0 * vte
    v_rev = xp.where(v < knee, v, knee)  # keeps the unused branch (and its gradient) finite
    reverse = -i_s * (1.0 + (3.0 * vte / (v_rev * math.e)) ** 3)
    broken = (bv > 0) & (v < -bv) & (v < knee)
    e = _linear_above(xp.where(broken, -(v + bv), v) / vte, xp)  # one exponential for both
    reverse = xp.where(broken, -i_s * e, reverse)
    return xp.where(v < knee, reverse, i_s * (e - 1.0)) + gmin * v


def _linear_above(u, xp):
    """``exp(u)``, continued as its tangent line above ``U_LINEAR`` (finite for finite u)."""
    capped = xp.minimum(u, U_LINEAR)
    return xp.exp(capped) * (1.0 + (u - capped))


def pnjlim(v_new, v_old, vte, vcrit):
    """SPICE's junction-voltage limit (ngspice ``DEVpnjlim``): the voltage to step to instead.

    Above ``vcrit`` a forward step may raise the junction current by about a factor of the
    step over ``vte`` only (logarithmic damping); a reverse step may at most double ``|v| + 1``.
    """
    big = (v_new > vcrit) & (jnp.abs(v_new - v_old) > 2.0 * vte)
    arg = 1.0 + (v_new - v_old) / vte
    safe_arg = jnp.where(arg > 0, arg, 1.0)
    from_on = jnp.where(arg > 0, v_old + vte * jnp.log(safe_arg), vcrit)
    from_off = vte * jnp.log(jnp.where(v_new > 0, v_new, vte) / vte)
    forward = jnp.where(v_old > 0, from_on, from_off)
    floor = jnp.where(v_old > 0, -v_old - 1.0, 2.0 * v_old - 1.0)
    reverse = jnp.where((v_new < 0) & (v_new < floor), floor, v_new)
    return jnp.where(big, forward, reverse)


def _limit_junction(v_new, v_old, vte, vcrit, bv):
    """``pnjlim`` of a diode, in breakdown (``v_new`` below ``-bv + 10 vte``) on the voltage
    beyond ``-bv`` (ngspice's dioload.c): the reverse exponential is damped as the forward."""
    flip = (bv > 0) & (v_new < jnp.minimum(0.0, -bv + 10.0 * vte))
    limited = pnjlim(jnp.where(flip, -(v_new + bv), v_new), jnp.where(flip, -(v_old + bv), v_old),
                     vte, vcrit)  # one pnjlim: on the voltage beyond -bv where flipped
    return jnp.where(flip, -(limited + bv), limited)


class Diode(sg.ReffableTreeNode):
    """Shockley junction from anode ``a`` to cathode ``b`` with GMIN in parallel.

    ``area`` scales IS. A series resistance RS is a separate :class:`Resistor` to an
    internal node (the builder adds it), so this element is the junction only.
    """

    a: Node
    b: Node
    model: DiodeModel
    physics: Physics
    area: jax.Array = 1.0

    def voltage(self):
        return self.a.v - self.b.v

    def _vte(self):
        return self.model.n * self.physics.vt

    def current(self):
        """Junction current (A), GMIN included, as ngspice's ``@d[id]``."""
        return diode_current(self.voltage(), self.model.i_s * self.area, self._vte(),
                             self.physics.gmin)

    def contributions(self):
        i = self.current()
        return _kcl(((self.a, i), (self.b, -i)))

    def step_limit(self, new):
        """The fraction of the Newton step that ``pnjlim`` lets this junction take (the solver
        scales the whole step by the smallest fraction; SPICE limits each junction alone)."""
        vte = self._vte()
        vcrit = vte * jnp.log(vte / (math.sqrt(2.0) * self.model.i_s * self.area))
        v_old, v_new = self.voltage(), new.voltage()
        return _fraction(v_old, v_new, self._limit(v_new, v_old, vte, vcrit))

    def _limit(self, v_new, v_old, vte, vcrit):
        return pnjlim(v_new, v_old, vte, vcrit)


class ZenerDiode(Diode):
    """A :class:`Diode` with reverse breakdown below ``-bv`` (ngspice's ``DIOtBrkdwnV``: the
    voltage matched to the model's BV and IBV, see ``breakdown_voltage``; > 0). A class of its
    own, so circuits without breakdown evaluate and limit plain diodes only."""

    bv: jax.Array = 0.0

    def current(self):
        """Junction current (A), GMIN included, as ngspice's ``@d[id]``."""
        return diode_current(self.voltage(), self.model.i_s * self.area, self._vte(),
                             self.physics.gmin, bv=self.bv)

    def _limit(self, v_new, v_old, vte, vcrit):
        return _limit_junction(v_new, v_old, vte, vcrit, self.bv)


def _fraction(v_old, v_new, limited):
    """The fraction of the step ``v_old -> v_new`` that reaches ``limited``, in (0, 1]."""
    dv = v_new - v_old
    moved = jnp.abs(dv) > 0
    frac = (limited - v_old) / jnp.where(moved, dv, 1.0)
    return jnp.where(moved, jnp.clip(frac, 1e-300, 1.0), 1.0)


def _level(source):
    """A source's value now: its waveform's when it has one (a transient), else ``value``."""
    return source.value if source.wave is None else source.wave.value()


class VoltageSource(sg.ReffableTreeNode):
    """``V(pos) - V(neg) = value`` (or ``wave.value()`` at the clock's time when ``wave`` is a
    waveform); ``i`` (unknown) flows into ``pos``, through, out of ``neg`` (ngspice's
    ``i(vname)``: negative when the source delivers power)."""

    pos: Node
    neg: Node
    value: jax.Array
    i: jax.Array = sg.unknown(default=0.0)
    wave: Any = None

    def residual(self):
        return self.pos.v - self.neg.v - _level(self)

    def contributions(self):
        return _kcl(((self.pos, self.i), (self.neg, -self.i)))


class CurrentSource(sg.ReffableTreeNode):
    """``value`` (or ``wave.value()``) amperes flow through the source from ``pos`` to ``neg``
    (leave ``pos``)."""

    pos: Node
    neg: Node
    value: jax.Array
    wave: Any = None

    def contributions(self):
        i = _level(self)
        return _kcl(((self.pos, i), (self.neg, -i)))


class Circuit(sg.ReffableTreeNode):
    """The root: nodes and elements by netlist name (``.nodes['n3']``, ``.vsources['V1']``).

    ``internal`` holds the nodes a diode's series resistance adds (``'D1#rs'``); ``physics``
    and ``models`` are shared by the diodes, so changing one value changes all its users.
    """

    ground: Ground
    physics: Physics
    nodes: dict
    internal: dict
    models: dict
    resistors: dict
    diodes: dict
    vsources: dict
    isources: dict
    capacitors: dict = None
    inductors: dict = None
