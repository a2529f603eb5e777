"""The MATLAB subset of MATPOWER case files: ``mpc.NAME = value;`` with numeric matrices.

Understood: ``function mpc = name``, ``mpc.X = number;``, ``mpc.X = 'text';``, ``mpc.X = [ ... ];``
(rows split by ``;`` or newlines, values by blanks or commas), ``mpc.X = { ... };`` (skipped),
``%``/``#`` comments, ``...`` continuations, ``end``/``return``, and the unit conversions of
MATPOWER's distribution cases (:mod:`._unit_code`: recognized, kept as data, never run). Any
other statement (e.g. ``mpc.bus(:, 3) = 0;``) is refused, so data is never silently different
from what MATLAB reads.
The plain lines inside a matrix (numbers only) are read in bulk (:mod:`._mblock`); a line with
a comment, string or ``...``, or a bad value, is read on its own, which names file and line.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from .._errors import FormatError
from ._mblock import NUMBER as _NUMBER, Block, read_block
from ._unit_code import recognize

__all__ = ["Matrix", "MFile", "parse_mfile"]

_ASSIGN = re.compile(r"mpc\s*\.\s*(\w+)\s*=\s*(.*)", re.S)
_FUNCTION = re.compile(r"function\s+(?:\w+\s*=\s*)?(\w+)")
#: Lines read in bulk at a time (a line the bulk reader refuses sends its chunk line by line).
_CHUNK = 4096
#: A run of numbers separated by blanks (commas already replaced): checked once per segment.
_NUMBERS = re.compile(rf"\s*(?:{_NUMBER.pattern}(?:\s+{_NUMBER.pattern})*)?\s*")
_EXPONENT_D = str.maketrans("dD", "ee")


@dataclass
class Matrix:
    """A numeric matrix opened on ``line``: ``lengths`` and ``lines`` (1-based, where it
    starts) of each row; ``data`` (rows x columns) when all rows have the same length, else
    None."""

    name: str
    line: int
    lengths: np.ndarray
    lines: np.ndarray
    data: np.ndarray | None


class _Rows:
    """The rows of a matrix being read: blocks read in bulk, rows read one by one."""

    def __init__(self, name: str, line: int) -> None:
        self.name, self.line = name, line
        self.blocks: list[Block] = []
        self.rows: list[tuple[int, list[float]]] = []

    def add_block(self, block: Block) -> None:
        if len(block.lines):
            self._flush()
            self.blocks.append(block)

    def _flush(self) -> None:
        if self.rows:
            lines = np.asarray([line for line, _ in self.rows], dtype=np.int64)
            values = [row for _, row in self.rows]
            width = len(values[0])
            data = np.asarray(values, dtype=np.float64) if all(
                len(v) == width for v in values) else values
            self.blocks.append(Block(data, lines))
            self.rows = []

    def matrix(self) -> Matrix:
        self._flush()
        lengths = [np.full(len(b.lines), b.data.shape[1]) if isinstance(b.data, np.ndarray)
                   else np.asarray([len(v) for v in b.data]) for b in self.blocks]
        lengths = np.concatenate(lengths).astype(np.int64) if lengths else np.zeros(0, np.int64)
        lines = (np.concatenate([b.lines for b in self.blocks]) if self.blocks
                 else np.zeros(0, np.int64))
        data = None
        if len(lengths) and (lengths == lengths[0]).all():
            data = np.concatenate([np.asarray(b.data, dtype=np.float64) for b in self.blocks])
        elif not len(lengths):
            data = np.zeros((0, 0))
        return Matrix(self.name, self.line, lengths, lines, data)


@dataclass
class MFile:
    """Assignments found: scalars/strings by name, matrices by name, the function name, and
    the unit conversions (`._unit_code.Conversion`) in file order."""

    path: str
    function: str | None = None
    scalars: dict[str, tuple[int, float | str]] = field(default_factory=dict)
    matrices: dict[str, Matrix] = field(default_factory=dict)
    last_line: int = 1
    conversions: list = field(default_factory=list)


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
        self.open: _Rows | None = None
        self.closer = "]"
        self.row: list[float] = []
        self.row_line = 0
        self.declared: set = set()  # index names bound by idx_bus / idx_brch

    def parse(self, text: str) -> MFile:
        pending, pending_line = "", 0
        lines = text.splitlines()
        number = 0
        while number < len(lines):
            number += 1
            code, continued = _strip_comment(lines[number - 1])
            if self.open is not None:
                self._matrix_text(code, number, continued)
            else:
                pending_line = pending_line or number
                pending += code + " "
                if not continued:
                    self._statement(pending.strip(), pending_line)
                    pending, pending_line = "", 0
            if self.open is not None and not continued and not self.row:
                number = self._inner_lines(lines, number)
        self.result.last_line = max(len(lines), 1)
        if self.open is not None:
            what = "matrix" if self.closer == "]" else "cell array"
            raise FormatError(self.path, self.open.line, f"{what} mpc.{self.open.name} is never "
                              f"closed with '{self.closer}' (truncated file?)",
                              f"end it with '{self.closer};'")
        if pending.strip():
            raise FormatError(self.path, pending_line, "file ends inside a '...' continuation")
        return self.result

    def _inner_lines(self, lines: list[str], number: int) -> int:
        """Read the lines after line ``number`` up to the next one holding the closing
        bracket (they cannot close the open matrix): numbers in bulk where they are plain,
        cell arrays skipped. Returns the last line read."""
        end = number
        while end < len(lines) and self.closer not in lines[end]:
            end += 1
        if self.closer == "}":
            return end
        for start in range(number, end, _CHUNK):
            stop = min(start + _CHUNK, end)
            block = None if self.row else read_block(lines[start:stop], start + 1)
            if block is not None:
                self.open.add_block(block)
                continue
            for k in range(start, stop):
                code, continued = _strip_comment(lines[k])
                self._matrix_text(code, k + 1, continued)
        return end

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
            conversion = None if assign else recognize(code, number, self.declared)
            if conversion is not None:
                self.result.conversions.append(conversion)
                return
            if assign is None:
                case = self.result.function or "CASE"
                raise FormatError(self.path, number, f"unsupported statement {code[:60]!r}",
                                  "a case file may only assign mpc.NAME = value (and convert "
                                  "units as MATPOWER's distribution cases do); other MATLAB code "
                                  "is not run here: save the case as MATPOWER loads it (mpc = "
                                  f"loadcase('{case}'); savecase('{case}_pu.m', mpc)) and read "
                                  "that file")
            name, rest = assign.groups()
            if rest and rest[0] in "[{":
                self.open, self.closer = _Rows(name, number), "]" if rest[0] == "[" else "}"
                return self._matrix_text(rest[1:], number, False)
            code = self._scalar(name, rest, number)

    def _scalar(self, name: str, rest: str, number: int) -> str:
        end = _find_outside_strings(rest, ";")
        value, remainder = (rest, "") if end < 0 else (rest[:end], rest[end + 1:])
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":  # 'char', "string"
            self.result.scalars[name] = (number, value[1:-1])
        elif _NUMBER.fullmatch(value):
            self.result.scalars[name] = (number, _finite_or_inf_literal(self.path, number, value))
        else:
            raise FormatError(self.path, number, f"unsupported value {value[:40]!r} for mpc.{name}",
                              "write a number, a 'string' or a [matrix]")
        return remainder.strip()

    def _matrix_text(self, code: str, number: int, continued: bool) -> None:
        """One line (code only) inside the open matrix or cell array."""
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
            self.result.matrices[self.open.name], self.open = self.open.matrix(), None
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
