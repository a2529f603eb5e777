"""Link status at t = 0 as EPANET sets it: [STATUS], pump speed patterns, then simple controls.

EPANET's order at t = 0 (``runhyd``: ``demands()`` then ``controls()``): initial status and
setting from [PIPES]/[PUMPS]/[STATUS]; a pump with a speed pattern takes the pattern value
(0 closes it); then each enabled control, in file order, fires when ``AT TIME 0``, when
``AT CLOCKTIME`` equals the start clock time, or when its tank level condition holds at the
initial level (``<=`` for BELOW, ``>=`` for ABOVE). On a reservoir EPANET compares two zero
volumes, so such a control always fires; we do the same. Controls on junction pressure are
decided after a solution and are not applied here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

from .._errors import FormatError
from ._inp_sections import Line, hours, number
from ._inp_types import Control, Pipe, Pump, Tank

__all__ = ["LinkState", "read_status", "read_controls", "apply_t0"]


@dataclass
class LinkState:
    """Mutable status (OPEN/CLOSED) and setting (pump speed) of one link while reading."""

    kind: str                  # "pipe", "cv" or "pump"
    status: str
    setting: float
    initial_status: str = ""
    initial_setting: float = 1.0

    @classmethod
    def of_pipe(cls, pipe: Pipe) -> "LinkState":
        return cls("cv" if pipe.check_valve else "pipe", pipe.initial_status, 1.0)

    @classmethod
    def of_pump(cls, pump: Pump) -> "LinkState":
        return cls("pump", "OPEN", pump.speed)

    def change_status(self, status: str | None, setting: float) -> None:
        """EPANET ``changestatus`` for [STATUS]: ``status`` None means a numeric setting."""
        if self.kind == "pipe" and status is not None:
            self.status = status
        elif self.kind == "pump":
            if status is None:
                self.setting, self.status = setting, "CLOSED" if setting == 0.0 else "OPEN"
            else:
                self.setting, self.status = (1.0 if status == "OPEN" else 0.0), status

    def set_speed(self, value: float) -> None:
        """EPANET ``setlinksetting`` for a pump speed pattern value."""
        self.setting = value
        self.status = "CLOSED" if value == 0.0 else "OPEN"

    def closed(self) -> bool:
        return self.status == "CLOSED" or (self.kind == "pump" and self.setting == 0.0)

    def finish_pipe(self, pipe: Pipe) -> Pipe:
        return replace(pipe, initial_status=self.initial_status, status_t0=self.status)

    def finish_pump(self, pump: Pump) -> Pump:
        closed_now = self.closed()
        initial = "CLOSED" if self.initial_status == "CLOSED" or self.initial_setting == 0.0 \
            else "OPEN"
        return replace(pump, speed=self.initial_setting, initial_status=initial,
                       status_t0="CLOSED" if closed_now else "OPEN",
                       speed_t0=0.0 if closed_now else self.setting)


def _status_word(token: str) -> str | None:
    word = token.upper()
    if word.startswith("OPEN"):
        return "OPEN"
    if word.startswith("CLOSED"):
        return "CLOSED"
    return None


def _atol(text: str) -> int:
    match = re.match(r"\s*[+-]?\d+", text)
    return int(match.group()) if match else 0


def read_status(path: str, lines: list[Line], states: dict[str, LinkState]) -> None:
    """Apply [STATUS] lines (``link value`` or ``link1 link2 value`` ranges) to ``states``."""
    for line in lines:
        if len(line) < 2:
            raise FormatError(path, line.number, "[STATUS] line needs a link and a status",
                              "write 'link-id OPEN', 'link-id CLOSED' or 'pump-id speed'")
        status = _status_word(line.tokens[-1])
        setting = 0.0 if status else number(path, line, len(line) - 1, "status setting", 0.0)
        if len(line) == 2:
            name = line.tokens[0]
            if name not in states:
                raise FormatError(path, line.number, f"[STATUS] names unknown link {name!r}")
            if states[name].kind == "cv":
                raise FormatError(path, line.number, f"cannot set the status of check-valve "
                                                     f"pipe {name!r}", "remove the line")
            targets = [name]
        elif _atol(line.tokens[0]) > 0 and _atol(line.tokens[1]) > 0:
            low, high = _atol(line.tokens[0]), _atol(line.tokens[1])
            targets = [k for k in states if low <= _atol(k) <= high]
        else:
            targets = [k for k in states if line.tokens[0] <= k <= line.tokens[1]]
        for name in targets:
            states[name].change_status(status, setting)
    for state in states.values():
        state.initial_status, state.initial_setting = state.status, state.setting


def read_controls(path: str, lines: list[Line], states: dict[str, LinkState],
                  nodes: dict[str, str]) -> list[Control]:
    """Parse [CONTROLS] (``LINK id setting IF NODE id ABOVE|BELOW x`` / ``AT [CLOCK]TIME t``)."""
    controls = []
    for line in lines:
        tokens = list(line.tokens)
        enabled = not (len(tokens) > 6 and tokens[-1].upper().startswith("DISABLED"))
        tokens = tokens if enabled else tokens[:-1]
        if len(tokens) < 6:
            raise FormatError(path, line.number, "incomplete control", "write 'LINK id OPEN IF "
                              "NODE id BELOW level' or 'LINK id CLOSED AT TIME 6'")
        link = tokens[1]
        if link not in states:
            raise FormatError(path, line.number, f"control names unknown link {link!r}")
        state = states[link]
        if state.kind == "cv":
            raise FormatError(path, line.number, f"a control cannot change check valve {link!r}")
        status, setting = _control_setting(path, line, state)
        controls.append(_control_condition(path, line, tokens, nodes,
                                           Control(line.number, link, status, setting, "time",
                                                   enabled=enabled)))
    return controls


def _control_setting(path: str, line: Line, state: LinkState) -> tuple[str, float | None]:
    status = _status_word(line.tokens[2])
    if status is not None:
        return status, (1.0 if status == "OPEN" else 0.0) if state.kind == "pump" else None
    setting = number(path, line, 2, "control setting", 0.0)
    return ("CLOSED" if setting == 0.0 else "OPEN"), setting


def _control_condition(path: str, line: Line, tokens: list[str], nodes: dict[str, str],
                       control: Control) -> Control:
    word = tokens[4].upper()
    if word.startswith("TIME") or word.startswith("CLOCKTIME"):
        t = hours(tokens[5], tokens[6] if len(tokens) > 6 else "")
        if t is None or not 0 <= t <= 1e9:
            raise FormatError(path, line.number, f"bad control time {' '.join(tokens[5:])!r}",
                              "write hours from 0 to 1e9 as 6, 6:30, '30 MIN' or '6 AM'")
        seconds = int(3600.0 * t + 0.5)
        if word.startswith("CLOCKTIME"):
            return replace(control, kind="clocktime", time_s=seconds % 86400)
        return replace(control, kind="time", time_s=seconds)
    if len(tokens) < 8:
        raise FormatError(path, line.number, "incomplete node control",
                          "write 'LINK id OPEN IF NODE id BELOW level'")
    if tokens[5] not in nodes:
        raise FormatError(path, line.number, f"control names unknown node {tokens[5]!r}")
    kinds = {"BELOW": "low_level", "ABOVE": "high_level"}
    kind = next((v for k, v in kinds.items() if tokens[6].upper().startswith(k)), None)
    if kind is None:
        raise FormatError(path, line.number, f"expected ABOVE or BELOW, got {tokens[6]!r}")
    level = number(path, Line(line.number, tuple(tokens), line.text), 7, "control level")
    return replace(control, kind=kind, node=tokens[5], level=level)


def apply_t0(controls: list[Control], states: dict[str, LinkState], pumps: list[Pump],
             patterns: dict[str, tuple[float, ...]], period: int, tanks: dict[str, Tank],
             nodes: dict[str, str], length: float, clock_s: int) -> tuple[Control, ...]:
    """Apply pump speed patterns and the controls that fire at t = 0; mark them ``applied_t0``."""
    for pump in pumps:
        if pump.pattern is not None:
            values = patterns[pump.pattern]
            states[pump.name].set_speed(values[period % len(values)])
    result = []
    for control in controls:
        fires = control.enabled and _fires_t0(control, tanks, nodes, length, clock_s)
        if fires:
            state = states[control.link]
            state.status = control.status
            if state.kind == "pump":
                state.setting = control.setting
        result.append(replace(control, applied_t0=fires))
    return tuple(result)


def _fires_t0(control: Control, tanks: dict[str, Tank], nodes: dict[str, str], length: float,
              clock_s: int) -> bool:
    if control.kind == "time":
        return control.time_s == 0
    if control.kind == "clocktime":
        return control.time_s == clock_s % 86400
    kind = nodes[control.node]
    if kind == "reservoir":
        return True
    if kind != "tank":
        return False
    level, target = tanks[control.node].init_level, control.level * length
    return level <= target if control.kind == "low_level" else level >= target
