"""Thermal networks with conduction and grey-body radiation: steady states, and transients
through heat capacities (``simulate_thermal``).

Element classes (``ThermalNode``, ``Conduction``, ``Radiation``, ``FixedTemperature``,
``HeatLoad``) form a graph in which links share node objects; ``build_thermal`` /
``read_thermal`` make one from names, ``solve_thermal`` and ``sweep_thermal`` solve it and read
results by name (``result.temperature("plate")``).
"""
from .._cli_report import Report, SweepSpec
from .._errors import FormatError
from .._islands import IslandError
from ._reader import ThermalData, read_thermal_data
from ._build import build_thermal, read_thermal
from ._model import (STEFAN_BOLTZMANN, Conduction, FixedTemperature, HeatCapacity, HeatLoad,
                     Radiation, ThermalNetwork, ThermalNode, grey_body_factor)
from ._run import EXAMPLE, run
from ._solve import ThermalResult, ThermalSweep, parameter_path, solve_thermal, sweep_thermal
from ._transient import ThermalTransient, simulate_thermal

__all__ = [
    "EXAMPLE", "STEFAN_BOLTZMANN", "Conduction", "FixedTemperature", "FormatError",
    "HeatCapacity", "HeatLoad", "IslandError", "Radiation", "Report", "SweepSpec", "ThermalData",
    "ThermalNetwork", "ThermalNode", "ThermalResult", "ThermalSweep", "ThermalTransient",
    "build_thermal", "grey_body_factor", "parameter_path", "read_thermal", "read_thermal_data",
    "run", "simulate_thermal",
    "solve_thermal", "sweep_thermal",
]
