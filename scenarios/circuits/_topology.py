"""Topology checks of a netlist, done before any Newton iteration.

A node with no DC path to ground (connected only through current sources, or an island of
elements not tied to ground) has no defined voltage; a loop of voltage sources fixes a loop
voltage twice. Both make the circuit's Jacobian singular for every value, so they are reported
by name here instead of surfacing as a failed solve.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

import simgraph as sg

from ._netlist import GROUND, Capacitor, CurrentSource, Inductor, Netlist, VoltageSource

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
    floating = _floating(netlist)
    if floating:
        shown = ", ".join(repr(n) for n in floating[:8])
        more = f" and {len(floating) - 8} more" if len(floating) > 8 else ""
        where = f"netlist {netlist.title!r}"
        raise FloatingNodeError(
            f"{where}: node(s) {shown}{more} have no DC path to ground (0): they connect to the "
            "rest only through current sources, or form an island, so their voltage is "
            "undefined. Connect them to ground through a resistor (e.g. 1e12 ohm) or a "
            "voltage source.", floating)


def _floating(netlist: Netlist) -> tuple[str, ...]:
    """Nodes not joined to ground by elements other than current sources and capacitors
    (no DC path; netlist order)."""
    names = (GROUND,) + tuple(netlist.nodes)
    number = {name: i for i, name in enumerate(names)}
    ends = [number[node] for e in netlist.elements
            if not isinstance(e, (CurrentSource, Capacitor))
            for node in e.nodes]
    a, b = np.asarray(ends[0::2], np.int64), np.asarray(ends[1::2], np.int64)
    graph = sp.coo_matrix((np.ones(a.size, np.int32), (a, b)), shape=(len(names),) * 2)
    _, label = csgraph.connected_components(graph, directed=False)
    return tuple(np.asarray(names, dtype=object)[label != label[0]].tolist())


def _check_voltage_loops(netlist: Netlist) -> None:
    loops = _UnionFind()
    on_loop: list[str] = []
    for e in netlist.elements:
        if isinstance(e, (VoltageSource, Inductor)) and not loops.union(*e.nodes):
            on_loop.append(e.name)
    if on_loop:
        first = on_loop[0]
        raise VoltageLoopError(
            f"netlist {netlist.title!r}: {first!r} closes a loop of voltage sources and "
            f"inductors (between nodes {netlist.element(first).nodes}), so the loop voltage is "
            "fixed twice and the source currents are undefined. Remove one source of the loop "
            "or put a resistor in series with it.", tuple(on_loop))
