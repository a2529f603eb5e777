"""Topology checks of a netlist, done before any Newton iteration.

A node with no DC path to ground (connected only through current sources, or an island of
elements not tied to ground) has no defined voltage; a loop of voltage sources fixes a loop
voltage twice. Both make the circuit's Jacobian singular for every value, so they are reported
by name here instead of surfacing as a failed solve.
"""
from __future__ import annotations

import simgraph as sg

from ._netlist import GROUND, CurrentSource, Netlist, VoltageSource

__all__ = ["CircuitError", "FloatingNodeError", "VoltageLoopError", "check_topology"]


class CircuitError(sg.GraphError):
    """The circuit cannot be turned into a well-posed DC problem (what, where, how to fix)."""


class FloatingNodeError(CircuitError):
    """Nodes with no DC path to ground; ``nodes`` lists their names."""

    def __init__(self, message: str, nodes: tuple[str, ...]):
        super().__init__(message)
        self.nodes = nodes


class VoltageLoopError(CircuitError):
    """Voltage sources that form a loop; ``sources`` lists their names."""

    def __init__(self, message: str, sources: tuple[str, ...]):
        super().__init__(message)
        self.sources = sources


class _UnionFind:
    def __init__(self):
        self.parent: dict[str, str] = {}

    def find(self, a: str) -> str:
        self.parent.setdefault(a, a)
        while self.parent[a] != a:
            self.parent[a] = self.parent[self.parent[a]]
            a = self.parent[a]
        return a

    def union(self, a: str, b: str) -> bool:
        """Join the sets of a and b; False if they were already one set."""
        ra, rb = self.find(a), self.find(b)
        self.parent[ra] = rb
        return ra != rb


def check_topology(netlist: Netlist) -> None:
    """Raise ``FloatingNodeError`` or ``VoltageLoopError`` naming the nodes or sources."""
    _check_voltage_loops(netlist)
    dc = _UnionFind()
    dc.find(GROUND)
    for e in netlist.elements:
        if not isinstance(e, CurrentSource):
            dc.union(*e.nodes)
    floating = tuple(n for n in netlist.nodes if dc.find(n) != dc.find(GROUND))
    if floating:
        shown = ", ".join(repr(n) for n in floating[:8])
        more = f" and {len(floating) - 8} more" if len(floating) > 8 else ""
        where = f"netlist {netlist.title!r}"
        raise FloatingNodeError(
            f"{where}: node(s) {shown}{more} have no DC path to ground (0): they connect to the "
            "rest only through current sources, or form an island, so their voltage is "
            "undefined. Connect them to ground through a resistor (e.g. 1e12 ohm) or a "
            "voltage source.", floating)


def _check_voltage_loops(netlist: Netlist) -> None:
    loops = _UnionFind()
    on_loop: list[str] = []
    for e in netlist.elements:
        if isinstance(e, VoltageSource) and not loops.union(*e.nodes):
            on_loop.append(e.name)
    if on_loop:
        first = on_loop[0]
        raise VoltageLoopError(
            f"netlist {netlist.title!r}: voltage source {first!r} closes a loop of voltage "
            f"sources (between nodes {netlist.element(first).nodes}), so the loop voltage is "
            "fixed twice and the source currents are undefined. Remove one source of the loop "
            "or put a resistor in series with it.", tuple(on_loop))
