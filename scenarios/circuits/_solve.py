"""Solve a circuit's DC operating point, or a ``.dc`` sweep as one batched solve.

The default method is the library's polyalgorithm (``solvers.Default``: Newton with line search
and the diodes' ``pnjlim`` step limit, then trust region, then homotopy) at circuit tolerances:
``max|F| <= 1e-14`` (A in KCL rows, V in source rows) or a Newton step below 1e-12 relative,
which puts node voltages within ~1e-12 V of the exact root, as ngspice's tight tolerances do.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Union

import jax.numpy as jnp
import numpy as np

from .._cli_report import solve_status
from .._network_solve import solve_graph, solve_graph_batch
from .._sweep_table import SweepTable, chunked_sweep
from ._build import build_circuit
from ._elements import Circuit, Diode
from ._netlist import GROUND, DCSweep, Netlist
from ._spice_reader import read_netlist

try:  # TODO(lead): drop the fallback once solvers/__init__.py exports Default
    from solvers import Default
except ImportError:
    from solvers._polyalgorithm import Default

__all__ = ["CircuitResult", "CircuitSweep", "solve_circuit", "sweep_circuit", "default_solver",
           "source_path", "ATOL", "RTOL"]

ATOL = 1e-14
RTOL = 1e-12
CircuitInput = Union[Circuit, Netlist, str, os.PathLike]


def default_solver():
    """``solvers.Default`` at circuit tolerances (:data:`ATOL`, :data:`RTOL`)."""
    return Default(atol=ATOL, rtol=RTOL)


def _as_circuit(circuit: CircuitInput) -> Circuit:
    if isinstance(circuit, Circuit):
        return circuit
    return build_circuit(circuit if isinstance(circuit, Netlist) else read_netlist(circuit))


def _lookup(table: dict, name: str, what: str):
    """``table[name]``, falling back to a case-insensitive match (SPICE names ignore case)."""
    if name in table:
        return table[name]
    for key, value in table.items():
        if key.lower() == str(name).lower():
            return value
    known = ", ".join(list(table)[:12]) + (" ..." if len(table) > 12 else "")
    raise KeyError(f"no {what} named {name!r} in this circuit; known: {known or 'none'}")


@dataclasses.dataclass(frozen=True)
class CircuitResult:
    """A solved circuit: values by netlist name; ``graph`` is the solved :class:`Circuit`.

    ``solution`` has the flat solve's ``result`` code, ``converged``, ``iterations`` and
    ``residual_norm``; ``message()`` explains a failure and what to try.
    """

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
        return {n: self.diode_current(n) for n in self.names.diodes}

    @property
    def converged(self) -> bool:
        return bool(np.asarray(self.solution.converged))

    def message(self) -> str:
        return self.solution.message()

    def to_json(self) -> dict:
        """``{"node_voltages", "source_currents", "converged", "iterations", "residual_norm"}``."""
        conv, iters, norm = solve_status(self.solution)
        return {"node_voltages": self.node_voltages(), "source_currents": self.source_currents(),
                "converged": conv, "iterations": iters, "residual_norm": norm}


def solve_circuit(circuit: CircuitInput, solver: Any = None) -> CircuitResult:
    """DC operating point from 0 V. ``circuit``: a :class:`Circuit`, a :class:`Netlist`, a
    netlist file or its text. ``solver`` defaults to :func:`default_solver`."""
    circuit = _as_circuit(circuit)
    solved = solve_graph(circuit, solver or default_solver())
    return CircuitResult(solved.graph, solved.solution, circuit)


class CircuitSweep(SweepTable):
    """A DC sweep of one source: ``voltage("n3")`` etc. are arrays over ``values``;
    ``to_json()`` has one ``{"node_voltages", "source_currents", ...}`` object per point
    under ``"sweep"``."""

    def voltage(self, node: str) -> np.ndarray:
        if node == GROUND:
            return np.zeros(len(self.values))
        return self.column("node_voltages", node)

    def source_current(self, name: str) -> np.ndarray:
        return self.column("source_currents", name)

    def diode_current(self, name: str) -> np.ndarray:
        return self.column("diode_currents", name)


def source_path(circuit: Circuit, source: str) -> str:
    """Key path of the value of source ``source`` (``.vsources['V1'].value``)."""
    for field in ("vsources", "isources"):
        for key in getattr(circuit, field):
            if key.lower() == source.lower():
                return f".{field}[{key!r}].value"
    raise KeyError(f"no voltage or current source named {source!r} to sweep; sources: "
                   f"{', '.join([*circuit.vsources, *circuit.isources]) or 'none'}")


def sweep_circuit(circuit: CircuitInput, source: str | None = None, values=None,
                  solver: Any = None, chunk: int | None = None,
                  progress: bool = False) -> CircuitSweep:
    """Solve for every value of ``source`` in ONE batched solve (``chunk`` points per batch
    if given). Without ``source``/``values`` the netlist's ``.dc`` analysis is used."""
    if source is None or values is None:
        netlist = circuit if isinstance(circuit, Netlist) else read_netlist(circuit)
        dc = next((a for a in netlist.analyses if isinstance(a, DCSweep)), None)
        if dc is None:
            raise ValueError(f"netlist {netlist.title!r} has no .dc analysis; give the source "
                             "name and the values to sweep")
        source, values, circuit = dc.source, dc.points(), netlist
    circuit = _as_circuit(circuit)
    path, values = source_path(circuit, source), np.asarray(values, dtype=float)
    method = solver or default_solver()

    def solve_chunk(part):
        sol = solve_graph_batch(circuit, method, {path: part})
        g, flat = sol.graph, sol.solution
        stack = lambda xs, n: jnp.stack(xs, axis=-1) if xs else jnp.zeros((n, 0))  # noqa: E731
        return {"node_voltages": stack([g.nodes[k].v for k in circuit.nodes], len(part)),
                "source_currents": stack([g.vsources[k].i for k in circuit.vsources], len(part)),
                "diode_currents": stack([g.diodes[k].current() for k in circuit.diodes], len(part)),
                "converged": flat.converged, "iterations": flat.iterations,
                "residual_norm": flat.residual_norm, "result": flat.result}

    arrays = chunked_sweep(values, solve_chunk, chunk=chunk or max(len(values), 1),
                           progress=progress)
    columns = {"node_voltages": list(circuit.nodes), "source_currents": list(circuit.vsources),
               "diode_currents": list(circuit.diodes)}
    return CircuitSweep(source, values, columns, arrays)
