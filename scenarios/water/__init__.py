"""Water distribution networks: the EPANET ``.inp`` reader and its SI data (snapshot at t = 0),
the element graph of that snapshot (``build_water``), its solution by EPANET id and sweeps, and
EPANET's extended-period run (``simulate_eps``: tanks, patterns, simple controls).

The reader's data classes keep the short names (``Junction``, ``Pipe``, ...); the element
classes of the graph live in :mod:`scenarios.water.elements` (``elements.Junction``, ...).
"""
from .._errors import FormatError
from .._islands import IslandError
from . import _elements as elements
from ._constants import WaterConstants
from ._elements import Hydraulics, WaterGraph
from ._eps import EPSResult, simulate_eps
from ._inp import read_inp
from ._inp_types import (Control, DemandCategory, Junction, Pipe, Pump, Reservoir, Tank,
                         WaterNetwork)
from ._inp_units import EPANET_FLOW_PER_CFS, FLOW_UNITS, UnitSystem, power_curve_fit
from ._model import (DEFAULT_METHOD, SWEEP_PARAMETERS, WaterModel, WaterResult, WaterSweep,
                     build_water)
from ._run import EXAMPLE, run

__all__ = [
    "Control", "DEFAULT_METHOD", "DemandCategory", "EPANET_FLOW_PER_CFS", "EPSResult", "EXAMPLE",
    "FLOW_UNITS", "FormatError", "Hydraulics", "IslandError", "Junction", "Pipe", "Pump",
    "Reservoir", "SWEEP_PARAMETERS", "Tank", "UnitSystem", "WaterConstants", "WaterGraph",
    "WaterModel", "WaterNetwork", "WaterResult", "WaterSweep", "build_water", "elements",
    "power_curve_fit", "read_inp", "run", "simulate_eps",
]
