"""Results of a circuit solve, read by netlist name, and their JSON documents.

``CircuitResult`` wraps one solved graph (``voltage("n3")``, ``source_current("V1")``,
``diode_current("D2")``); ``CircuitSweep`` holds the arrays of a DC sweep. The JSON follows
the validation data: ``{"node_voltages": {node: V}, "source_currents": {vsource: A}, ...}``.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from solvers import RESULTS

from .._cli_report import solve_status
from .._sweep_table import SweepTable
from .._tables import PointTable
from ._elements import Circuit, Diode, diode_current
from ._netlist import GROUND

__all__ = ["CircuitResult", "CircuitSweep", "diode_currents", "LABELS"]

#: Table columns by ngspice's names: ``V(node)`` in V, ``I(source)`` and ``I(diode)`` in A.
LABELS = {"node_voltages": "V({})", "source_currents": "I({})", "diode_currents": "I({})"}


def _lookup(table: dict, name: str, what: str):
    """``table[name]``, falling back to a case-insensitive match (SPICE names ignore case)."""
    if name in table:
        return table[name]
    for key, value in table.items():
        if key.lower() == str(name).lower():
            return value
    known = ", ".join(list(table)[:12]) + (" ..." if len(table) > 12 else "")
    raise KeyError(f"no {what} named {name!r} in this circuit; known: {known or 'none'}")


def diode_currents(graph: Circuit, names: list) -> np.ndarray:
    """Currents of the named diodes of a solved (possibly batched) graph, shape (..., len(names)),
    evaluated in one vectorised call of the diode law."""
    if not names:
        return np.zeros((0,))
    diodes = [graph.diodes[k] for k in names]
    col = lambda f: np.stack([np.asarray(f(d), dtype=float) for d in diodes], axis=-1)  # noqa: E731
    v = col(lambda d: d.a.v) - col(lambda d: d.b.v)
    vte = col(lambda d: d.model.n) * np.asarray(graph.physics.vt)[..., None]
    i_s = col(lambda d: d.model.i_s) * col(lambda d: d.area)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        return np.asarray(diode_current(v, i_s, vte, np.asarray(graph.physics.gmin)[..., None],
                                        xp=np, bv=col(lambda d: getattr(d, "bv", 0.0))))


@dataclasses.dataclass(frozen=True)
class CircuitResult(PointTable):
    """A solved circuit: values by netlist name; ``graph`` is the solved :class:`Circuit`.

    ``solution`` has the flat solve's ``result`` code, ``converged``, ``iterations`` and
    ``residual_norm``; ``message()`` explains a failure and what to try.
    ``to_frame()`` is one row: ``V(node)``, ``I(vsource)``, ``I(diode)`` and the solve status.
    """

    LABELS = LABELS
    graph: Circuit
    solution: Any
    names: Circuit  # the circuit as built: its dicts keep the netlist's order of names

    def voltage(self, node: str) -> float:
        """Voltage of ``node`` against ground (V); ``"0"`` is ground."""
        if node == GROUND:
            return 0.0
        return float(_lookup(self.graph.nodes, node, "node").v)

    def source_current(self, name: str) -> float:
        """Current of a source (A): a V source's ``i(name)`` (into +, through, out of -;
        negative when it delivers power), or an I source's set value."""
        try:
            return float(_lookup(self.graph.vsources, name, "voltage source").i)
        except KeyError:
            if not any(k.lower() == name.lower() for k in self.graph.isources):
                raise KeyError(f"no voltage or current source named {name!r} in this circuit; "
                               f"sources: {', '.join([*self.graph.vsources, *self.graph.isources])}"
                               ) from None
            return float(_lookup(self.graph.isources, name, "current source").value)

    def diode_current(self, name: str) -> float:
        """Anode-to-cathode current of diode ``name`` (A), GMIN included (ngspice's ``@d[id]``)."""
        diode: Diode = _lookup(self.graph.diodes, name, "diode")
        return float(diode.current())

    def node_voltages(self) -> dict:
        return {n: self.voltage(n) for n in self.names.nodes}

    def source_currents(self) -> dict:
        """Currents of the voltage sources (the unknowns ngspice reports as ``i(vname)``)."""
        return {n: self.source_current(n) for n in self.names.vsources}

    def diode_currents(self) -> dict:
        names = list(self.names.diodes)
        return dict(zip(names, diode_currents(self.graph, names).tolist()))

    @property
    def converged(self) -> bool:
        return bool(np.asarray(self.solution.converged))

    def message(self) -> str:
        return self.solution.message()

    @property
    def result(self) -> RESULTS:
        """Why the solve stopped (``RESULTS.successful`` when converged)."""
        return RESULTS(int(np.asarray(self.solution.result)))

    def to_json(self) -> dict:
        """``{"node_voltages", "source_currents", "converged", "iterations", "residual_norm",
        "result"}`` (``result``: the name of the solve's result code)."""
        conv, iters, norm = solve_status(self.solution)
        return {"node_voltages": self.node_voltages(), "source_currents": self.source_currents(),
                "converged": conv, "iterations": iters, "residual_norm": norm,
                "result": self.result.name}

    def table_point(self) -> dict:
        return {**self.to_json(), "diode_currents": self.diode_currents()}


class CircuitSweep(SweepTable):
    """A DC sweep of one source: ``voltage("n3")`` etc. are arrays over ``values``;
    ``to_json()`` has one ``{"node_voltages", "source_currents", ...}`` object per point
    under ``"sweep"``; ``to_frame()`` one row per point (``V(node)``, ``I(source)``, ...)."""

    LABELS = LABELS

    def voltage(self, node: str) -> np.ndarray:
        if node == GROUND:
            return np.zeros(len(self.values))
        return self.column("node_voltages", node)

    def source_current(self, name: str) -> np.ndarray:
        return self.column("source_currents", name)

    def diode_current(self, name: str) -> np.ndarray:
        return self.column("diode_currents", name)
