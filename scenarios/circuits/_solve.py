"""Solve a circuit's DC operating point, or a ``.dc`` sweep as one batched solve.

The default method is the library's polyalgorithm (``solvers.Default``: Newton with line search
and the diodes' ``pnjlim`` step limit, then trust region, then homotopy) at circuit tolerances:
``max|F| <= 1e-14`` (A in KCL rows, V in source rows) or a Newton step below 1e-12 relative,
which puts node voltages within ~1e-12 V of the exact root, as ngspice's tight tolerances do.
"""
from __future__ import annotations

import os
from typing import Any, Union

import numpy as np

import solvers

from ._build import build_circuit
from ._elements import Circuit
from ._netlist import DCSweep, Netlist
from ._results import CircuitResult, CircuitSweep, diode_currents
from ._spice_reader import read_netlist

__all__ = ["solve_circuit", "sweep_circuit", "default_solver", "source_path", "ATOL", "RTOL"]

ATOL = 1e-14
RTOL = 1e-12
CircuitInput = Union[Circuit, Netlist, str, os.PathLike]


def default_solver(system: solvers.System | None = None, *,
                   batch_size: int | None = None) -> solvers.Default:
    """``solvers.Default`` at circuit tolerances (:data:`ATOL`, :data:`RTOL`), with the linear
    solver ``solvers.default_method`` picks for ``system`` and ``batch_size`` (dense LU
    without a system)."""
    if system is None:
        return solvers.Default(atol=ATOL, rtol=RTOL, linear_solver=solvers.DenseLU())
    return solvers.default_method(system, batch_size=batch_size, atol=ATOL, rtol=RTOL)


def _as_circuit(circuit: CircuitInput) -> Circuit:
    if isinstance(circuit, Circuit):
        return circuit
    return build_circuit(circuit if isinstance(circuit, Netlist) else read_netlist(circuit))


def solve_circuit(circuit: CircuitInput, solver: Any = None) -> CircuitResult:
    """DC operating point from 0 V. ``circuit``: a :class:`Circuit`, a :class:`Netlist`, a
    netlist file or its text. ``solver`` defaults to :func:`default_solver`. A failed solve
    is returned (``converged`` False, ``message()`` says why), not raised."""
    circuit = _as_circuit(circuit)
    system = solvers.System.build(circuit)
    solution = solvers.solve(system, default_solver(system) if solver is None else solver)
    return CircuitResult(solution.system, solution, circuit)


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
    """Solve for every value of ``source`` in ONE batched solve (``solvers.solve_batch``;
    ``chunk`` points at a time if given, with a progress bar if ``progress``), each from 0 V.
    Without ``source``/``values`` the netlist's ``.dc`` analysis is used."""
    if source is None or values is None:
        if isinstance(circuit, Circuit):
            raise ValueError("a Circuit graph has no .dc analysis; give the source name and "
                             "the values to sweep (or pass the Netlist)")
        netlist = circuit if isinstance(circuit, Netlist) else read_netlist(circuit)
        dc = next((a for a in netlist.analyses if isinstance(a, DCSweep)), None)
        if dc is None:
            raise ValueError(f"netlist {netlist.title!r} has no .dc analysis; give the source "
                             "name and the values to sweep")
        source, values, circuit = dc.source, dc.points(), netlist
    circuit = _as_circuit(circuit)
    path, values = source_path(circuit, source), np.asarray(values, dtype=float)
    if values.ndim != 1 or len(values) == 0:
        raise ValueError(f"sweep values of {source} must be a non-empty 1-D array, "
                         f"got shape {values.shape}")
    system = solvers.System.build(circuit)
    method = default_solver(system, batch_size=len(values)) if solver is None else solver
    solution = solvers.solve_batch(system, {path: values}, method, chunk_size=chunk,
                                   progress=progress)
    g, n = solution.system, len(values)

    def stack(xs):
        return np.stack([np.asarray(v) for v in xs], axis=-1) if xs else np.zeros((n, 0))

    arrays = {"node_voltages": stack([g.nodes[k].v for k in circuit.nodes]),
              "source_currents": stack([g.vsources[k].i for k in circuit.vsources]),
              "diode_currents": diode_currents(g, list(circuit.diodes)).reshape(n, -1),
              "converged": np.asarray(solution.converged),
              "iterations": np.asarray(solution.iterations),
              "residual_norm": np.asarray(solution.residual_norm),
              "result": np.asarray(solution.result)}
    columns = {"node_voltages": list(circuit.nodes), "source_currents": list(circuit.vsources),
               "diode_currents": list(circuit.diodes)}
    return CircuitSweep(source, values, columns, arrays)
