"""AC power flow: MATPOWER version-2 case files and the validation JSON as PowerCase data."""
from .._errors import FormatError
from ._case import BUS_TYPES, Branch, Bus, Generator, PowerCase
from ._case_json import read_case_json
from ._matpower import read_matpower

__all__ = ["BUS_TYPES", "Branch", "Bus", "FormatError", "Generator", "PowerCase",
           "read_case_json", "read_matpower"]
