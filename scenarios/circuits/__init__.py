"""Nonlinear DC circuits: the SPICE netlist subset (R, D, V, I, .model D, .op, .dc) as data."""
from .._errors import FormatError
from ._netlist import (GROUND, CurrentSource, DCSweep, Diode, DiodeModel, Netlist,
                       OperatingPoint, Resistor, VoltageSource)
from ._spice_numbers import format_spice_number, parse_spice_number
from ._spice_reader import read_netlist

__all__ = [
    "GROUND", "CurrentSource", "DCSweep", "Diode", "DiodeModel", "FormatError", "Netlist",
    "OperatingPoint", "Resistor", "VoltageSource", "format_spice_number", "parse_spice_number",
    "read_netlist",
]
