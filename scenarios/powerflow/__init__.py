"""AC power flow: MATPOWER version-2 case files and the validation JSON as PowerCase data, the
element graph of a case (``build_powerflow``), its solution by bus number and sweeps.

The reader's data classes keep the short names (``Bus``, ``Branch``, ``Generator``); the element
classes of the graph live in :mod:`scenarios.powerflow.elements`.
"""
from .._errors import FormatError
from .._islands import IslandError
from . import _elements as elements
from ._case import BUS_TYPES, Branch, Bus, Generator, PowerCase
from ._case_json import read_case_json
from ._elements import PowerGraph
from ._matpower import read_matpower
from ._model import (DEFAULT_METHOD, SWEEP_PARAMETERS, BusResult, PowerModel, PowerResult,
                     PowerSweep, build_powerflow)
from ._run import EXAMPLE, read_case, run
from ._start import START_NAMES, STARTS, start_voltages

__all__ = ["BUS_TYPES", "Branch", "Bus", "BusResult", "DEFAULT_METHOD", "EXAMPLE",
           "FormatError", "Generator", "IslandError", "PowerCase", "PowerGraph", "PowerModel",
           "PowerResult", "PowerSweep", "START_NAMES", "STARTS", "SWEEP_PARAMETERS",
           "build_powerflow", "elements", "read_case", "read_case_json", "read_matpower", "run",
           "start_voltages"]
