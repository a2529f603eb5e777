"""MATPOWER version-2 case files (``.m``) to a PowerCase, following PYPOWER's ``runpf`` set-up.

Kept: ``mpc.baseMVA``, ``mpc.bus``, ``mpc.gen``, ``mpc.branch``; ignored: ``mpc.gencost``,
``mpc.areas``, cell arrays and other extra fields; refused: ``mpc.dcline`` (DC lines change the
flows) and versions other than 2. As PYPOWER does, out-of-service branches and generators and
isolated buses (type 4, with their branches and generators) are dropped, a PV or slack bus with
no in-service generator becomes PQ, and when the slack bus loses its generator so the first PV
bus becomes the slack; each such change is recorded in ``PowerCase.notes``. A file with no
reference bus (type 3) at all is refused: the choice of slack is the modeller's.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from .._errors import FormatError
from .._source import read_source
from ._case import PowerCase
from ._matpower_build import Table, build_case
from ._mfile import Matrix, MFile, parse_mfile
from ._unit_code import apply as apply_conversions

__all__ = ["read_matpower"]

#: Columns needed (MATPOWER: bus 13 columns; gen through GEN_STATUS/PMIN; branch through BR_STATUS).
_COLUMNS = {"bus": 13, "gen": 10, "branch": 11}


def read_matpower(path_or_text: str | os.PathLike) -> PowerCase:
    """Parse a MATPOWER version-2 case file (or its text) into a :class:`PowerCase` (per unit)."""
    path, text = read_source(path_or_text)
    mfile = parse_mfile(path, text)
    if not mfile.scalars and not mfile.matrices:  # empty, or only comments and a function line
        raise FormatError(path, mfile.last_line, "the file assigns no mpc field: it holds no "
                          "case (no mpc.baseMVA, mpc.bus, mpc.gen or mpc.branch)",
                          "is this a MATPOWER case file? Give one that MATPOWER's loadcase reads")
    version = mfile.scalars.get("version")
    if version is not None and str(version[1]).strip() not in ("2", "2.0"):
        raise FormatError(path, version[0], f"MATPOWER case version {version[1]!r} is not "
                          "supported", "convert it to version 2 (MATPOWER's loadcase/savecase)")
    if "dcline" in mfile.matrices and len(mfile.matrices["dcline"].lines):
        raise FormatError(path, mfile.matrices["dcline"].line, "mpc.dcline (DC lines) is not "
                          "supported", "remove the DC lines or model them as injections")
    line, base = _base_mva(mfile)
    # Inf passes the M-file parser (it is MATPOWER's 'no limit' in matrices) but not here:
    # an infinite base turns every per-unit value into zero.
    if not isinstance(base, float) or not math.isfinite(base) or not base > 0.0:
        raise FormatError(path, line, f"mpc.baseMVA must be a finite positive number, got "
                          f"{base!r}", "write the system MVA base, e.g. 'mpc.baseMVA = 100;'")
    notes = apply_conversions(path, mfile.conversions, mfile.matrices, base)
    rows = {key: _rows(path, mfile.matrices.get(key), key, mfile.last_line) for key in _COLUMNS}
    name = mfile.function or (Path(path).stem if path != "<string>" else "case")
    return build_case(path, base, name, rows["bus"], rows["gen"], rows["branch"], notes)


def _base_mva(mfile: MFile) -> tuple[int, float | str]:
    """``(line, value)`` of the last assignment to ``mpc.baseMVA``: a number, or a 1 x 1
    matrix (``[100]``, which MATLAB reads as the number)."""
    path, matrix = mfile.path, mfile.matrices.get("baseMVA")
    scalar = mfile.scalars.get("baseMVA")
    if matrix is not None and (scalar is None or matrix.line > scalar[0]):
        if matrix.data is None or matrix.data.shape != (1, 1):
            raise FormatError(path, matrix.line, "mpc.baseMVA must be one number, got a "
                              f"matrix of {len(matrix.lines)} row(s)",
                              "write 'mpc.baseMVA = 100;'")
        return matrix.line, float(matrix.data[0, 0])
    if scalar is None:
        raise FormatError(path, mfile.last_line, "mpc.baseMVA is missing",
                          "add 'mpc.baseMVA = 100;'")
    return scalar


def _rows(path: str, matrix: Matrix | None, key: str, last_line: int) -> Table:
    """The rows of ``mpc.<key>``, checked: equal rows, enough columns,
    finite numbers where the power flow reads them."""
    if matrix is None or not len(matrix.lines):
        raise FormatError(path, matrix.line if matrix else last_line,
                          f"mpc.{key} is missing or empty", f"add the mpc.{key} matrix")
    width = int(matrix.lengths[0])
    odd = np.flatnonzero(matrix.lengths != width)
    if len(odd):
        line, length = int(matrix.lines[odd[0]]), int(matrix.lengths[odd[0]])
        raise FormatError(path, line, f"mpc.{key} row has {length} columns, the first row "
                          f"has {width}", "give every row the same columns")
    if width < _COLUMNS[key]:
        raise FormatError(path, int(matrix.lines[0]), f"mpc.{key} has {width} columns, "
                          f"MATPOWER version 2 needs at least {_COLUMNS[key]}",
                          "add the missing columns")
    used = np.isfinite(matrix.data[:, _USED[key]])
    bad_rows = np.flatnonzero(~used.all(axis=1))
    if len(bad_rows):
        i = bad_rows[0]
        bad = _USED[key][int(np.argmin(used[i]))]
        raise FormatError(path, int(matrix.lines[i]), f"mpc.{key} column {bad + 1} is "
                          f"{float(matrix.data[i, bad])}", "this column needs a finite number")
    return Table(matrix.data, matrix.lines)


# The columns the power flow reads (0-based): they must be finite numbers. Others, such as
# MATPOWER's Inf generator limits, are ignored.
_USED = {"bus": (0, 1, 2, 3, 4, 5, 7, 8, 9), "gen": (0, 1, 2, 5, 7),
         "branch": (0, 1, 2, 3, 4, 8, 9, 10)}
