"""Splitting an EPANET ``.inp`` file into sections of tokenised lines, and token helpers."""
from __future__ import annotations

import math

import re
from dataclasses import dataclass

from .._errors import FormatError

__all__ = ["Line", "Sections", "split_sections", "number", "hours", "source_lines"]

_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_TOKEN = re.compile(r'"[^"]*"|[^\s"]+')

#: Sections the reader uses or safely ignores (they do not change the t = 0 hydraulics).
KNOWN = {"TITLE", "JUNCTIONS", "RESERVOIRS", "TANKS", "PIPES", "PUMPS", "VALVES", "TAGS",
         "DEMANDS", "STATUS", "PATTERNS", "CURVES", "CONTROLS", "RULES", "ENERGY", "EMITTERS",
         "QUALITY", "SOURCES", "REACTIONS", "MIXING", "TIMES", "REPORT", "OPTIONS",
         "COORDINATES", "VERTICES", "LABELS", "BACKDROP", "END", "LEAKAGE"}
#: Sections that change the hydraulics but are not modelled yet: an error when not empty.
UNSUPPORTED = {"VALVES": "valves", "EMITTERS": "emitters", "LEAKAGE": "pipe leakage"}


@dataclass(frozen=True)
class Line:
    """One data line: its 1-based number, tokens (quotes removed) and raw text (comment cut)."""

    number: int
    tokens: tuple[str, ...]
    text: str

    def __len__(self) -> int:
        return len(self.tokens)


Sections = dict[str, list[Line]]


def split_sections(path: str, text: str) -> Sections:
    """Group data lines by section; refuse unknown sections and non-empty unsupported ones."""
    sections: Sections = {name: [] for name in KNOWN}
    current: str | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        body = raw.split(";", 1)[0].strip()
        if not body:
            continue
        if body.startswith("["):
            if "]" not in body:
                raise FormatError(path, number, f"section header {body!r} has no closing ']'",
                                  f"write it as [{body[1:].strip().upper()}]")
            current = body[1:].split("]", 1)[0].strip().upper()
            if current not in KNOWN:
                raise FormatError(path, number, f"unknown section [{current}]",
                                  "use EPANET 2.2 section names such as [JUNCTIONS] or [PIPES]")
            if current == "END":
                break
            continue
        if current is None:
            raise FormatError(path, number, "data before the first [SECTION] header",
                              "start the file with a section such as [TITLE]")
        tokens = tuple(t.strip('"') for t in _TOKEN.findall(body))
        if not any(tokens):
            raise FormatError(path, number, f"no data in {body!r}", "remove the line or "
                              "complete it")
        sections[current].append(Line(number, tokens, body))
    for name, what in UNSUPPORTED.items():
        if sections[name]:
            raise FormatError(path, sections[name][0].number,
                              f"[{name}] is not empty: {what} are not supported yet",
                              f"remove the {what} (or model them as pipes) to solve this network")
    return sections


def number(path: str, line: Line, index: int, what: str, minimum: float | None = None,
           strict: bool = False) -> float:
    """Token ``index`` of ``line`` as a float, with a clear error if missing, bad or too small."""
    if index >= len(line):
        raise FormatError(path, line.number, f"missing {what} (column {index + 1})",
                          f"the line has only {len(line)} fields")
    token = line.tokens[index]
    if not _NUMBER.fullmatch(token):
        raise FormatError(path, line.number, f"bad number {token!r} for {what}",
                          "write a plain decimal number such as 12.5 or 1e-3")
    value = float(token)
    if not math.isfinite(value):
        raise FormatError(path, line.number, f"{what} {token} is out of range (larger than "
                          "1.8e308)", "check the exponent")
    if minimum is not None and (value <= minimum if strict else value < minimum):
        bound = f"> {minimum:g}" if strict else f">= {minimum:g}"
        raise FormatError(path, line.number, f"{what} is {token}, it must be {bound}")
    return value


def hours(value: str, units: str = "") -> float | None:
    """EPANET's ``hour()``: ``5``, ``1:30``, ``1:30:15``, ``30 MIN``, ``2 DAYS``, ``12 AM`` in hours."""
    parts = value.split(":")
    if len(parts) > 3 or not all(_NUMBER.fullmatch(p) for p in parts):
        return None
    y = [float(p) for p in parts] + [0.0] * (3 - len(parts))
    if not all(math.isfinite(v) for v in y):
        return None
    units = units.upper()
    if len(parts) == 1 and units:
        for prefix, scale in (("SEC", 1 / 3600), ("MIN", 1 / 60), ("HOU", 1.0), ("DAY", 24.0)):
            if units.startswith(prefix):
                return y[0] * scale
    h = y[0] + y[1] / 60.0 + y[2] / 3600.0
    if not units:
        return h
    if units.startswith("AM") or units.startswith("PM"):
        if h >= 13.0:
            return None
        noon = 12.0 if units.startswith("PM") else 0.0
        return h - 12.0 + noon if h >= 12.0 else h + noon
    return None


def source_lines(sections: Sections) -> dict[str, int]:
    """Where the file sets what a model may refuse (``WaterNetwork.source_lines``): each
    [OPTIONS] and [TIMES] keyword (``"HEADLOSS"``, ``"DURATION"``), ``"[RULES]"`` (the first
    rule line), ``"tank NAME"`` and ``"curve NAME"`` (its first point), at their first line."""
    found: dict[str, int] = {}
    for section, keyed in (("OPTIONS", "option"), ("TIMES", "option"), ("RULES", "rules"),
                           ("TANKS", "tank"), ("CURVES", "curve")):
        for line in sections.get(section, []):
            if not line.tokens:
                continue
            key = (" ".join(line.tokens[:-1]).upper() or line.tokens[0].upper()
                   if keyed == "option" else "[RULES]" if keyed == "rules"
                   else f"{keyed} {line.tokens[0]}")
            found.setdefault(key, line.number)
    return found
