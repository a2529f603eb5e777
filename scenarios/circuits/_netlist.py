"""A DC netlist as frozen data (resistors, diodes, sources, diode models, analyses) and its writer.

Values are in SI units (ohm, V, A; temperature in degrees Celsius as SPICE's ``.temp``). Node
``"0"`` is ground. The reader (``read_netlist``) and :meth:`Netlist.to_spice` round-trip exactly.
"""
from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from typing import Mapping, Union

import numpy as np

from ._spice_numbers import format_spice_number as _num
from ._spice_numbers import parse_spice_number
from ._wave_params import WAVEFORMS, check_wave_params  # noqa: F401 (the reader's import)
from ._tran_times import tran_problem

#: ``.options method=`` words and the integration method each names.
SPICE_METHODS = {"trap": "trapezoidal", "trapezoidal": "trapezoidal", "gear": "gear"}

__all__ = [
    "GROUND", "Resistor", "Capacitor", "Inductor", "Diode", "VoltageSource", "CurrentSource",
    "DiodeModel", "Waveform", "OperatingPoint", "DCSweep", "Transient", "Netlist",
    "DCSWEEP_STOP_SLACK", "MAX_TRAN_POINTS",
]

GROUND = "0"
#: The most output points a ``.tran`` may ask for (a float64 per point and unknown; as the
#: CLI's ``--sweep`` limit): ``.tran 1p 1`` would be 1e12 points, terabytes.
MAX_TRAN_POINTS = 10_000_000
#: ngspice's .dc loop runs while ``sign(step) * (value - stop) <= DCSWEEP_STOP_SLACK``.
DCSWEEP_STOP_SLACK = np.finfo(float).eps * 1e3
_TOKEN_OK = re.compile(r"[^\s()=,;$]+")


@dataclass(frozen=True)
class _TwoTerminal:
    """An element between nodes ``n1`` and ``n2`` with one value (R, C or L)."""

    name: str
    n1: str
    n2: str
    value: float

    @property
    def nodes(self) -> tuple[str, str]:
        return (self.n1, self.n2)


@dataclass(frozen=True)
class Resistor(_TwoTerminal):
    """``Rname n1 n2 value``: current ``(V(n1) - V(n2)) / value`` flows from n1 to n2."""


@dataclass(frozen=True)
class Capacitor(_TwoTerminal):
    """``Cname n1 n2 value``: charge ``value (V(n1) - V(n2))`` (F)."""


@dataclass(frozen=True)
class Inductor(_TwoTerminal):
    """``Lname n1 n2 value``: ``V(n1) - V(n2) = value di/dt``, i from n1 through L to n2 (H)."""


