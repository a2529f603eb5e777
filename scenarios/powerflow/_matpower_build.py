"""The checked ``mpc.bus``, ``mpc.gen`` and ``mpc.branch`` tables of a MATPOWER case to a
PowerCase, following PYPOWER's ``runpf`` set-up (see :mod:`._matpower`).

Whole columns are checked and converted with numpy; when a check fails, the rows are walked
one by one to name the first bad one, so the error is the one a row-by-row reader gives.
"""
from __future__ import annotations

import numpy as np

from .._errors import FormatError
from ._case import Branch, Bus, Generator, PowerCase, impedance_problem, tap_problem

__all__ = ["Table", "build_case"]

_TYPE_NAMES = {1: "PQ", 2: "PV", 3: "slack"}


class Table:
    """A matrix of a case file: ``data`` (rows x columns) and the 1-based ``lines`` of its rows."""

    def __init__(self, data: np.ndarray, lines: np.ndarray):
        self.data, self.lines = data, lines

    def first_line(self) -> int:
        return int(self.lines[0])

    def rows(self, columns: int):
        """``(line, first columns)`` of every row, as Python numbers (for the error walk)."""
        return zip(self.lines.tolist(), self.data[:, :columns].tolist())


def build_case(path: str, base: float, name: str, bus: Table, gen: Table,
               branch: Table, notes: list | tuple = ()) -> PowerCase:
    """The PowerCase of the three tables (per unit on ``base``); ``notes``: what the reader
    changed before (unit conversions), first in the case's notes."""
    builder = _Builder(path, base)
    builder.notes.extend(notes)
    return builder.build(name, bus, gen, branch)


#: Why two bus numbers of the file can read as one (numbers are doubles, as in MATLAB).
_INEXACT = (" (numbers above 2^53 = 9007199254740992 are not exact as doubles, so distinct "
            "numbers in the file can read as the same one: renumber the buses)")


def _not_bus_numbers(values: np.ndarray) -> np.ndarray:
    return (values != np.trunc(values)) | (values <= 0)


def _ints(values: np.ndarray) -> list[int]:
    """Whole numbers as Python ints (exact also beyond int64)."""
    if len(values) and np.abs(values).max() >= 2.0 ** 62:
        return [int(v) for v in values.tolist()]
    return values.astype(np.int64).tolist()


