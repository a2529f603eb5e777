"""Plane truss statics with large displacements: pin nodes, bars, supports and loads as a graph.

Kinematics are exact: a bar's current length is computed from the displaced node positions,
so rotations of any size are handled and shallow arches snap through. The material is linear
in the engineering strain: axial force ``N = EA (L - L0) / L0`` (tension positive). A node's
residual is the sum of the forces acting on it (N, two components); at equilibrium it is zero.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

import simgraph as sg

from .._leaves import leaf

__all__ = ["TrussNode", "Bar", "Support", "Load", "Truss", "axial_force"]


def _zeros2() -> jax.Array:
    """A fresh (0, 0) for a default field, compiling nothing (see ``scenarios._leaves``)."""
    return leaf((0.0, 0.0))


class TrussNode(sg.ReffableTreeNode):
    """A pin at reference position ``X`` (m, shape (2,)) with displacement ``u`` (unknown)."""

    X: jax.Array
    u: jax.Array = sg.unknown(default_factory=_zeros2)

    def position(self):
        return self.X + self.u

    def residual(self):
        return jnp.zeros_like(self.u)  # the forces arrive as contributions


def axial_force(d, EA, L0):
    """Axial force ``EA (L - L0) / L0`` of a bar whose end-to-end vector is ``d`` (last axis).

    Written with operators only, so it works on JAX and numpy arrays with batch axes.
    """
    return EA * ((d * d).sum(-1) ** 0.5 - L0) / L0


class Bar(sg.ReffableTreeNode):
    """Pin-jointed bar with axial stiffness ``EA`` (N) and stress-free length ``L0`` (m)."""

    a: TrussNode
    b: TrussNode
    EA: jax.Array
    L0: jax.Array

    def axial_force(self):
        """Positive in tension (N), from the current (deformed) length."""
        return axial_force(self.b.position() - self.a.position(), self.EA, self.L0)

    def contributions(self):
        d = self.b.position() - self.a.position()
        unit = d / jnp.sqrt(jnp.sum(d * d))
        force_on_a = axial_force(d, self.EA, self.L0) * unit  # tension pulls a towards b
        return ((self.a, force_on_a), (self.b, -force_on_a))


class Support(sg.ReffableTreeNode):
    """Prescribes the displacement of the ``fixed`` components of ``node`` (a bool mask of
    shape (2,)); the unknown ``reaction`` (N) is the support force, zero on free components.

    A nonzero ``prescribed`` displacement gives displacement control (e.g. through a limit
    point, where load control has no nearby solution). ``scale`` (N/m) multiplies the
    displacement equation so that its residual is a force like the equilibrium equations';
    line searches on ``||F||`` then weigh both alike (``build_truss`` uses the stiffest bar's
    ``EA / L0``).
    """

    node: TrussNode
    fixed: jax.Array
    prescribed: jax.Array = sg.field(default_factory=_zeros2)
    scale: jax.Array = 1.0
    reaction: jax.Array = sg.unknown(default_factory=_zeros2)

    def residual(self):
        return jnp.where(self.fixed, self.scale * (self.node.u - self.prescribed), self.reaction)

    def contributions(self):
        return ((self.node, self.reaction),)


class Load(sg.ReffableTreeNode):
    """An external force ``factor * force`` (N, shape (2,)) on ``node``; sweep ``factor``."""

    node: TrussNode
    force: jax.Array
    factor: jax.Array = 1.0

    def contributions(self):
        return ((self.node, self.factor * self.force),)


class Truss(sg.ReffableTreeNode):
    """Root of a truss graph; ``*_names`` (static) name the entries of each list."""

    nodes: list
    bars: list
    supports: list
    loads: list
    node_names: tuple = sg.static(default=())
    bar_names: tuple = sg.static(default=())
    support_names: tuple = sg.static(default=())
    load_names: tuple = sg.static(default=())
