"""Reader for EPANET 2.2 ``.inp`` files: the t = 0 hydraulic snapshot as a WaterNetwork in SI.

Supported: [JUNCTIONS] [RESERVOIRS] [TANKS] [PIPES] [PUMPS] [DEMANDS] [STATUS] [PATTERNS]
[CURVES] [CONTROLS] [OPTIONS] [TIMES] (pattern step/start, start clock time), all flow units,
H-W/D-W/C-M (stored; the model decides), constant-power and head-curve pumps, the tank overflow
flag, demand-driven analysis (DEMAND MODEL PDA is refused). Read and kept but
not evaluated: [RULES] (EPANET first checks rules after the t = 0 solution). Kept for maps:
[COORDINATES] and [VERTICES]. Ignored, as they do not change the hydraulics: label, tag,
report, quality, reaction, source, mixing and energy sections. Not supported: non-empty
[VALVES], [EMITTERS], [LEAKAGE]. Any other section is an error.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from .._errors import FormatError
from .._source import read_source
from ._inp_controls import LinkState, apply_t0, read_controls, read_status
from ._inp_map import read_map
from ._inp_sections import Line, Sections, hours, number, source_lines, split_sections
from ._inp_types import DemandCategory, Junction, Pipe, Pump, Reservoir, Tank, WaterNetwork
from ._inp_units import FLOW_UNITS, UnitSystem, power_curve_fit, unit_system

__all__ = ["read_inp"]


@dataclass
class _RawJunction:
    """A junction before patterns are known: demand categories (base, pattern, line) in file units."""

    name: str
    elevation: float
    categories: list
    replaced: bool = False


_MAX_HOURS = 1e9                     # [TIMES] values above (114 000 years) are refused
_OPTION_WORDS = ("UNIT", "PRES", "HEADL", "HYDR", "QUAL", "MAP", "VERI", "UNBA", "PATT", "DEMA",
                 "BACKFLOW", "EMIT", "VISC", "DIFF", "SPEC", "TRIAL", "ACCU", "TOLER",
                 "CHECKFREQ", "MAXCHECK", "DAMPLIMIT", "HEADERROR", "FLOWCHANGE", "MINIMUM",
                 "REQUIRED", "HTOL", "QTOL", "RQTOL", "SEGM")


def read_inp(path_or_text: str | os.PathLike) -> WaterNetwork:
    """Parse an EPANET ``.inp`` file (or its text) into a :class:`WaterNetwork` (SI units)."""
    path, text = read_source(path_or_text)
    return _InpReader(path).read(split_sections(path, text))


class _InpReader:
    def __init__(self, path: str) -> None:
        self.path = path
        self.nodes: dict[str, str] = {}      # name -> "junction" | "reservoir" | "tank"
        self.links: dict[str, str] = {}      # name -> "pipe" | "pump"
        self.options: dict[str, str] = {}
        self.patterns: dict[str, tuple[float, ...]] = {}
        self.curves: dict[str, tuple[tuple[float, float], ...]] = {}
        self.period = 0                      # pattern period at t = 0

    def error(self, line: Line, problem: str, hint: str = "") -> FormatError:
        return FormatError(self.path, line.number, problem, hint)

    def num(self, line: Line, index: int, what: str, minimum=None, strict=False) -> float:
        return number(self.path, line, index, what, minimum, strict)

    def read(self, s: Sections) -> WaterNetwork:
        flow_units, headloss, dmult, default_pattern = self._options(s["OPTIONS"])
        units = unit_system(flow_units)
        times = self._times(s["TIMES"])
        step, start, clock = times["PATTERN TIME"], times["PATTERN STAR"], times["START"]
        self.patterns = self._series(s["PATTERNS"], "pattern")
        self.curves = {k: tuple(zip(v[::2], v[1::2])) for k, v in
                       self._series(s["CURVES"], "curve", pairs=True).items()}
        self.period = start // step
        if not (s["JUNCTIONS"] or s["RESERVOIRS"] or s["TANKS"]):
            raise FormatError(self.path, None, "the file defines no network: [JUNCTIONS], "
                              "[RESERVOIRS] and [TANKS] are empty or missing",
                              "is this an EPANET .inp file? It needs at least one junction "
                              "linked to a reservoir or tank")
        raw_junctions = [self._junction(line) for line in s["JUNCTIONS"]]
        reservoirs = [self._reservoir(line, units) for line in s["RESERVOIRS"]]
        tanks = []
        for line in s["TANKS"]:
            node = self._tank(line, units)
            (reservoirs if isinstance(node, Reservoir) else tanks).append(node)
        if not raw_junctions:
            first = (s["RESERVOIRS"] or s["TANKS"])[0].number
            raise FormatError(self.path, first, "the file defines no junction: [JUNCTIONS] is "
                              "empty or missing (EPANET's error 223), so there is no head to "
                              "solve for", "add the junctions that the reservoirs and tanks feed")
        self._demands(s["DEMANDS"], raw_junctions)
        junctions = [self._finish_junction(j, units, dmult, default_pattern)
                     for j in raw_junctions]
        pipes = [self._pipe(line, units, headloss) for line in s["PIPES"]]
        pumps = [self._pump(line, units) for line in s["PUMPS"]]
        states = {p.name: LinkState.of_pipe(p) for p in pipes}
        states.update({p.name: LinkState.of_pump(p) for p in pumps})
        read_status(self.path, s["STATUS"], states)
        controls = read_controls(self.path, s["CONTROLS"], states, self.nodes)
        controls = apply_t0(controls, states, pumps, self.patterns, self.period,
                            {t.name: t for t in tanks}, self.nodes, units.length, clock)
        coordinates, vertices = read_map(self.path, s, self.nodes, self.links)
        return WaterNetwork(
            title="\n".join(line.text for line in s["TITLE"]), flow_units=flow_units,
            units=units, headloss=headloss, demand_multiplier=dmult,
            junctions=tuple(junctions), reservoirs=tuple(reservoirs), tanks=tuple(tanks),
            pipes=tuple(states[p.name].finish_pipe(p) for p in pipes),
            pumps=tuple(states[p.name].finish_pump(p) for p in pumps), patterns=self.patterns,
            curves=self.curves, controls=controls, rules=tuple(x.text for x in s["RULES"]),
            options=self.options, source_lines=source_lines(s), pattern_step_s=step,
            pattern_start_s=start, start_clocktime_s=clock, coordinates=coordinates,
            vertices=vertices, duration_s=times["DURATION"], hydraulic_step_s=times["HYDRAULIC"],
            report_step_s=times["REPORT TIME"], report_start_s=times["REPORT STAR"])

    # ----- options and times ----------------------------------------------------------
    def _options(self, lines: list[Line]):
        flow_units, headloss, dmult, default_pattern = "GPM", "H-W", 1.0, "1"
        for line in lines:
            key, value = line.tokens[0].upper(), line.tokens[1:]
            if not key.startswith(_OPTION_WORDS):
                raise self.error(line, f"unknown option {line.tokens[0]!r}",
                                 "see the EPANET 2.2 manual, [OPTIONS] section")
            self.options[" ".join(line.tokens[:-1]).upper() or key] = line.tokens[-1]
            if not value:
                continue
            if key.startswith("UNIT"):
                flow_units = {"SI": "LPS"}.get(value[0].upper(), value[0].upper())  # as EPANET
                if flow_units not in FLOW_UNITS:
                    raise self.error(line, f"unknown flow units {value[0]!r}",
                                     "use one of " + " ".join(FLOW_UNITS))
            elif key.startswith("HEADL"):
                headloss = value[0].upper()
                if headloss not in ("H-W", "D-W", "C-M"):
                    raise self.error(line, f"unknown headloss formula {value[0]!r}",
                                     "use H-W, D-W or C-M")
            elif key.startswith("PRES"):
                self._pressure_option(line, value[0].upper())
            elif key.startswith("PATT"):
                default_pattern = value[0]
            elif key.startswith("DEMA"):
                dmult = self._demand_option(line, value, dmult)
            elif key.startswith(("RQTOL", "SPEC")):
                self._positive_option(line, key)
        return flow_units, headloss, dmult, default_pattern

    def _pressure_option(self, line: Line, unit: str) -> None:
        """PRESSURE units: PSI, KPA or METERS (EPANET's error 213 otherwise); for their
        meaning see ``pressure_per_ft``."""
        if not unit.startswith(("PSI", "KPA", "METERS", "EXPO")):
            raise self.error(line, f"unknown pressure units {line.tokens[1]!r}",
                             "use PSI, KPA or METERS")

    def _positive_option(self, line: Line, key: str) -> None:
        """RQTOL and SPECIFIC GRAVITY, which the model reads: numbers > 0 (RQTOL < 1), as
        EPANET's ``optionvalue`` requires (its error 213)."""
        if key.startswith("SPEC") and len(line) < 3:
            return                      # "Specific Gravity" without a value: the default
        what = " ".join(line.tokens[:-1]).upper()
        value = self.num(line, len(line) - 1, what, 0.0, strict=True)
        if key.startswith("RQTOL") and value >= 1.0:
            raise self.error(line, f"{what} is {line.tokens[-1]}, it must be < 1",
                             "EPANET's default is 1e-7")

    def _demand_option(self, line: Line, value: list, dmult: float) -> float:
        """DEMAND MULTIPLIER (returned) or DEMAND MODEL (DDA only) of [OPTIONS]."""
        word = value[0].upper()
        if word.startswith("MULT"):
            return self.num(line, 2, "demand multiplier", 0.0, strict=True)
        if word.startswith("MODEL") and len(value) > 1:
            model = value[1].upper()
            if model.startswith("PDA"):
                raise self.error(line, "pressure-driven demand (DEMAND MODEL PDA) is not "
                                       "modelled; only demand-driven analysis (DDA) is",
                                 "remove the line (or write DEMAND MODEL DDA) to solve with "
                                 "the full demands")
            if not model.startswith("DDA"):
                raise self.error(line, f"unknown demand model {value[1]!r}", "use DDA")
        return dmult

    def _times(self, lines: list[Line]) -> dict[str, int]:
        """[TIMES] in seconds, with EPANET's defaults and adjustments (``adjustdata``)."""
        values = {"PATTERN TIME": 3600, "PATTERN STAR": 0, "START": 0, "DURATION": 0,
                  "HYDRAULIC": 3600, "REPORT TIME": 3600, "REPORT STAR": 0}
        for line in lines:
            words = " ".join(line.tokens).upper()
            key = next((k for k in values if words.startswith(k)), None)
            if key is None or len(line) < 2:
                continue
            t = hours(line.tokens[-1])
            if t is None and len(line) >= 3:
                t = hours(line.tokens[-2], line.tokens[-1])
            if t is None or not 0 <= t <= _MAX_HOURS:
                raise self.error(line, f"bad time in {line.text!r}", "write hours from 0 to "
                                 f"{_MAX_HOURS:.0e} as 2, 1:30, 1:30:00, '30 MIN' or '6 AM'")
            values[key] = int(3600.0 * t + 0.5)
        for key in ("PATTERN TIME", "HYDRAULIC"):
            values[key] = values[key] if values[key] > 0 else 3600
        values["REPORT TIME"] = values["REPORT TIME"] or values["PATTERN TIME"]
        values["HYDRAULIC"] = min(values["HYDRAULIC"], values["PATTERN TIME"],
                                  values["REPORT TIME"])
        values["REPORT STAR"] = values["REPORT STAR"] if values["REPORT STAR"] <= \
            values["DURATION"] else 0
        values["START"] %= 86400
        return values

    def _series(self, lines: list[Line], what: str, pairs: bool = False) -> dict:
        """[PATTERNS] / [CURVES]: values per id, several lines of one id concatenated."""
        series: dict[str, list[float]] = {}
        for line in lines:
            if len(line) < (3 if pairs else 2):
                raise self.error(line, f"{what} {line.tokens[0]!r} line has no values",
                                 "write 'ID x y'" if pairs else "write 'ID m1 m2 ...'")
            count = 3 if pairs else len(line)
            values = [self.num(line, i, f"{what} value") for i in range(1, count)]
            series.setdefault(line.tokens[0], []).extend(values)
        return {k: tuple(v) for k, v in series.items()}

    def multiplier(self, line: Line, pattern: str | None) -> float:
        if pattern is None:
            return 1.0
        if pattern not in self.patterns:
            raise self.error(line, f"pattern {pattern!r} is not defined",
                             "add it to [PATTERNS] or remove the reference")
        values = self.patterns[pattern]
        return values[self.period % len(values)]

    # ----- nodes ----------------------------------------------------------------------
    def _add_node(self, line: Line, kind: str) -> str:
        name = line.tokens[0]
        if name in self.nodes:
            raise self.error(line, f"duplicate node id {name!r}", "node ids must be unique")
        self.nodes[name] = kind
        return name

    def _junction(self, line: Line) -> _RawJunction:
        name = self._add_node(line, "junction")
        elevation = self.num(line, 1, f"elevation of junction {name!r}")
        base = self.num(line, 2, "demand") if len(line) > 2 else 0.0
        pattern = line.tokens[3] if len(line) > 3 else None
        self.multiplier(line, pattern)
        return _RawJunction(name, elevation, [(base, pattern, line)])

    def _demands(self, lines: list[Line], junctions: list[_RawJunction]) -> None:
        """[DEMANDS]: the first entry of a junction replaces its [JUNCTIONS] demand (as EPANET)."""
        by_name = {j.name: j for j in junctions}
        for line in lines:
            base = self.num(line, 1, "base demand")
            pattern = line.tokens[2] if len(line) > 2 else None
            self.multiplier(line, pattern)
            if line.tokens[0] not in self.nodes:
                raise self.error(line, f"[DEMANDS] names unknown node {line.tokens[0]!r}")
            junction = by_name.get(line.tokens[0])
            if junction is None:
                continue                      # EPANET ignores demands on tanks and reservoirs
            if not junction.replaced:
                junction.categories, junction.replaced = [], True
            junction.categories.append((base, pattern, line))

    def _finish_junction(self, raw: _RawJunction, units: UnitSystem, dmult: float,
                         default_pattern: str) -> Junction:
        demands = []
        for base, pattern, where in raw.categories:
            if pattern is None and default_pattern in self.patterns:
                pattern = default_pattern
            demands.append(DemandCategory(base * units.flow, pattern,
                                          self.multiplier(where, pattern)))
        demand = sum(d.base * d.multiplier_t0 for d in demands) * dmult
        return Junction(raw.name, raw.elevation * units.length, demand, tuple(demands))

    def _reservoir(self, line: Line, units: UnitSystem) -> Reservoir:
        name = self._add_node(line, "reservoir")
        head = self.num(line, 1, f"head of reservoir {name!r}") * units.length
        pattern = line.tokens[2] if len(line) > 2 else None
        return Reservoir(name, head * self.multiplier(line, pattern), head, pattern)

    def _tank(self, line: Line, units: UnitSystem) -> Tank | Reservoir:
        if len(line) <= 3:                    # EPANET reads a short [TANKS] line as a reservoir
            return self._reservoir(line, units)
        name = self._add_node(line, "tank")
        if len(line) < 6:
            raise self.error(line, f"tank {name!r} needs elevation, initial, minimum and maximum"
                                   " level and diameter", f"the line has only {len(line)} fields")
        elevation = self.num(line, 1, f"elevation of tank {name!r}")
        init, low, high, diameter = (self.num(line, i, f"{what} of tank {name!r}", 0.0)
                                     for i, what in enumerate(
                                         ("initial level", "minimum level", "maximum level",
                                          "diameter"), start=2))
        min_volume = self.num(line, 6, "minimum volume", 0.0) if len(line) > 6 else 0.0
        curve = line.tokens[7] if len(line) > 7 and line.tokens[7] != "*" else None
        if curve is not None and curve not in self.curves:
            raise self.error(line, f"volume curve {curve!r} of tank {name!r} is not defined")
        if not low <= init <= high:
            raise self.error(line, f"tank {name!r}: initial level {init:g} is not between the "
                                   f"minimum {low:g} and maximum {high:g}", "fix the levels")
        length = units.length
        return Tank(name, elevation * length, init * length, low * length, high * length,
                    diameter * length, min_volume * units.volume, curve,
                    self._overflow(line, name))

    def _overflow(self, line: Line, name: str) -> bool:
        """The 9th [TANKS] field, EPANET 2.2's overflow flag: YES or NO (default NO)."""
        if len(line) <= 8:
            return False
        if len(line) > 9:
            raise self.error(line, f"tank {name!r} has {len(line)} fields; the 9th (overflow "
                                   "flag) is the last", f"remove {line.tokens[9]!r} and after")
        word = line.tokens[8].upper()
        if word not in ("YES", "NO"):
            raise self.error(line, f"overflow flag {line.tokens[8]!r} of tank {name!r} is not "
                                   "YES or NO", "write YES (the tank spills when full) or NO")
        return word == "YES"

    # ----- links ----------------------------------------------------------------------
    def _add_link(self, line: Line, kind: str) -> tuple[str, str, str]:
        if len(line) < 3:
            raise self.error(line, f"{kind} line needs an id and two node ids",
                             f"the line has only {len(line)} fields")
        name, start, end = line.tokens[:3]
        if name in self.links:
            raise self.error(line, f"duplicate link id {name!r}", "link ids must be unique")
        for node in (start, end):
            if node not in self.nodes:
                raise self.error(line, f"{kind} {name!r} connects unknown node {node!r}",
                                 "define it in [JUNCTIONS], [RESERVOIRS] or [TANKS]")
        if start == end:
            raise self.error(line, f"{kind} {name!r} connects node {start!r} to itself")
        self.links[name] = kind
        return name, start, end

    def _pipe(self, line: Line, units: UnitSystem, headloss: str) -> Pipe:
        name, start, end = self._add_link(line, "pipe")
        if len(line) < 6:
            raise self.error(line, f"pipe {name!r} needs length, diameter and roughness",
                             f"the line has only {len(line)} fields")
        length = self.num(line, 3, f"length of pipe {name!r}", 0.0, strict=True)
        diameter = self.num(line, 4, f"diameter of pipe {name!r}", 0.0, strict=True)
        roughness = self.num(line, 5, f"roughness of pipe {name!r}", 0.0, strict=True)
        extra = [t.upper() for t in line.tokens[6:8]]
        keyword = extra[-1] if extra and extra[-1] in ("CV", "OPEN", "CLOSED") else None
        if len(extra) == 2 and keyword is None:
            raise self.error(line, f"pipe {name!r} status {line.tokens[7]!r} is not OPEN, "
                                   "CLOSED or CV")
        minor = 0.0
        if len(extra) == 2 or (extra and keyword is None):
            minor = self.num(line, 6, f"minor loss of pipe {name!r}", 0.0)
        check_valve, status = keyword == "CV", "CLOSED" if keyword == "CLOSED" else "OPEN"
        if headloss == "D-W":
            roughness *= units.roughness_dw
        return Pipe(name, start, end, length * units.length, diameter * units.diameter,
                    roughness, minor, check_valve, status, status)

    def _pump(self, line: Line, units: UnitSystem) -> Pump:
        name, start, end = self._add_link(line, "pump")
        words = line.tokens[3:]
        if len(words) % 2:
            raise self.error(line, f"pump {name!r} parameters must be KEYWORD value pairs",
                             "e.g. 'HEAD curve-id', 'POWER 50', 'SPEED 1', 'PATTERN id'")
        fields: dict = {"pump_type": None}
        for i in range(0, len(words), 2):
            key, value = words[i].upper(), words[i + 1]
            if key.startswith("POWER"):
                power = self.num(line, 4 + i, f"power of pump {name!r}", 0.0, strict=True)
                fields.update(pump_type="POWER", power=power * units.power)
            elif key.startswith("HEAD"):
                fields.update(self._head_curve(line, name, value, units), pump_type="HEAD")
            elif key.startswith("SPEE"):
                fields["speed"] = self.num(line, 4 + i, f"speed of pump {name!r}", 0.0)
            elif key.startswith("PATT"):
                self.multiplier(line, value)
                fields["pattern"] = value
            else:
                raise self.error(line, f"unknown pump keyword {words[i]!r}",
                                 "use HEAD, POWER, SPEED or PATTERN")
        if fields["pump_type"] is None:
            raise self.error(line, f"pump {name!r} has neither a HEAD curve nor a POWER",
                             "add 'HEAD curve-id' or 'POWER value'")
        return Pump(name, start, end, **fields)

    def _head_curve(self, line: Line, pump: str, curve: str, units: UnitSystem) -> dict:
        if curve not in self.curves:
            raise self.error(line, f"head curve {curve!r} of pump {pump!r} is not defined",
                             "add it to [CURVES]")
        points = tuple((q * units.flow, h * units.length) for q, h in self.curves[curve])
        try:
            fit = power_curve_fit(points)
        except ValueError as exc:
            raise self.error(line, f"head curve {curve!r} of pump {pump!r} cannot be fitted "
                                   f"as EPANET does: {exc}", "fix the curve points") from None
        if fit is None and any(b[0] <= a[0] for a, b in zip(points, points[1:])):
            raise self.error(line, f"head curve {curve!r} of pump {pump!r} has flows that do "
                                   "not increase", "sort the points by flow")
        if fit is None and any(b[1] >= a[1] for a, b in zip(points, points[1:])):
            raise self.error(line, f"head curve {curve!r} of pump {pump!r} has heads that do "
                                   "not fall from point to point (EPANET's error 227)",
                             "make each head lower than the one before")
        model = "custom" if fit is None else "power"
        a, b, c = fit if fit is not None else (None, None, None)
        return dict(curve=curve, curve_points=points, curve_model=model, A=a, B=b, C=c)
