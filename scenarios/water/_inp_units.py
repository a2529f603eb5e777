"""EPANET units: exact SI factors for every flow-unit family, EPANET's rounded ones, pump-curve fit."""
from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["FLOW_UNITS", "EPANET_FLOW_PER_CFS", "UnitSystem", "unit_system", "power_curve_fit",
           "FT", "CFS"]

FT = 0.3048                      # m, exact
CFS = FT**3                      # m3/s per ft3/s, exact (0.028316846592)
_US_GAL = 3.785411784e-3         # m3, exact
_IMP_GAL = 4.54609e-3            # m3, exact
_ACRE_FT = 43560.0 * CFS         # m3
_DAY = 86400.0
_HP = 745.69987158227022         # W per mechanical horsepower (550 ft*lbf/s)

#: m3/s per one unit of each EPANET flow unit (exact definitions, as WNTR converts).
FLOW_UNITS = {
    "CFS": CFS, "GPM": _US_GAL / 60.0, "MGD": 1e6 * _US_GAL / _DAY, "IMGD": 1e6 * _IMP_GAL / _DAY,
    "AFD": _ACRE_FT / _DAY, "LPS": 1e-3, "LPM": 1e-3 / 60.0, "MLD": 1e3 / _DAY,
    "CMH": 1.0 / 3600.0, "CMD": 1.0 / _DAY, "CMS": 1.0,
}
#: EPANET's own rounded factors (file flow units per cfs) that scale its internal equations;
#: ``epanet_flow_ratio`` in the model folds them in (see the water README, "*_effective").
EPANET_FLOW_PER_CFS = {
    "CFS": 1.0, "GPM": 448.831, "MGD": 0.64632, "IMGD": 0.5382, "AFD": 1.9837, "LPS": 28.317,
    "LPM": 1699.0, "MLD": 2.4466, "CMH": 101.94, "CMD": 2446.6, "CMS": 0.028317,
}
_US_FAMILY = {"CFS", "GPM", "MGD", "IMGD", "AFD"}


@dataclass(frozen=True)
class UnitSystem:
    """Factors from one file's units to SI: multiply a file value by the factor."""

    flow_units: str
    flow: float          # m3/s per file flow unit
    length: float        # m per ft or m (elevations, heads, lengths, tank levels/diameters)
    diameter: float      # m per in or mm (pipe diameters)
    roughness_dw: float  # m per millifoot or mm (Darcy-Weisbach roughness)
    power: float         # W per hp or kW
    volume: float        # m3 per ft3 or m3

    @property
    def is_us(self) -> bool:
        return self.flow_units in _US_FAMILY

    @property
    def epanet_flow_ratio(self) -> float:
        """EPANET's internal cfs over the physical cfs for this file's flows (1 + rounding error)."""
        return CFS / (FLOW_UNITS[self.flow_units] * EPANET_FLOW_PER_CFS[self.flow_units])


def unit_system(flow_units: str) -> UnitSystem:
    """The unit system EPANET uses with ``flow_units`` (US customary for CFS/GPM/MGD/IMGD/AFD)."""
    flow = FLOW_UNITS[flow_units]
    if flow_units in _US_FAMILY:
        return UnitSystem(flow_units, flow, FT, 0.0254, 1e-3 * FT, _HP, CFS)
    return UnitSystem(flow_units, flow, 1.0, 1e-3, 1e-3, 1e3, 1.0)


def power_curve_fit(points: tuple[tuple[float, float], ...]) -> tuple[float, float, float] | None:
    """EPANET's ``h = A - B q**C`` fit for a 1-point or 3-point (first at q = 0) head curve.

    1 point (q1, h1) -> the curve through (0, 1.33334 h1), (q1, h1), (2 q1, 0); 3 points
    (0, h0), (q1, h1), (q2, h2) -> A = h0, C = ln((h0-h2)/(h0-h1)) / ln(q2/q1), B = (h0-h1)/q1**C.
    Returns None for other curves (EPANET's multi-point "custom" curves). Raises ValueError when
    EPANET would refuse the fit (its error 227).
    """
    if len(points) == 1:
        (q1, h1), = points
        h0, q2, h2 = 1.33334 * h1, 2.0 * q1, 0.0
    elif len(points) == 3 and points[0][0] == 0.0:
        (_, h0), (q1, h1), (q2, h2) = points
    else:
        return None
    tiny = 1e-6
    if h0 < tiny or h0 - h1 < tiny or h1 - h2 < tiny or q1 < tiny or q2 - q1 < tiny:
        raise ValueError("heads must fall and flows rise along the curve")
    c = math.log((h0 - h2) / (h0 - h1)) / math.log(q2 / q1)
    if not 0.0 < c <= 20.0:
        raise ValueError(f"the fitted exponent C = {c:g} is outside (0, 20]")
    try:
        return h0, (h0 - h1) / q1**c, c
    except OverflowError:
        raise ValueError(f"its flow {q1:g} m3/s to the power C = {c:g} overflows") from None
