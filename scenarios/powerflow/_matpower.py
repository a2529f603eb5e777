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

from .._errors import FormatError
from .._source import read_source
from ._case import Branch, Bus, Generator, PowerCase
from ._mfile import Matrix, parse_mfile

__all__ = ["read_matpower"]

#: Columns needed (MATPOWER: bus 13 columns; gen through GEN_STATUS/PMIN; branch through BR_STATUS).
_COLUMNS = {"bus": 13, "gen": 10, "branch": 11}
_TYPE_NAMES = {1: "PQ", 2: "PV", 3: "slack"}


def read_matpower(path_or_text: str | os.PathLike) -> PowerCase:
    """Parse a MATPOWER version-2 case file (or its text) into a :class:`PowerCase` (per unit)."""
    path, text = read_source(path_or_text)
    mfile = parse_mfile(path, text)
    version = mfile.scalars.get("version")
    if version is not None and str(version[1]).strip() not in ("2", "2.0"):
        raise FormatError(path, version[0], f"MATPOWER case version {version[1]!r} is not "
                          "supported", "convert it to version 2 (MATPOWER's loadcase/savecase)")
    if "dcline" in mfile.matrices and mfile.matrices["dcline"].rows:
        raise FormatError(path, mfile.matrices["dcline"].line, "mpc.dcline (DC lines) is not "
                          "supported", "remove the DC lines or model them as injections")
    if "baseMVA" not in mfile.scalars:
        raise FormatError(path, mfile.last_line, "mpc.baseMVA is missing",
                          "add 'mpc.baseMVA = 100;'")
    line, base = mfile.scalars["baseMVA"]
    if not isinstance(base, float) or not base > 0.0:
        raise FormatError(path, line, f"mpc.baseMVA must be a positive number, got {base!r}")
    rows = {key: _rows(path, mfile.matrices.get(key), key, mfile.last_line) for key in _COLUMNS}
    name = mfile.function or (Path(path).stem if path != "<string>" else "case")
    return _Builder(path, base).build(name, rows["bus"], rows["gen"], rows["branch"])


def _rows(path: str, matrix: Matrix | None, key: str, last_line: int):
    if matrix is None or not matrix.rows:
        raise FormatError(path, matrix.line if matrix else last_line,
                          f"mpc.{key} is missing or empty", f"add the mpc.{key} matrix")
    width = len(matrix.rows[0][1])
    for line, row in matrix.rows:
        if len(row) != width:
            raise FormatError(path, line, f"mpc.{key} row has {len(row)} columns, the first row "
                              f"has {width}", "give every row the same columns")
    if width < _COLUMNS[key]:
        raise FormatError(path, matrix.rows[0][0], f"mpc.{key} has {width} columns, MATPOWER "
                          f"version 2 needs at least {_COLUMNS[key]}", "add the missing columns")
    for line, row in matrix.rows:
        bad = next((k for k in _USED[key] if not math.isfinite(row[k])), None)
        if bad is not None:
            raise FormatError(path, line, f"mpc.{key} column {bad + 1} is {row[bad]}",
                              "this column needs a finite number")
    return matrix.rows


# The columns the power flow reads (0-based): they must be finite numbers. Others, such as
# MATPOWER's Inf generator limits, are ignored.
_USED = {"bus": (0, 1, 2, 3, 4, 5, 7, 8, 9), "gen": (0, 1, 2, 5, 7),
         "branch": (0, 1, 2, 3, 4, 8, 9, 10)}