@dataclass(frozen=True)
class Waveform:
    """A source's time function ``KIND(p1 p2 ...)`` as written (SI units, defaults unfilled):
    PULSE(V1 V2 TD TR TF PW PER NP) (NP: number of pulses, <= 0 for unlimited),
    SIN(VO VA FREQ TD THETA PHASE), EXP(V1 V2 TD1 TAU1 TD2 TAU2), PWL(t1 v1 t2 v2 ...)."""

    kind: str
    params: tuple[float, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", tuple(float(p) for p in self.params))


@dataclass(frozen=True)
class Diode:
    """``Dname anode cathode model [area] [m=...]``: Shockley diode from anode to cathode.
    ``area`` scales IS (and divides RS) with the multiplier ``m`` included; ``m`` alone also
    scales the breakdown current IBV (as ngspice: IBV is not scaled by the area)."""

    name: str
    anode: str
    cathode: str
    model: str
    area: float = 1.0
    m: float = 1.0

    @property
    def nodes(self) -> tuple[str, str]:
        return (self.anode, self.cathode)


@dataclass(frozen=True)
class VoltageSource:
    """``Vname pos neg DC value``: ``V(pos) - V(neg) = dc``; its current flows pos -> neg inside."""

    name: str
    pos: str
    neg: str
    dc: float = 0.0
    wave: Waveform | None = None

    @property
    def nodes(self) -> tuple[str, str]:
        return (self.pos, self.neg)


@dataclass(frozen=True)
class CurrentSource:
    """``Iname pos neg DC value``: ``dc`` amperes flow through the source from pos to neg."""

    name: str
    pos: str
    neg: str
    dc: float = 0.0
    wave: Waveform | None = None

    @property
    def nodes(self) -> tuple[str, str]:
        return (self.pos, self.neg)


Element = Union[Resistor, Capacitor, Inductor, Diode, VoltageSource, CurrentSource]
_LETTER = {Resistor: "R", Capacitor: "C", Inductor: "L", Diode: "D", VoltageSource: "V",
           CurrentSource: "I"}


@dataclass(frozen=True)
class DiodeModel:
    """``.model NAME D(...)``: saturation current IS (A), emission coefficient N, series RS (ohm).

    BV/IBV: reverse breakdown at BV volts with IBV amperes (``BV=None``: none), as ngspice.
    ``params`` holds the other parameters given (upper-case name, value), which do not change
    the DC solution at TEMP = TNOM (capacitances, transit time, noise, temperature
    coefficients).
    """

    name: str
    IS: float = 1e-14
    N: float = 1.0
    RS: float = 0.0
    BV: float | None = None
    IBV: float = 1e-3
    params: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class OperatingPoint:
    """``.op``: the DC operating point."""


@dataclass(frozen=True)
class DCSweep:
    """``.dc source start stop step``: the DC solution for each value of one independent source."""

    source: str
    start: float
    stop: float
    step: float

    def points(self) -> np.ndarray:
        """Sweep values exactly as ngspice makes them (``value += step`` until past ``stop``)."""
        values = []
        value = float(self.start)
        direction = math.copysign(1.0, self.step)
        while direction * (value - self.stop) <= DCSWEEP_STOP_SLACK and len(values) < 10**7:
            values.append(value)
            value += self.step
        return np.asarray(values, dtype=np.float64)


@dataclass(frozen=True)
class Transient:
    """``.tran tstep tstop [tstart [tmax]] [uic]``: output every ``tstep`` from ``tstart`` to
    ``tstop`` (s); steps at most ``tmax`` (None or 0: ngspice's default, see ``step_limit``;
    the rules for the values: ``_tran_times``)."""

    tstep: float
    tstop: float
    tstart: float = 0.0
    tmax: float | None = None
    uic: bool = False

    def times(self) -> np.ndarray:
        """The output grid ``tstart + k tstep`` up to ``tstop`` (tstop included)."""
        problem = self.grid_problem()
        if problem is not None:
            raise ValueError(f"Transient(tstep={self.tstep:g}): {problem}")
        count = int(math.floor((self.tstop - self.tstart) / self.tstep * (1 + 1e-12))) + 1
        grid = self.tstart + self.tstep * np.arange(count)
        return grid if grid[-1] >= self.tstop * (1 - 1e-12) else np.append(grid, self.tstop)

    def grid_problem(self) -> str | None:
        """Why the output grid is too large to hold (over :data:`MAX_TRAN_POINTS`), or None."""
        span = self.tstop - self.tstart
        if span / self.tstep <= MAX_TRAN_POINTS * (1 + 1e-12):
            return None
        least = span / MAX_TRAN_POINTS
        scale = 10.0 ** (math.floor(math.log10(least)) - 2)  # 3 digits, rounded up
        least = math.ceil(least / scale * (1 - 1e-13)) * scale
        return (f"output every tstep {self.tstep:g} s from {self.tstart:g} s to {self.tstop:g} s "
                f"is {span / self.tstep:.3g} intervals, more than {MAX_TRAN_POINTS:,}: raise "
                f"tstep to at least {least:.3g} s (tstep only spaces the output; give tmax to "
                "keep the steps small)")

    def step_limit(self) -> float:
        """``tmax``, else (None or 0) ngspice's default ``min(tstep, (tstop - tstart) / 50)``."""
        if self.tmax is not None and self.tmax > 0:
            return self.tmax
        return min(self.tstep, (self.tstop - self.tstart) / 50.0)


Analysis = Union[OperatingPoint, DCSweep, Transient]


@dataclass(frozen=True)
class Netlist:
    """A parsed deck: title, elements in file order, diode models by name, analyses, options.

    ``options`` maps lower-case ``.options`` names to a number, a word, or True for a bare flag;
    ``temperature`` is the circuit temperature in degrees Celsius (SPICE default 27).
    """

    title: str
    elements: tuple[Element, ...]
    models: Mapping[str, DiodeModel] = field(default_factory=dict)
    analyses: tuple[Analysis, ...] = ()
    options: Mapping[str, float | str | bool] = field(default_factory=dict)
    temperature: float = 27.0
    initial_conditions: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "initial_conditions", dict(self.initial_conditions))
        object.__setattr__(self, "elements", tuple(self.elements))
        object.__setattr__(self, "analyses", tuple(self.analyses))
        object.__setattr__(self, "models", dict(self.models))
        object.__setattr__(self, "options", dict(self.options))
        _validate(self)

    @functools.cached_property
    def nodes(self) -> tuple[str, ...]:
        """Non-ground node names in order of first appearance."""
        seen = dict.fromkeys(node for element in self.elements for node in element.nodes)
        seen.pop(GROUND, None)
        return tuple(seen)

    def element(self, name: str) -> Element:
        """The element called ``name`` (case-insensitive, as in SPICE)."""
        for element in self.elements:
            if element.name.lower() == name.lower():
                return element
        raise KeyError(f"no element named {name!r} in netlist {self.title!r}")

    def to_spice(self) -> str:
        """SPICE text that ``read_netlist`` reads back to an equal Netlist."""
        lines = [self.title]
        lines += [_element_card(e) for e in self.elements]
        lines += [_model_card(m) for m in self.models.values()]
        if self.options:
            lines.append(".options " + " ".join(_option(k, v) for k, v in self.options.items()))
        lines.append(f".temp {_num(self.temperature)}")
        if self.initial_conditions:
            lines.append(".ic " + " ".join(f"v({k})={_num(v)}"
                                           for k, v in self.initial_conditions.items()))
        for analysis in self.analyses:
            if isinstance(analysis, Transient):
                lines.append(_tran_card(analysis))
            elif isinstance(analysis, DCSweep):
                values = (analysis.start, analysis.stop, analysis.step)
                lines.append(f".dc {analysis.source} " + " ".join(_num(v) for v in values))
            else:
                lines.append(".op")
        lines.append(".end")
        return "\n".join(lines) + "\n"


