"""Parameter sweeps shared by the equations, thermal and truss scenarios.

A sweep is one batched solve (``solvers.solve_batch``, in chunks for long sweeps); the results
are kept as arrays with a leading sweep axis, with names for their columns.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, ClassVar, Mapping

import numpy as np

import solvers

from ._tables import STATUS, pandas, points_frame

__all__ = ["SweepTable", "sweep_arrays", "sweep_values", "STATUS", "SWEEP_CHUNK"]

#: Points per batched solve of a sweep; longer sweeps show a progress bar on a terminal.
SWEEP_CHUNK = 256


def sweep_values(param: str, values: Any) -> np.ndarray:
    """``values`` as float64, one per sweep point; else a ValueError naming ``param``."""
    values = np.asarray(values, dtype=float)
    if values.ndim != 1 or len(values) == 0:
        raise ValueError(f"sweep values of {param} must be a non-empty 1-D array (one value per "
                         f"point), got shape {values.shape}")
    return values


def sweep_arrays(graph: Any, updates: Mapping[str, Any], extract: Callable[[Any], dict],
                 solver: Any = None, progress: bool | None = None) -> dict:
    """Solve ``graph`` once per row of ``updates`` (``{key path: values with a leading sweep
    axis}``) with ``solvers.solve_batch`` and return ``extract(batched solved graph)`` as numpy
    arrays plus the :data:`STATUS` arrays. Sweeps longer than :data:`SWEEP_CHUNK` points run
    in chunks with a progress bar when ``progress`` (default: stderr is a terminal)."""
    sol = solvers.solve_batch(graph, updates, solver=solver, chunk_size=SWEEP_CHUNK,
                              progress=progress)
    arrays = {k: np.asarray(v) for k, v in extract(sol.system).items()}
    arrays.update(converged=np.asarray(sol.converged), iterations=np.asarray(sol.iterations),
                  residual_norm=np.asarray(sol.residual_norm))
    return arrays


@dataclasses.dataclass(frozen=True)
class SweepTable:
    """Results of a sweep of ``param`` over ``values``.

    ``arrays[key]`` has shape (points, len(columns[key]), ...) for each named result group
    (e.g. ``"temperatures"`` by node) plus the :data:`STATUS` arrays of shape (points,).
    """

    param: str
    values: np.ndarray
    columns: dict
    arrays: dict
    #: Column label of each result group in :meth:`to_frame` (default ``"key[{}]"``; a tuple
    #: of labels names the components of a vector entry).
    LABELS: ClassVar[dict] = {}

    def column(self, key: str, name: str) -> np.ndarray:
        """The values of result ``key`` for the entry ``name`` over the sweep."""
        names = self.columns[key]
        if name not in names:
            raise KeyError(f"no {key} entry named {name!r}; the names are {', '.join(names)}")
        return self.arrays[key][:, names.index(name)]

    @property
    def converged(self) -> bool:
        return bool(np.all(self.arrays["converged"]))

    @property
    def iterations(self) -> int:
        return int(np.max(self.arrays["iterations"]))

    @property
    def residual_norm(self) -> float:
        return float(np.max(self.arrays["residual_norm"]))

    def to_json(self) -> dict:
        """``{"parameter", "values", "sweep": [one object per point], ...status}``."""
        points = []
        for i in range(len(self.values)):
            point = {key: {n: _py(self.arrays[key][i, j]) for j, n in enumerate(names)}
                     for key, names in self.columns.items()}
            point.update(converged=bool(self.arrays["converged"][i]),
                         iterations=int(self.arrays["iterations"][i]),
                         residual_norm=float(self.arrays["residual_norm"][i]))
            points.append(point)
        return {"parameter": self.param, "values": [float(v) for v in self.values],
                "sweep": points, "converged": self.converged, "iterations": self.iterations,
                "residual_norm": self.residual_norm}


    def to_frame(self) -> Any:
        """The sweep as a pandas DataFrame: one row per point, indexed by the swept values,
        one column per named result (:attr:`LABELS`) and the solve status of each point;
        the numbers of :meth:`to_json`. Needs pandas (``pip install 'simgraph[tables]'``)."""
        doc = self.to_json()
        labels = {key: self.LABELS.get(key, key + "[{}]") for key in self.columns}
        return points_frame(doc["sweep"], labels, pandas().Index(doc["values"], name=self.param))


def _py(value):
    arr = np.asarray(value, dtype=float)
    return float(arr) if arr.ndim == 0 else arr.tolist()