class _Builder:
    def __init__(self, path: str, base: float) -> None:
        self.path, self.base = path, base
        self.notes: list[str] = []

    def error(self, line: int, problem: str, hint: str = "") -> FormatError:
        return FormatError(self.path, line, problem, hint)

    def _bus_id(self, line: int, value: float, what: str) -> int:
        if value != int(value) or value <= 0:
            raise self.error(line, f"{what} {value:g} is not a positive integer bus number")
        return int(value)

    def build(self, name: str, bus_rows, gen_rows, branch_rows) -> PowerCase:
        types, isolated = {}, set()
        for line, row in bus_rows:
            bus_id = self._bus_id(line, row[0], "bus number")
            if bus_id in types:
                raise self.error(line, f"duplicate bus number {bus_id}", "bus numbers must be unique")
            if row[1] not in (1, 2, 3, 4):
                raise self.error(line, f"bus {bus_id} has type {row[1]:g}",
                                 "use 1 (PQ), 2 (PV), 3 (slack) or 4 (isolated)")
            types[bus_id] = int(row[1])
            if types[bus_id] == 4:
                isolated.add(bus_id)
        if isolated:
            self.notes.append(f"dropped {len(isolated)} isolated bus(es) (type 4) with their "
                              f"branches and generators: {sorted(isolated)}")
        gens = self._generators(gen_rows, types, isolated)
        types = self._bus_types(types, isolated, gens, bus_rows)
        at_bus: dict[int, list] = {}
        for gen in gens:
            at_bus.setdefault(gen[0], []).append(gen)
        kept = [(line, row) for line, row in bus_rows if int(row[0]) not in isolated]
        index = {int(row[0]): i for i, (_, row) in enumerate(kept)}
        buses = tuple(self._bus(i, row, types[int(row[0])], at_bus.get(int(row[0]), []))
                      for i, (_, row) in enumerate(kept))
        generators = tuple(Generator(b, index[b], pg, qg, vg) for b, pg, qg, vg in gens)
        branches = self._branches(branch_rows, index, isolated)
        return PowerCase(name, self.base, buses, branches, generators, tuple(self.notes))

    def _generators(self, gen_rows, types: dict, isolated: set) -> list[tuple]:
        """In-service generators at kept buses: (bus, Pg, Qg, Vg) per unit, file order."""
        gens, off, at_isolated = [], 0, 0
        for line, row in gen_rows:
            bus_id = self._bus_id(line, row[0], "generator bus")
            if bus_id not in types:
                raise self.error(line, f"generator at unknown bus {bus_id}", "fix GEN_BUS")
            if not row[7] > 0:
                off += 1
            elif bus_id in isolated:
                at_isolated += 1
            else:
                gens.append((bus_id, row[1] / self.base, row[2] / self.base, row[5]))
        if off:
            self.notes.append(f"dropped {off} out-of-service generator(s)")
        if at_isolated:
            self.notes.append(f"dropped {at_isolated} generator(s) at isolated buses")
        return gens

    def _bus_types(self, types: dict, isolated: set, gens: list, bus_rows) -> dict:
        """PYPOWER ``bustypes``: PV/slack buses need an in-service generator; one slack at least."""
        if 3 not in types.values():
            raise self.error(bus_rows[0][0], "mpc.bus has no reference bus (type 3)",
                             "mark the slack bus with type 3 in the second column of mpc.bus")
        with_gen = {g[0] for g in gens}
        result = {}
        for bus_id, kind in types.items():
            if bus_id in isolated:
                continue
            if kind in (2, 3) and bus_id not in with_gen:
                self.notes.append(f"bus {bus_id} ({_TYPE_NAMES[kind]}) has no in-service "
                                  "generator: treated as PQ")
                kind = 1
            result[bus_id] = _TYPE_NAMES[kind]
        if "slack" not in result.values():
            first_pv = next((b for b, kind in result.items() if kind == "PV"), None)
            if first_pv is None:
                raise self.error(bus_rows[0][0], "the case has no slack bus and no PV bus with "
                                 "an in-service generator", "set one generator bus to type 3")
            result[first_pv] = "slack"
            self.notes.append(f"no slack bus with a generator: PV bus {first_pv} is the slack")
        return result

    def _bus(self, i: int, row: list[float], kind: str, mine: list) -> Bus:
        """The bus of ``row``; ``mine``: its in-service generators."""
        bus_id = int(row[0])
        vset = mine[-1][3] if mine and kind != "PQ" else None    # the last one wins, as in PYPOWER
        if len({g[3] for g in mine}) > 1 and kind != "PQ":
            self.notes.append(f"bus {bus_id}: generators disagree on Vg, using the last ({vset})")
        pg = None if kind == "slack" else sum(g[1] for g in mine)
        qg = sum(g[2] for g in mine) if kind == "PQ" else None
        return Bus(i, bus_id, kind, row[2] / self.base, row[3] / self.base, pg, qg, vset,
                   row[8] if kind == "slack" else None, row[4] / self.base, row[5] / self.base,
                   row[9], len(mine), row[7], row[8])

    def _branches(self, branch_rows, index: dict, isolated: set) -> tuple[Branch, ...]:
        branches, off, at_isolated = [], 0, 0
        for line, row in branch_rows:
            ends = [self._bus_id(line, row[k], "branch end") for k in (0, 1)]
            for end in ends:
                if end not in index and end not in isolated:
                    raise self.error(line, f"branch to unknown bus {end}", "fix F_BUS/T_BUS")
            if not row[10] > 0:
                off += 1
            elif any(end in isolated for end in ends):
                at_isolated += 1
            else:
                f, t = ends
                tap = row[8] if row[8] != 0.0 else 1.0
                branches.append(Branch(len(branches), f, t, index[f], index[t], row[2], row[3],
                                       row[4], tap, row[9], row[8] != 0.0 or row[9] != 0.0,
                                       rate_a=row[5] / self.base))
        if off:
            self.notes.append(f"dropped {off} out-of-service branch(es)")
        if at_isolated:
            self.notes.append(f"dropped {at_isolated} branch(es) at isolated buses")
        return tuple(branches)