def _tran_card(a: Transient) -> str:
    values = [a.tstep, a.tstop] + ([a.tstart] if a.tstart or a.tmax is not None else [])
    values += [a.tmax] if a.tmax is not None else []
    return ".tran " + " ".join(_num(v) for v in values) + (" uic" if a.uic else "")


def _element_card(e: Element) -> str:
    if isinstance(e, (Resistor, Capacitor, Inductor)):
        return f"{e.name} {e.n1} {e.n2} {_num(e.value)}"
    if isinstance(e, Diode):
        own = e.area / e.m if e.m != 1.0 else e.area
        area = ("" if own == 1.0 else f" {_num(own)}") + ("" if e.m == 1.0 else f" m={_num(e.m)}")
        return f"{e.name} {e.anode} {e.cathode} {e.model}{area}"
    wave = "" if e.wave is None else (f" {e.wave.kind}(" + " ".join(_num(p) for p in e.wave.params)
                                       + ")")
    return f"{e.name} {e.pos} {e.neg} DC {_num(e.dc)}{wave}"


def _model_card(m: DiodeModel) -> str:
    params = [("IS", m.IS), ("N", m.N), ("RS", m.RS)]
    if m.BV is not None:
        params.append(("BV", m.BV))
    if m.BV is not None or m.IBV != 1e-3:
        params.append(("IBV", m.IBV))
    params += list(m.params)
    return f".model {m.name} D(" + " ".join(f"{k}={_num(v)}" for k, v in params) + ")"


