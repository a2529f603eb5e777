"""Nonlinear plane truss statics with exact large-displacement kinematics.

Element classes (``TrussNode``, ``Bar``, ``Support``, ``Load``) form a graph in which bars
share node objects; ``build_truss`` / ``read_truss`` make one from names, ``solve_truss`` and
``sweep_truss`` solve it and read results by name (``result.displacement("apex")``). The
closed-form two-bar (von Mises) truss is in ``von_mises_load`` / ``von_mises_limit``.
"""
from .._cli_report import Report, SweepSpec
from .._errors import FormatError
from ._build import build_truss, read_truss
from ._closed_form import von_mises_limit, von_mises_load
from ._reader import TrussData, read_truss_data
from ._model import Bar, Load, Support, Truss, TrussNode, axial_force
from ._run import EXAMPLE, run
from ._solve import TrussResult, TrussSweep, parameter_path, solve_truss, sweep_truss
from ._stability import MechanismError
from ._tolerance import default_solver, force_tolerance

__all__ = [
    "EXAMPLE", "Bar", "FormatError", "Load", "Report", "Support", "SweepSpec", "Truss",
    "TrussData", "TrussNode", "TrussResult", "TrussSweep", "axial_force", "build_truss",
    "MechanismError", "default_solver", "force_tolerance",
    "parameter_path", "read_truss", "read_truss_data", "run", "solve_truss", "sweep_truss",
    "von_mises_limit", "von_mises_load",
]
