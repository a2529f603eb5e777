"""The MATLAB subset of MATPOWER case files: ``mpc.NAME = value;`` with numeric matrices.

Understood: ``function mpc = name``, ``mpc.X = number;``, ``mpc.X = 'text';``, ``mpc.X = [ ... ];``
(rows split by ``;`` or newlines, values by blanks or commas), ``mpc.X = { ... };`` (skipped),
``%``/``#`` comments, ``...`` continuations, ``end``/``return``. Any other statement (e.g.
``mpc.bus(:, 3) = 0;``) is refused, so data is never silently different from what MATLAB reads.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from .._errors import FormatError

__all__ = ["Matrix", "MFile", "parse_mfile"]

_NUMBER = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eEdD][+-]?\d+)?|[Ii]nf|NaN|nan)")
_ASSIGN = re.compile(r"mpc\s*\.\s*(\w+)\s*=\s*(.*)", re.S)
_FUNCTION = re.compile(r"function\s+(?:\w+\s*=\s*)?(\w+)")
#: A run of numbers separated by blanks (commas already replaced): checked once per segment.
_NUMBERS = re.compile(rf"\s*(?:{_NUMBER.pattern}(?:\s+{_NUMBER.pattern})*)?\s*")
_EXPONENT_D = str.maketrans("dD", "ee")


@dataclass
class Matrix:
    """A numeric matrix: rows of floats with the 1-based line where each row starts."""

    name: str
    line: int
    rows: list[tuple[int, list[float]]] = field(default_factory=list)


@dataclass
class MFile:
    """Assignments found: scalars/strings by name, matrices by name, the function name."""

    path: str
    function: str | None = None
    scalars: dict[str, tuple[int, float | str]] = field(default_factory=dict)
    matrices: dict[str, Matrix] = field(default_factory=dict)
    last_line: int = 1


def parse_mfile(path: str, text: str) -> MFile:
    """Parse the text of a MATPOWER case file (see the module docstring for the subset)."""
    return _Parser(path).parse(text)


def _strip_comment(line: str) -> tuple[str, bool]:
    """Code part of a line (comment removed) and whether it ends with a ``...`` continuation."""
    if "'" not in line:  # no string: the first marker wins (the common, fast case)
        cut = min((i for i in (line.find("%"), line.find("#"), line.find("...")) if i >= 0),
                  default=-1)
        return (line, False) if cut < 0 else (line[:cut], line.startswith("...", cut))
    in_string = False
    for i, char in enumerate(line):
        if char == "'":
            in_string = not in_string
        elif not in_string and char in "%#":
            return line[:i], False
        elif not in_string and line.startswith("...", i):
            return line[:i], True
    return line, False


def _find_outside_strings(code: str, char: str) -> int:
    if "'" not in code:
        return code.find(char)
    in_string = False
    for i, c in enumerate(code):
        if c == "'":
            in_string = not in_string
        elif c == char and not in_string:
            return i
    return -1


class _Parser:
    def __init__(self, path: str) -> None:
        self.result = MFile(path)
        self.path = path
        self.open: Matrix | None = None
        self.closer = "]"
        self.row: list[float] = []
        self.row_line = 0

    def parse(self, text: str) -> MFile:
        pending, pending_line = "", 0
        lines = text.splitlines()
        for number, raw in enumerate(lines, start=1):
            code, continued = _strip_comment(raw)
            if self.open is not None:
                self._matrix_text(code, number, continued)
                continue
            pending_line = pending_line or number
            pending += code + " "
            if not continued:
                self._statement(pending.strip(), pending_line)
                pending, pending_line = "", 0
        self.result.last_line = max(len(lines), 1)
        if self.open is not None:
            what = "matrix" if self.closer == "]" else "cell array"
            raise FormatError(self.path, self.open.line, f"{what} mpc.{self.open.name} is never "
                              f"closed with '{self.closer}' (truncated file?)",
                              f"end it with '{self.closer};'")
        if pending.strip():
            raise FormatError(self.path, pending_line, "file ends inside a '...' continuation")
        return self.result

    def _statement(self, code: str, number: int) -> None:
        while code:
            if code.startswith(";") or code.startswith(","):
                code = code[1:].strip()
                continue
            if code in ("end", "endfunction", "return") or code.startswith(("end;", "return;")):
                return
            function = _FUNCTION.match(code)
            if function:
                self.result.function = function.group(1)
                return
            assign = _ASSIGN.fullmatch(code)
            if assign is None:
                raise FormatError(self.path, number, f"unsupported statement {code[:60]!r}",
                                  "a case file may only assign mpc.NAME = value;")
            name, rest = assign.groups()
            if rest and rest[0] in "[{":
                self.open, self.closer = Matrix(name, number), "]" if rest[0] == "[" else "}"
                return self._matrix_text(rest[1:], number, False)
            code = self._scalar(name, rest, number)

    def _scalar(self, name: str, rest: str, number: int) -> str:
        end = _find_outside_strings(rest, ";")
        value, remainder = (rest, "") if end < 0 else (rest[:end], rest[end + 1:])
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == "'":
            self.result.scalars[name] = (number, value[1:-1])
        elif _NUMBER.fullmatch(value):
            self.result.scalars[name] = (number, _finite_or_inf_literal(self.path, number, value))
        else:
            raise FormatError(self.path, number, f"unsupported value {value[:40]!r} for mpc.{name}",
                              "write a number, a 'string' or a [matrix]")
        return remainder.strip()

    def _matrix_text(self, code: str, number: int, continued: bool) -> None:
        assert self.open is not None
        end = _find_outside_strings(code, self.closer)
        content = code if end < 0 else code[:end]
        if self.closer == "}":          # cell arrays (bus names, fuel types) are skipped
            if end >= 0:
                self.open = None
                self._statement(code[end + 1:].strip(), number)
            return
        segments = content.split(";")
        for i, segment in enumerate(segments):
            self._add_values(segment, number)
            if i < len(segments) - 1:
                self._close_row()
        if end >= 0:
            self._close_row()
            self.result.matrices[self.open.name], self.open = self.open, None
            self._statement(code[end + 1:].strip(), number)
        elif not continued:
            self._close_row()

    def _add_values(self, segment: str, number: int) -> None:
        text = segment.replace(",", " ")
        if not _NUMBERS.fullmatch(text):
            bad = next((t for t in text.split() if not _NUMBER.fullmatch(t)), text.strip())
            raise FormatError(self.path, number, f"bad number {bad!r} in mpc."
                              f"{self.open.name}", "matrices may hold only numbers")
        values = text.translate(_EXPONENT_D).split()
        if values and not self.row:
            self.row_line = number
        floats = list(map(float, values))
        if any(map(math.isinf, floats)):  # an overflow (1e400), unless spelled Inf
            for token in values:
                _finite_or_inf_literal(self.path, number, token)
        self.row.extend(floats)

    def _close_row(self) -> None:
        if self.row:
            self.open.rows.append((self.row_line, self.row))
            self.row = []


def _to_float(token: str) -> float:
    return float(token.replace("d", "e").replace("D", "e"))


def _finite_or_inf_literal(path: str, line: int, token: str) -> float:
    """A number of a matrix; ``Inf`` is MATPOWER's spelling of no limit, but a decimal that
    overflows to infinity (``1e400``) is a typo."""
    value = _to_float(token)
    if math.isinf(value) and "inf" not in token.lower():
        raise FormatError(path, line, f"number {token} is out of range (larger than 1.8e308)",
                          "check the exponent")
    return value