def _option(key: str, value: float | str | bool) -> str:
    if value is True:
        return key
    return f"{key}={value if isinstance(value, str) else _num(value)}"


def _validate(netlist: Netlist) -> None:
    """Reject netlists that could not be written as SPICE or that refer to missing things."""
    if "\n" in netlist.title or "\r" in netlist.title:
        raise ValueError("Netlist.title must be one line (SPICE uses the first line as title)")
    names = _check_elements(netlist)
    for key, model in netlist.models.items():
        if key != model.name or not _TOKEN_OK.fullmatch(key):
            raise ValueError(f".models[{key!r}]: key must equal the model's one-word name")
    for key, value in netlist.options.items():
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        word = isinstance(value, str) and _TOKEN_OK.fullmatch(value) \
            and parse_spice_number(value) is None
        if not _TOKEN_OK.fullmatch(key) or not (value is True or number or word):
            raise ValueError(f".options[{key!r}]: use a number, one word, or True for a flag")
    for i, e in enumerate(netlist.elements):
        if getattr(e, "wave", None) is not None:
            _check_wave(f".elements[{i}].wave", e.wave)
    for node, value in netlist.initial_conditions.items():
        if node not in netlist.nodes or not math.isfinite(value):
            raise ValueError(f".initial_conditions[{node!r}]: not a node of the netlist, or "
                             "not a finite voltage")
    for i, a in enumerate(netlist.analyses):
        bad = tran_problem(a.tstep, a.tstop, a.tstart, a.tmax) if isinstance(a, Transient) \
            else None
        if bad is not None:
            raise ValueError(f".analyses[{i}]: .tran {bad[1]}")
        if isinstance(a, Transient) and a.grid_problem() is not None:
            raise ValueError(f".analyses[{i}]: .tran {a.grid_problem()}")
        if isinstance(a, DCSweep) and not isinstance(
                names.get(a.source.lower()), (VoltageSource, CurrentSource)):
            raise ValueError(f".analyses[{i}]: .dc source {a.source!r} is not a V or I source")


def _check_wave(where: str, wave: Waveform) -> None:
    problem = check_wave_params(wave.kind, wave.params)
    if problem is not None:
        raise ValueError(f"{where}: {problem}")


def _check_elements(netlist: Netlist) -> dict[str, Element]:
    """Element types, names (unique ignoring case), node names and model references."""
    names: dict[str, Element] = {}
    spellings: dict[str, str] = {}
    good: set[str] = set()  # node names already checked (most nodes recur on several cards)
    for i, e in enumerate(netlist.elements):
        letter = _LETTER.get(type(e))
        if letter is None:
            raise TypeError(f".elements[{i}]: {type(e).__name__} is not a netlist element")
        if not _TOKEN_OK.fullmatch(e.name) or e.name[0].upper() != letter:
            raise ValueError(f".elements[{i}]: name {e.name!r} must be one word starting "
                             f"with {letter!r}")
        key = e.name.lower()
        if key in names:
            raise ValueError(f".elements[{i}]: duplicate element name {e.name!r}")
        names[key] = e
        for node in e.nodes:
            if node not in good:
                _check_node(f".elements[{i}]", node, spellings)
                good.add(node)
        if isinstance(e, Diode) and e.model not in netlist.models:
            raise ValueError(f".elements[{i}]: diode model {e.model!r} is not in .models")
    return names


def _check_node(where: str, node: str, spellings: dict[str, str]) -> None:
    if not _TOKEN_OK.fullmatch(node) or node.lower() == "gnd":
        raise ValueError(f"{where}: bad node name {node!r} (one word; ground is '0')")
    if spellings.setdefault(node.lower(), node) != node:
        raise ValueError(f"{where}: node {node!r} differs from node "
                         f"{spellings[node.lower()]!r} only in case (SPICE merges them)")
