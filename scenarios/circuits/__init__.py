"""Circuits: the SPICE netlist subset (R, C, L, D, V, I with PULSE/SIN/EXP/PWL, .model D, .op,
.dc, .tran, .ic) and its physics.

Read a deck (``read_netlist``), build its graph (``build_circuit``: one shared ``Node`` object
per node name), solve the operating point from 0 V (``solve_circuit``) or a ``.dc`` sweep in
one batched solve (``sweep_circuit``), a ``.tran`` transient (``simulate_circuit``), and read
results by name (``result.voltage("n3")``).
The element classes are in :mod:`scenarios.circuits.elements` (their names match the netlist
cards'). Generators of scale-test circuits: ``grid_netlist``, ``diode_ladder_netlist``.
"""
from .._errors import FormatError
from . import _elements as elements
from ._build import build_circuit, thermal_voltage
from ._elements import Circuit
from ._netlist import (GROUND, Capacitor, CurrentSource, DCSweep, Diode, DiodeModel,
                       Inductor, Netlist, OperatingPoint, Resistor, Transient, VoltageSource,
                       Waveform)
from ._generate import (diode_ladder_netlist, diode_ladder_spice, grid_netlist,
                        grid_spice)
from ._results import CircuitResult, CircuitSweep
from ._run import EXAMPLE, run
from ._solve import ATOL, RTOL, default_solver, solve_circuit, source_path, sweep_circuit
from ._spice_numbers import format_spice_number, parse_spice_number
from ._spice_reader import read_netlist
from ._topology import CircuitError, FloatingNodeError, VoltageLoopError
from ._transient import CircuitTransient, integrator_for, simulate_circuit

__all__ = [
    "ATOL", "Capacitor", "Circuit", "CircuitError", "CircuitResult", "CircuitSweep",
    "CircuitTransient", "CurrentSource", "DCSweep", "Diode", "DiodeModel", "EXAMPLE",
    "FloatingNodeError", "FormatError", "GROUND", "Inductor", "Netlist", "OperatingPoint",
    "RTOL", "Resistor", "Transient", "VoltageLoopError", "VoltageSource", "Waveform",
    "build_circuit", "default_solver", "diode_ladder_netlist", "diode_ladder_spice",
    "elements", "format_spice_number", "grid_netlist", "grid_spice", "integrator_for",
    "parse_spice_number", "read_netlist", "run", "simulate_circuit", "solve_circuit",
    "source_path", "sweep_circuit", "thermal_voltage",
]
