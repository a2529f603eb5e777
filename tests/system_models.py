"""Element classes for the System tests: a small circuit kit plus equation-style nodes.

Written for one element, pure JAX, as the model protocol asks. Several exercise corners of
the lowering: two target classes (``Node`` and ``Ground``), tuple-of-reference fields of any
length (``Star``), two-hop reads (``VCCS`` via a ``Port``), identity tests (``Shunt``), array
unknowns (``Pair``) and a step limit (``Diode``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

import simgraph as sg


class Node(sg.ReffableTreeNode):
    v: jax.Array = sg.unknown(default=0.0)

    def residual(self):
        return 0.0  # KCL: the currents come in as contributions


class Ground(Node):
    def residual(self):
        return self.v  # fixes the reference potential at 0


class Resistor(sg.ReffableTreeNode):
    a: Node
    b: Node
    g: float = 1.0

    def contributions(self):
        i = self.g * (self.a.v - self.b.v)
        return ((self.a, i), (self.b, -i))


class Diode(sg.ReffableTreeNode):
    a: Node
    b: Node
    i_s: float = 1e-3
    vt: float = 0.5

    def current(self):
        return self.i_s * (jnp.exp((self.a.v - self.b.v) / self.vt) - 1.0)

    def contributions(self):
        i = self.current()
        return ((self.a, i), (self.b, -i))

    def step_limit(self, new):
        dv = (new.a.v - new.b.v) - (self.a.v - self.b.v)
        return jnp.minimum(1.0, 2.0 * self.vt / jnp.maximum(jnp.abs(dv), 1e-30))


class CurrentSource(sg.ReffableTreeNode):
    a: Node
    b: Node
    i: float = 1.0

    def contributions(self):
        return ((self.a, -self.i), (self.b, self.i))


class VoltageSource(sg.ReffableTreeNode):
    p: Node
    n: Node
    voltage: float = 1.0
    i: jax.Array = sg.unknown(default=0.0)

    def residual(self):
        return self.p.v - self.n.v - self.voltage

    def contributions(self):
        return ((self.p, self.i), (self.n, -self.i))


class Coupler(sg.ReffableTreeNode):
    """Asymmetric terms, so a self-loop (a is b) does not cancel."""

    a: Node
    b: Node
    k: float = 0.5

    def contributions(self):
        return ((self.a, self.k * self.b.v ** 2), (self.b, self.k * jnp.sin(self.a.v)))


class Shunt(sg.ReffableTreeNode):
    """Behaves differently when both ends are the same node (tests identity in views)."""

    a: Node
    b: Node
    g: float = 2.0

    def contributions(self):
        if self.a is self.b:
            return ((self.a, self.g * self.a.v),)
        return ((self.a, self.g * self.b.v), (self.b, -self.g * self.a.v ** 3))


class Star(sg.ReffableTreeNode):
    """Couples any number of terminals to their mean (tuple-of-reference field)."""

    terminals: tuple
    w: jax.Array

    def contributions(self):
        vs = jnp.stack([t.v for t in self.terminals])
        mean = jnp.mean(vs)
        return tuple((t, self.w[k] * (t.v - mean) ** 3 + self.w[k] * (t.v - mean))
                     for k, t in enumerate(self.terminals))


class Port(sg.ReffableTreeNode):
    a: Node
    b: Node


class VCCS(sg.ReffableTreeNode):
    """Voltage-controlled current source: reads two hops (``self.ctrl.a.v``)."""

    a: Node
    b: Node
    ctrl: Port
    gm: float = 0.1

    def contributions(self):
        i = self.gm * jnp.tanh(self.ctrl.a.v - self.ctrl.b.v)
        return ((self.a, i), (self.b, -i))


class Circuit(sg.ReffableTreeNode):
    nodes: list
    elements: list


class GradientProvider(sg.ReffableTreeNode):
    value: jax.Array


class Equation(sg.ReffableTreeNode):
    """The founding example: ``gradient.value * x - constant = 0``."""

    constant: jax.Array
    gradient: GradientProvider
    x: jax.Array = sg.unknown(default=0.0)
    name: str = sg.static(default="")

    def residual(self):
        return self.gradient.value * self.x - self.constant


class Pair(sg.ReffableTreeNode):
    """An array unknown with an array residual, coupled to a scalar node."""

    x: jax.Array = sg.unknown()
    node: Node
    c: jax.Array = 1.0

    def residual(self):
        return jnp.stack([self.x[0] ** 2 + self.x[1] - self.c, self.x[1] - self.node.v])


class Equations(sg.ReffableTreeNode):
    equations: list


def resistor_chain(n: int, g: float = 1.0) -> Circuit:
    """A current-driven chain of ``n`` resistors from ground; n + 1 nodes."""
    ground = Ground()
    nodes = [ground] + [Node() for _ in range(n)]
    elements = [Resistor(nodes[k], nodes[k + 1], g) for k in range(n)]
    elements.append(CurrentSource(ground, nodes[-1], 1.0))
    return Circuit(nodes, elements)
