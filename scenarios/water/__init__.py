"""Water distribution networks: the EPANET ``.inp`` reader and its SI data (snapshot at t = 0)."""
from .._errors import FormatError
from ._inp import read_inp
from ._inp_types import (Control, DemandCategory, Junction, Pipe, Pump, Reservoir, Tank,
                         WaterNetwork)
from ._inp_units import EPANET_FLOW_PER_CFS, FLOW_UNITS, UnitSystem, power_curve_fit

__all__ = [
    "Control", "DemandCategory", "EPANET_FLOW_PER_CFS", "FLOW_UNITS", "FormatError", "Junction",
    "Pipe", "Pump", "Reservoir", "Tank", "UnitSystem", "WaterNetwork", "power_curve_fit",
    "read_inp",
]
