"""Bulk reading of the plain lines of a MATPOWER matrix: numbers only, no comment, string or
``...`` continuation. numpy converts all values at once; anything it cannot vouch for is
answered None, and the caller reads those lines one by one (which names the bad value)."""
from __future__ import annotations

import io
import re

import numpy as np

__all__ = ["NUMBER", "Block", "read_block"]

NUMBER = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eEdD][+-]?\d+)?|[Ii]nf|NaN|nan)")
#: A character the bulk path leaves to the line-by-line reader (comments, strings, brackets,
#: ``...``, letters other than exponents and Inf/NaN, unusual blanks).
_UNUSUAL = re.compile(r"[^0-9+\-.eEdDIinfNa \t\n,;]")
#: A value spelled with letters other than an exponent: must be Inf or NaN exactly.
_WORD = re.compile(r"[^\s,;]*[IiNnaf][^\s,;]*")
_EXPONENT_D = str.maketrans("dD", "ee")
_ROW_BREAKS = str.maketrans(";,", "\n ")


class Block:
    """Rows: ``data`` (rows x columns; a list of rows where their lengths differ) and
    ``lines``, the 1-based line of each row."""

    def __init__(self, data: np.ndarray, lines: np.ndarray):
        self.data, self.lines = data, lines


def read_block(lines: list[str], first_line: int) -> Block | None:
    """The rows of ``lines`` (file lines from ``first_line`` on, inside one matrix), or None
    when they are not plain rows of equal length (the caller then reads them one by one)."""
    text = "\n".join(lines)
    if "..." in text or _UNUSUAL.search(text):
        return None
    if "d" in text or "D" in text:
        text = text.translate(_EXPONENT_D)
    words = _WORD.findall(text) if any(c in text for c in "IiNnaf") else []
    if not all(NUMBER.fullmatch(w) for w in words):
        return None
    rows = text.translate(_ROW_BREAKS)
    if not rows.strip():
        return Block(np.zeros((0, 0)), np.zeros(0, dtype=np.int64))
    try:
        data = np.loadtxt(io.StringIO(rows), dtype=np.float64, comments=None, ndmin=2)
    except ValueError:  # rows of unequal length, or a malformed number
        return None
    spelled_inf = sum("inf" in w.lower() for w in words)
    if np.count_nonzero(np.isinf(data)) != spelled_inf:  # an overflow such as 1e400
        return None
    row_lines = _row_lines(lines, first_line, len(data))
    return None if row_lines is None else Block(data, row_lines)


def _row_lines(lines: list[str], first_line: int, count: int) -> np.ndarray | None:
    """The line of each of ``count`` rows: one row per non-blank line, or ``;`` separated."""
    filled = [i for i, line in enumerate(lines) if line.strip(" \t,;")]
    if len(filled) != count:  # some line holds several rows
        filled = [i for i, line in enumerate(lines) for part in line.split(";")
                  if part.strip(" \t,")]
    return np.asarray(filled, dtype=np.int64) + first_line if len(filled) == count else None
