"""A water network as read from an EPANET ``.inp`` file: frozen data in SI (m, m3/s, W, s).

It describes the snapshot at t = 0 as EPANET sets it up before solving: demands and reservoir
heads with their pattern multipliers at t = 0, link statuses after ``[STATUS]``, pump speed
patterns and the simple controls that fire at t = 0.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from ._inp_units import UnitSystem

__all__ = ["DemandCategory", "Junction", "Reservoir", "Tank", "Pipe", "Pump", "Control",
           "WaterNetwork", "NotModelled"]


class NotModelled(ValueError):
    """What a model refuses in a network it was given (a D-W file, [RULES] in an extended-period
    run): ``where`` is the key of ``WaterNetwork.source_lines`` that holds the line that says
    it, so the command line can name file:line."""

    def __init__(self, message: str, where: str) -> None:
        super().__init__(message)
        self.where = where


@dataclass(frozen=True)
class DemandCategory:
    """One demand of a junction: ``base`` m3/s times pattern ``pattern`` (None: constant)."""

    base: float
    pattern: str | None
    multiplier_t0: float


@dataclass(frozen=True)
class Junction:
    """Junction node; ``demand`` (m3/s) = sum(base * multiplier_t0) * demand multiplier."""

    name: str
    elevation: float
    demand: float
    demands: tuple[DemandCategory, ...] = ()


@dataclass(frozen=True)
class Reservoir:
    """Fixed-head node; ``head`` is ``base_head`` times its head pattern at t = 0."""

    name: str
    head: float
    base_head: float
    pattern: str | None = None


@dataclass(frozen=True)
class Tank:
    """Storage tank; at t = 0 a fixed head ``elevation + init_level`` (levels in m above elevation).
    ``can_overflow`` (EPANET 2.2's overflow flag): when full it keeps taking inflow, spilling
    it, at its maximum level."""

    name: str
    elevation: float
    init_level: float
    min_level: float
    max_level: float
    diameter: float
    min_volume: float = 0.0
    volume_curve: str | None = None
    can_overflow: bool = False

    @property
    def head(self) -> float:
        return self.elevation + self.init_level


@dataclass(frozen=True)
class Pipe:
    """Pipe from ``start`` to ``end``; ``roughness`` is C (H-W), n (C-M) or metres (D-W).

    ``initial_status`` is after ``[PIPES]`` and ``[STATUS]``; ``status_t0`` also after the
    controls that fire at t = 0. Statuses are ``"OPEN"`` or ``"CLOSED"``; a check valve pipe
    has ``check_valve=True`` and status ``"OPEN"``.
    """

    name: str
    start: str
    end: str
    length: float
    diameter: float
    roughness: float
    minor_loss: float = 0.0
    check_valve: bool = False
    initial_status: str = "OPEN"
    status_t0: str = "OPEN"


@dataclass(frozen=True)
class Pump:
    """Pump from ``start`` (suction) to ``end``; ``pump_type`` is ``"HEAD"`` or ``"POWER"``.

    HEAD pumps: ``curve_points`` ((q m3/s, head m), ...) and, for ``curve_model == "power"``,
    EPANET's fit ``H = A - B q**C`` (m, q in m3/s); ``curve_model == "custom"`` (multi-point
    curve, piecewise linear in EPANET) has ``A = B = C = None``. POWER pumps: ``power`` in W.
    ``speed`` is the relative speed setting from ``[PUMPS]``/``[STATUS]``; ``speed_t0`` the
    setting at t = 0 (after the speed pattern and controls; 0 when closed).
    """

    name: str
    start: str
    end: str
    pump_type: str
    curve: str | None = None
    curve_points: tuple[tuple[float, float], ...] = ()
    curve_model: str | None = None
    A: float | None = None
    B: float | None = None
    C: float | None = None
    power: float | None = None
    speed: float = 1.0
    pattern: str | None = None
    initial_status: str = "OPEN"
    status_t0: str = "OPEN"
    speed_t0: float = 1.0


@dataclass(frozen=True)
class Control:
    """A simple control ``LINK link status|setting IF NODE node ABOVE|BELOW level`` / ``AT ...``.

    ``kind`` is ``"time"``, ``"clocktime"`` (``time_s`` seconds), ``"low_level"`` or
    ``"high_level"`` (``node``, ``level`` in the file's units: tank/reservoir level or junction
    pressure). ``applied_t0`` tells whether it fired when EPANET set up t = 0; controls on
    junction pressure are decided only after a solution and are never applied here.
    """

    line: int
    link: str
    status: str
    setting: float | None
    kind: str
    node: str | None = None
    level: float | None = None
    time_s: int | None = None
    enabled: bool = True
    applied_t0: bool = False


@dataclass(frozen=True)
class WaterNetwork:
    """Everything the t = 0 hydraulic snapshot needs, in SI, in file order.

    ``flow_units`` is the file's flow unit (pick ``constants.epanet.hw_k_SI_effective`` with it);
    ``units.epanet_flow_ratio`` is EPANET's internal/physical flow factor. ``headloss`` is
    ``"H-W"``, ``"D-W"`` or ``"C-M"``. ``patterns`` and ``curves`` are in file units.
    ``coordinates`` (``{node: (x, y)}``) and ``vertices`` (``{link: ((x, y), ...)}``, the bends
    between its end nodes) place the network on a map, in the file's map units. The
    ``*_s`` times are [TIMES] in seconds after EPANET's adjustments (hydraulic step at most
    the pattern and report steps); ``duration_s > 0`` asks for an extended-period run.
    """

    title: str
    flow_units: str
    units: UnitSystem
    headloss: str
    demand_multiplier: float
    junctions: tuple[Junction, ...]
    reservoirs: tuple[Reservoir, ...]
    tanks: tuple[Tank, ...]
    pipes: tuple[Pipe, ...]
    pumps: tuple[Pump, ...]
    patterns: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    curves: Mapping[str, tuple[tuple[float, float], ...]] = field(default_factory=dict)
    controls: tuple[Control, ...] = ()
    rules: tuple[str, ...] = ()
    options: Mapping[str, str] = field(default_factory=dict)
    source_lines: Mapping[str, int] = field(default_factory=dict)  # see NotModelled
    pattern_step_s: int = 3600
    pattern_start_s: int = 0
    start_clocktime_s: int = 0
    coordinates: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    vertices: Mapping[str, tuple[tuple[float, float], ...]] = field(default_factory=dict)
    duration_s: int = 0
    hydraulic_step_s: int = 3600
    report_step_s: int = 3600
    report_start_s: int = 0

    @property
    def node_names(self) -> tuple[str, ...]:
        return tuple(n.name for n in (*self.junctions, *self.reservoirs, *self.tanks))

    @property
    def link_names(self) -> tuple[str, ...]:
        return tuple(link.name for link in (*self.pipes, *self.pumps))
