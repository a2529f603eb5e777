"""Results as pandas tables (``to_frame()``) and CSV files (``--csv``).

The tables hold the numbers of the results' JSON documents, under the names users of the
domain's tools know (``V(n1)``, ``I(V1)``; heads and flows by EPANET id; buses and branches
by number). pandas is an optional extra, imported only when a table is asked for.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence

__all__ = ["STATUS", "NamedTables", "PointTable", "SweepTables", "pandas", "point_row",
           "points_frame", "stack_frames", "write_csv"]

#: Per-point solve status columns every table of a solve or sweep ends with.
STATUS = ("converged", "iterations", "residual_norm")


def pandas() -> Any:
    """The pandas module, or an ImportError saying how to install the optional extra."""
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("results as tables (to_frame, --csv) need pandas, which is not "
                          "installed: pip install 'simgraph[tables]' (or pip install pandas)"
                          ) from None
    return pd


def point_row(point: Mapping, labels: Mapping[str, Any]) -> dict:
    """One table row from one point of a JSON document: each entry of group ``key`` becomes
    column ``labels[key].format(name)`` (a tuple of formats: one column per component of a
    vector value), then the :data:`STATUS` values the point has."""
    row = {}
    for key, label in labels.items():
        for name, value in point.get(key, {}).items():
            if isinstance(label, str):
                row[label.format(name)] = value
            else:
                row.update((fmt.format(name), v) for fmt, v in zip(label, value))
    row.update((key, point[key]) for key in STATUS if key in point)
    return row


def points_frame(points: Sequence[Mapping], labels: Mapping[str, Any], index=None) -> Any:
    """A table with one row per point (see :func:`point_row`); ``index``: a pandas Index."""
    return pandas().DataFrame([point_row(p, labels) for p in points], index=index)


def stack_frames(frames: Sequence[Any], values: Sequence[float], name: str) -> Any:
    """Tables of a sweep's members stacked into one, under an outer index level ``name``
    holding each member's swept value."""
    return pandas().concat(list(frames), keys=[float(v) for v in values], names=[name])


def write_csv(tables: Mapping[str, Any], folder: str | os.PathLike) -> list[Path]:
    """Write each table to ``folder/NAME.csv`` (the folder is created); the paths written."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, frame in tables.items():
        paths.append(out / f"{name}.csv")
        frame.to_csv(paths[-1])
    return paths


class PointTable:
    """Mixin of a single solve's result with a ``to_json()`` document: ``to_frame()`` is one
    row, one column per named result (labels :attr:`LABELS`, as :func:`point_row`)."""

    LABELS: dict = {}

    def table_point(self) -> dict:
        """The document the row is read from (default: ``to_json()``)."""
        return self.to_json()

    def to_frame(self) -> Any:
        """The solution as a one-row pandas DataFrame holding the numbers of ``to_json()``
        and the solve status. Needs pandas (``pip install 'simgraph[tables]'``)."""
        index = pandas().RangeIndex(1, name="point")
        return points_frame([self.table_point()], self.LABELS, index)


class NamedTables:
    """Mixin of a result with several tables: ``to_frames()`` returns ``{name: DataFrame}``
    (names :attr:`TABLES`, the first the main one) and ``to_frame(name)`` picks one."""

    TABLES: tuple = ()

    def to_frame(self, table: str | None = None) -> Any:
        """The table ``table`` (default: the first of :attr:`TABLES`) as a pandas DataFrame.
        Needs pandas (``pip install 'simgraph[tables]'``)."""
        name = table or self.TABLES[0]
        if name not in self.TABLES:
            raise KeyError(f"no table {name!r}; the tables are {', '.join(self.TABLES)}")
        return self.to_frames()[name]


class SweepTables(NamedTables):
    """Mixin of a sweep whose members (``sweep[i]``) have :class:`NamedTables`: each table
    stacks the members' under an outer index level named ``parameter``, holding ``values``."""

    def to_frames(self) -> dict:
        """``{name: DataFrame}`` of the members' tables stacked by swept value."""
        members = [self[i].to_frames() for i in range(len(self))]
        return {name: stack_frames([m[name] for m in members], self.values, self.parameter)
                for name in self.TABLES}