class _Builder:
    def __init__(self, path: str, base: float) -> None:
        self.path, self.base = path, base
        self.notes: list[str] = []

    def error(self, line: int, problem: str, hint: str = "") -> FormatError:
        return FormatError(self.path, line, problem, hint)

    def _bus_id(self, line: int, value: float, what: str) -> int:
        if value != int(value) or value <= 0:   # repr: 1.0000000000000002 is not "1"
            raise self.error(line, f"{what} {value!r} is not a positive integer bus number")
        return int(value)

    def build(self, name: str, bus: Table, gen: Table, branch: Table) -> PowerCase:
        ids, kinds = bus.data[:, 0], bus.data[:, 1]
        self._check_buses(bus)
        isolated = kinds == 4
        if isolated.any():
            self.notes.append(f"dropped {int(isolated.sum())} isolated bus(es) (type 4) with "
                              f"their branches and generators: {sorted(_ints(ids[isolated]))}")
        g = self._generators(gen, ids, ids[isolated])
        kinds = self._bus_types(bus, kinds, np.isin(ids, g["bus"]))
        kept = np.flatnonzero(~isolated)
        order = np.argsort(ids, kind="stable")
        g_row = order[np.searchsorted(ids, g["bus"], sorter=order)]   # bus row of each gen
        buses = self._buses(bus, kinds, kept, g, g_row)
        new_index = np.cumsum(~isolated) - 1
        generators = tuple(map(Generator, _ints(g["bus"]), new_index[g_row].tolist(),
                               *(g[k].tolist() for k in ("pg", "qg", "vg", "qmax", "qmin"))))
        branches = self._branches(branch, ids, isolated, order, new_index)
        return PowerCase(name, self.base, buses, branches, generators, tuple(self.notes))

    def _check_buses(self, bus: Table) -> None:
        ids, kinds = bus.data[:, 0], bus.data[:, 1]
        repeated = np.ones(len(ids), dtype=bool)
        repeated[np.unique(ids, return_index=True)[1]] = False
        if (_not_bus_numbers(ids) | repeated | ~np.isin(kinds, (1, 2, 3, 4))).any():
            seen: set[int] = set()
            for line, (number, kind) in bus.rows(2):
                bus_id = self._bus_id(line, number, "bus number")
                if bus_id in seen:
                    raise self.error(line, f"duplicate bus number {bus_id}",
                                     "bus numbers must be unique" + _INEXACT * (bus_id > 2 ** 53))
                if kind not in (1, 2, 3, 4):
                    raise self.error(line, f"bus {bus_id} has type {kind:g}",
                                     "use 1 (PQ), 2 (PV), 3 (slack) or 4 (isolated)")
                seen.add(bus_id)

    def _generators(self, gen: Table, ids: np.ndarray, isolated_ids: np.ndarray) -> dict:
        """In-service generators at kept buses, file order: ``bus``, per-unit ``pg``, ``qg``
        and ``vg``."""
        at = gen.data[:, 0]
        if (_not_bus_numbers(at) | ~np.isin(at, ids)).any():
            known = set(_ints(ids))
            for line, (number,) in gen.rows(1):
                bus_id = self._bus_id(line, number, "generator bus")
                if bus_id not in known:
                    raise self.error(line, f"generator at unknown bus {bus_id}", "fix GEN_BUS")
        on = gen.data[:, 7] > 0
        at_isolated = on & np.isin(at, isolated_ids)
        if (~on).any():
            self.notes.append(f"dropped {int((~on).sum())} out-of-service generator(s)")
        if at_isolated.any():
            self.notes.append(f"dropped {int(at_isolated.sum())} generator(s) at isolated buses")
        rows = gen.data[on & ~at_isolated]
        limits = np.where(np.isnan(rows[:, 3:5]), [np.inf, -np.inf], rows[:, 3:5]) / self.base
        return {"bus": rows[:, 0], "pg": rows[:, 1] / self.base, "qg": rows[:, 2] / self.base,
                "vg": rows[:, 5], "line": gen.lines[on & ~at_isolated],
                "qmax": limits[:, 0], "qmin": limits[:, 1]}

    def _bus_types(self, bus: Table, kinds: np.ndarray, with_gen: np.ndarray) -> np.ndarray:
        """PYPOWER ``bustypes``: PV/slack buses need an in-service generator; one slack at least."""
        if not (kinds == 3).any():
            raise self.error(bus.first_line(), "mpc.bus has no reference bus (type 3)",
                             "mark the slack bus with type 3 in the second column of mpc.bus")
        demoted = np.isin(kinds, (2, 3)) & ~with_gen
        for number, kind in zip(_ints(bus.data[demoted, 0]), kinds[demoted].tolist()):
            self.notes.append(f"bus {number} ({_TYPE_NAMES[int(kind)]}) has no in-service "
                              "generator: treated as PQ")
        kinds = np.where(demoted, 1.0, kinds)
        if not (kinds == 3).any():
            pv = np.flatnonzero(kinds == 2)
            if not len(pv):
                raise self.error(bus.first_line(), "the case has no slack bus and no PV bus "
                                 "with an in-service generator", "set one generator bus to type 3")
            kinds[pv[0]] = 3
            self.notes.append(f"no slack bus with a generator: PV bus {int(bus.data[pv[0], 0])} "
                              "is the slack")
        return kinds

    def _buses(self, bus: Table, kinds: np.ndarray, kept: np.ndarray, g: dict,
               g_row: np.ndarray) -> tuple[Bus, ...]:
        """The kept buses; the last generator's Vg is the set point, as in PYPOWER."""
        count = np.bincount(g_row, minlength=len(kinds))
        pg, qg = np.zeros(len(kinds)), np.zeros(len(kinds))
        np.add.at(pg, g_row, g["pg"])          # in file order, as Python's sum
        np.add.at(qg, g_row, g["qg"])
        last = np.full(len(kinds), -1)
        np.maximum.at(last, g_row, np.arange(len(g_row)))
        vset = g["vg"][last] if len(g_row) else np.zeros(len(kinds))
        disagree = np.zeros(len(kinds), dtype=bool)
        disagree[g_row[g["vg"] != vset[g_row]]] = True
        self._check_set_points(kinds, last, g)
        d, names = bus.data[kept], [_TYPE_NAMES[int(k)] for k in kinds[kept].tolist()]
        columns = [_ints(d[:, 0]), names, count[kept].tolist(), pg[kept].tolist(),
                   qg[kept].tolist(), vset[kept].tolist(), disagree[kept].tolist()]
        per_unit = [(d[:, k] / self.base).tolist() for k in (2, 3, 4, 5)]
        as_is = [d[:, k].tolist() for k in (9, 7, 8)]
        return tuple(self._bus(i, *row) for i, row in enumerate(zip(*columns, *per_unit, *as_is)))

    def _check_set_points(self, kinds: np.ndarray, last: np.ndarray, g: dict) -> None:
        """Refuse a voltage set point (the last generator's VG at a PV or slack bus) that is
        not positive: Newton would run on it and fail without saying why."""
        held = np.isin(kinds, (2, 3)) & (last >= 0)
        bad = last[held][g["vg"][last[held]] <= 0.0]
        if len(bad):
            k = int(bad.min())
            raise self.error(int(g["line"][k]), f"generator at bus {_ints(g['bus'][k:k + 1])[0]}"
                             f" has VG = {g['vg'][k]:g}, the voltage set point of its bus",
                             "give the set point in p.u., e.g. 1.0 (column 6 of mpc.gen)")

    def _bus(self, i, number, kind, count, pg, qg, vset, disagree, pd, qd, gs, bs, kv, vm, va):
        vset = vset if count and kind != "PQ" else None
        if disagree and kind != "PQ":
            self.notes.append(f"bus {number}: generators disagree on Vg, using the last ({vset})")
        pg = None if kind == "slack" else (pg if count else 0)
        qg = (qg if count else 0) if kind == "PQ" else None
        return Bus(i, number, kind, pd, qd, pg, qg, vset, va if kind == "slack" else None,
                   gs, bs, kv, count, vm, va)

    def _branches(self, branch: Table, ids: np.ndarray, isolated: np.ndarray,
                  order: np.ndarray, new_index: np.ndarray) -> tuple[Branch, ...]:
        d = branch.data
        ends = d[:, :2]
        if (_not_bus_numbers(ends) | ~np.isin(ends, ids)).any():
            self._explain_branch_ends(branch, set(_ints(ids)))
        end_rows = order[np.searchsorted(ids, ends, sorter=order)]
        on = d[:, 10] > 0
        at_isolated = on & isolated[end_rows].any(axis=1)
        if (~on).any():
            self.notes.append(f"dropped {int((~on).sum())} out-of-service branch(es)")
        if at_isolated.any():
            self.notes.append(f"dropped {int(at_isolated.sum())} branch(es) at isolated buses")
        keep = on & ~at_isolated
        self._check_impedance(branch, keep)
        self._check_taps(branch, keep)
        d, index = d[keep], new_index[end_rows[keep]]
        tap, shift = d[:, 8], d[:, 9]
        columns = [_ints(d[:, 0]), _ints(d[:, 1]), index[:, 0].tolist(), index[:, 1].tolist(),
                   d[:, 2].tolist(), d[:, 3].tolist(), d[:, 4].tolist(),
                   np.where(tap != 0.0, tap, 1.0).tolist(), shift.tolist(),
                   ((tap != 0.0) | (shift != 0.0)).tolist(), (d[:, 5] / self.base).tolist()]
        return tuple(map(Branch, range(len(d)), *columns))

    def _check_impedance(self, branch: Table, keep: np.ndarray) -> None:
        """Refuse an in-service branch whose series admittance cannot be computed."""
        r, x = branch.data[:, 2], branch.data[:, 3]
        with np.errstate(over="ignore", under="ignore"):
            z2 = r * r + x * x
        for k in np.flatnonzero(keep & ~((z2 > 0.0) & np.isfinite(z2)))[:1].tolist():
            problem, hint = impedance_problem(float(r[k]), float(x[k]))
            ends = "-".join(map(str, _ints(branch.data[k, :2])))
            raise self.error(int(branch.lines[k]), f"branch {ends}: {problem}",
                             hint.replace("out of service", "out of service (column 11 = 0)"))

    def _check_taps(self, branch: Table, keep: np.ndarray) -> None:
        """Refuse an in-service branch whose tap ratio (column 9) is negative."""
        tap = branch.data[:, 8]
        for k in np.flatnonzero(keep & (tap < 0.0))[:1].tolist():
            problem, hint = tap_problem(float(tap[k]))
            ends = "-".join(map(str, _ints(branch.data[k, :2])))
            raise self.error(int(branch.lines[k]), f"branch {ends}: {problem} (TAP, column 9)",
                             hint)

    def _explain_branch_ends(self, branch: Table, known: set) -> None:
        for line, row in branch.rows(2):
            ends = [self._bus_id(line, row[k], "branch end") for k in (0, 1)]
            for end in ends:
                if end not in known:
                    raise self.error(line, f"branch to unknown bus {end}", "fix F_BUS/T_BUS")
