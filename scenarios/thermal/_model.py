"""Thermal network with radiation: nodes, links, boundaries, loads and capacities as a graph.

Sign convention: a node's residual is the net heat flowing *out* of it (W). A link from ``a``
to ``b`` carrying ``q`` (W, positive from a to b) adds ``+q`` to ``a`` and ``-q`` to ``b``; a
heat load adds ``-Q`` (heat into the node); a fixed-temperature boundary injects the unknown
heat ``q`` it takes to hold its node at ``T``. At the solution every node balances, so the
boundary heats plus the loads sum to zero (global energy balance).
"""
from __future__ import annotations

import jax

import simgraph as sg

__all__ = ["STEFAN_BOLTZMANN", "ThermalNode", "Conduction", "Radiation", "FixedTemperature",
           "HeatLoad", "HeatCapacity", "ThermalNetwork", "grey_body_factor"]

#: Stefan-Boltzmann constant, W m^-2 K^-4 (CODATA 2018, exact).
STEFAN_BOLTZMANN = 5.670374419e-8


class ThermalNode(sg.ReffableTreeNode):
    """A lumped isothermal body at temperature ``T`` (K); its equation is its heat balance."""

    T: jax.Array = sg.unknown(default=300.0)

    def residual(self):
        return 0.0 * self.T  # the heat flows arrive as contributions


class Conduction(sg.ReffableTreeNode):
    """Linear conductance ``G`` (W/K) between two nodes: ``q = G (Ta - Tb)``."""

    a: ThermalNode
    b: ThermalNode
    G: jax.Array

    def heat_flow(self):
        return self.G * (self.a.T - self.b.T)

    def contributions(self):
        q = self.heat_flow()
        return ((self.a, q), (self.b, -q))


def grey_body_factor(emissivity, view_factor, area_ratio=1.0):
    """Two-surface grey-body exchange factor ``F_eff`` with ``q = sigma F_eff A1 (T1^4 - T2^4)``.

    ``F_eff = 1 / ((1 - e1)/e1 + 1/F12 + (1 - e2)/e2 * A1/A2)``; two infinite parallel plates
    (F12 = 1, A1 = A2) give ``1 / (1/e1 + 1/e2 - 1)``.
    """
    e1, e2 = emissivity[..., 0], emissivity[..., 1]
    return 1.0 / ((1.0 - e1) / e1 + 1.0 / view_factor + (1.0 - e2) / e2 * area_ratio)


class Radiation(sg.ReffableTreeNode):
    """Grey diffuse radiative exchange between surface ``a`` (area ``area``) and ``b``.

    ``emissivity`` is ``(e_a, e_b)``, ``view_factor`` is F_ab, ``area_ratio`` is A_a / A_b.
    """

    a: ThermalNode
    b: ThermalNode
    area: jax.Array
    emissivity: jax.Array
    view_factor: jax.Array = 1.0
    area_ratio: jax.Array = 1.0

    def heat_flow(self):
        factor = grey_body_factor(self.emissivity, self.view_factor, self.area_ratio)
        return STEFAN_BOLTZMANN * factor * self.area * (self.a.T ** 4 - self.b.T ** 4)

    def contributions(self):
        q = self.heat_flow()
        return ((self.a, q), (self.b, -q))


class FixedTemperature(sg.ReffableTreeNode):
    """Holds ``node`` at ``T`` (K); the unknown ``q`` is the heat (W) it injects to do so.

    ``scale`` (W/K) multiplies the temperature equation so that its residual is a heat flow
    like the balances'; line searches on ``||F||`` then weigh both alike (``build_thermal``
    uses the network's largest conductance, radiative ones linearised).
    """

    node: ThermalNode
    T: jax.Array
    q: jax.Array = sg.unknown(default=0.0)
    scale: jax.Array = 1.0

    def residual(self):
        return self.scale * (self.node.T - self.T)

    def contributions(self):
        return ((self.node, -self.q),)


class HeatLoad(sg.ReffableTreeNode):
    """A heat source of ``Q`` watts into ``node`` (negative ``Q`` extracts heat)."""

    node: ThermalNode
    Q: jax.Array

    def contributions(self):
        return ((self.node, -self.Q),)


class HeatCapacity(sg.ReffableTreeNode):
    """Heat capacity ``C`` (J/K) of ``node``: it stores ``C T`` (J), so in a transient the
    node's balance gains ``C dT/dt``; a steady state does not see it."""

    node: ThermalNode
    C: jax.Array

    def charge(self):
        return ((self.node, self.C * self.node.T),)


class ThermalNetwork(sg.ReffableTreeNode):
    """Root of a thermal graph; ``*_names`` (static) name the entries of each list."""

    nodes: list
    conductions: list
    radiations: list
    boundaries: list
    loads: list
    capacities: list = None
    node_names: tuple = sg.static(default=())
    conduction_names: tuple = sg.static(default=())
    radiation_names: tuple = sg.static(default=())
    boundary_names: tuple = sg.static(default=())
    load_names: tuple = sg.static(default=())
    capacity_names: tuple = sg.static(default=())
