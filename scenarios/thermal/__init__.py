"""Steady-state thermal networks with conduction and grey-body radiation.

Element classes (``ThermalNode``, ``Conduction``, ``Radiation``, ``FixedTemperature``,
``HeatLoad``) form a graph in which links share node objects; ``build_thermal`` /
``read_thermal`` make one from names, ``solve_thermal`` and ``sweep_thermal`` solve it and read
results by name (``result.temperature("plate")``).
"""
from .._cli_report import Report, SweepSpec
from .._errors import FormatError
from ._reader import ThermalData, read_thermal_data
from ._build import build_thermal, read_thermal
from ._model import (STEFAN_BOLTZMANN, Conduction, FixedTemperature, HeatLoad, Radiation,
                     ThermalNetwork, ThermalNode, grey_body_factor)
from ._run import EXAMPLE, run
from ._solve import ThermalResult, ThermalSweep, parameter_path, solve_thermal, sweep_thermal

__all__ = [
    "ThermalData", "read_thermal_data",
    "EXAMPLE", "STEFAN_BOLTZMANN", "Conduction", "FixedTemperature", "FormatError", "HeatLoad",
    "Radiation", "Report", "SweepSpec", "ThermalNetwork", "ThermalNode", "ThermalResult",
    "ThermalSweep", "build_thermal", "grey_body_factor", "parameter_path", "read_thermal", "run",
    "solve_thermal", "sweep_thermal",
]
