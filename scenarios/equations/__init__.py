"""The founding example: equations ``m * x = c`` sharing gradient providers.

Build (``build_equations``) or read (``read_equations``) a graph, solve it
(``solve_equations``), sweep a constant or slope in one batched solve (``sweep_equations``)
and differentiate the solution with respect to a shared slope (``sensitivities``, or
``jax.grad`` of ``solve(...)`` directly). Analytic answers: ``x = c/m``, ``dx/dm = -c/m^2``.
"""
from .._cli_report import Report, SweepSpec
from .._errors import FormatError
from ._reader import EquationsData, read_equations_data
from ._build import build_equations, read_equations
from ._model import Equation, EquationSet, GradientProvider
from ._run import EXAMPLE, run
from ._solve import (EquationsResult, EquationsSweep, parameter_path, sensitivities,
                     solve_equations, sweep_equations)

__all__ = [
    "EquationsData", "read_equations_data",
    "EXAMPLE", "Equation", "EquationSet", "EquationsResult", "EquationsSweep", "FormatError",
    "GradientProvider", "Report", "SweepSpec", "build_equations", "parameter_path",
    "read_equations", "run", "sensitivities", "solve_equations", "sweep_equations",
]
