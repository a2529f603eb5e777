"""An AC power-flow case as frozen data, per unit on ``base_mva`` and angles in degrees.

Field names follow the validation JSON (``acpf/README.md``): only in-service branches and
generators, bus types ``"PQ"``, ``"PV"``, ``"slack"``, ``Pg`` None for the slack, ``Qg`` None
for PV and slack buses, ``Vset`` for PV and slack, ``tap`` 1.0 for lines.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["BUS_TYPES", "Bus", "Branch", "Generator", "PowerCase", "impedance_problem"]

BUS_TYPES = ("PQ", "PV", "slack")


@dataclass(frozen=True)
class Bus:
    """A bus; ``index`` is its 0-based row (used by branches), ``id`` the case's bus number.
    ``Vm0``, ``Va0_deg``: the case file's own voltage (MATPOWER's default start; None when the
    source has none)."""

    index: int
    id: int
    type: str
    Pd: float
    Qd: float
    Pg: float | None
    Qg: float | None
    Vset: float | None
    Va_set_deg: float | None
    Gs: float
    Bs: float
    base_kv: float = 0.0
    n_generators: int = 0
    Vm0: float | None = None
    Va0_deg: float | None = None


@dataclass(frozen=True)
class Branch:
    """A line or transformer (MATPOWER pi model, ideal transformer ``tap * exp(j shift)`` at FROM);
    ``rate_a``: long-term MVA rating per unit (0: unlimited, as MATPOWER's RATE_A)."""

    index: int
    from_bus: int
    to_bus: int
    from_index: int
    to_index: int
    r: float
    x: float
    b: float
    tap: float = 1.0
    shift_deg: float = 0.0
    is_transformer: bool = False
    rate_a: float = 0.0


@dataclass(frozen=True)
class Generator:
    """An in-service generator (information; the bus fields carry what the equations need).
    ``Qmax``, ``Qmin``: its reactive limits (p.u.; infinite where the source gives none),
    which the power flow does not enforce (see ``PowerResult.q_limit_violations``)."""

    bus: int
    bus_index: int
    Pg: float
    Qg: float
    Vg: float
    Qmax: float = math.inf
    Qmin: float = -math.inf


@dataclass(frozen=True)
class PowerCase:
    """Buses, in-service branches and generators; ``notes`` says what the reader changed or dropped."""

    name: str
    base_mva: float
    buses: tuple[Bus, ...]
    branches: tuple[Branch, ...]
    generators: tuple[Generator, ...] = ()
    notes: tuple[str, ...] = ()

    def bus(self, bus_id: int) -> Bus:
        """The bus with case bus number ``bus_id``."""
        for bus in self.buses:
            if bus.id == bus_id:
                return bus
        raise KeyError(f"case {self.name!r} has no bus {bus_id}")

    def bus_array(self, field: str) -> np.ndarray:
        """One bus field for all buses, e.g. ``bus_array("Pd")`` (numbers: float64, None -> NaN)."""
        return _column(self.buses, field)

    def branch_array(self, field: str) -> np.ndarray:
        """One branch field for all branches, e.g. ``branch_array("from_index")`` (ints stay ints)."""
        return _column(self.branches, field)


def impedance_problem(r: float, x: float) -> tuple[str, str] | None:
    """``(problem, hint)`` when a branch's series admittance ``1 / (r + jx)`` cannot be
    computed: infinite (r = x = 0, or r^2 + x^2 underflows) or zero (r^2 + x^2 overflows);
    None when it can."""
    with np.errstate(over="ignore", under="ignore"):
        z2 = np.float64(r) * r + np.float64(x) * x
    if z2 > 0.0 and np.isfinite(z2):
        return None
    where = f"the impedance r + jx = {r:g} + j{x:g}"
    if not np.isfinite(z2) and np.isfinite(r) and np.isfinite(x):
        return (f"{where} is too large to compute with (|z| above about 1e154)",
                "give r and x in per unit on baseMVA, or take the branch out of service")
    if np.isnan(z2):
        return f"{where} is not a number", "give finite r and x in per unit"
    what = ("is zero" if r == 0.0 and x == 0.0
            else "is too small to compute with (|z| below about 1e-162)")
    return (f"{where} {what}, so the branch's admittance is infinite",
            "merge the two buses, or give the branch a small reactance (e.g. x = 1e-4 p.u.), "
            "or take it out of service")


def tap_problem(tap: float) -> tuple[str, str] | None:
    """``(problem, hint)`` when a branch's (finite) off-nominal turns ratio is negative; None
    when it is usable (0 means 1.0 in MATPOWER, handled by the readers). A negative ratio
    is a sign slip far more often than a phase reversal, and no start of Newton's converges
    from it."""
    if tap >= 0.0:
        return None
    return (f"the tap ratio {tap:g} is negative",
            f"give the turns ratio as a positive number ({-tap:g}); a phase reversal is the "
            "ratio with 180 degrees added to the shift angle")


def _column(items: tuple, field: str) -> np.ndarray:
    values = [getattr(item, field) for item in items]
    if any(v is None or isinstance(v, float) for v in values):
        return np.asarray([np.nan if v is None else v for v in values], dtype=np.float64)
    return np.asarray(values)
