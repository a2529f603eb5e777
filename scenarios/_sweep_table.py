"""Parameter sweeps shared by the equations, thermal and truss scenarios.

A sweep is run as batched solves (``solve_batch``) in chunks of one fixed size, so every chunk
reuses one compiled program and a progress bar can advance between chunks. The results are
kept as arrays with a leading sweep axis, with names for their columns.
"""
from __future__ import annotations

import dataclasses
import sys
from typing import Callable

import numpy as np

__all__ = ["SweepTable", "chunked_sweep", "STATUS"]

#: Per-point solve status arrays every sweep carries.
STATUS = ("converged", "iterations", "residual_norm")


def chunked_sweep(values: np.ndarray, solve_chunk: Callable[[np.ndarray], dict],
                  chunk: int = 128, progress: bool = False) -> dict:
    """Run ``solve_chunk`` (a batched solve returning ``{key: array with a leading batch
    axis}``) over ``values`` in chunks of ``chunk`` points (the last one padded by repeating
    its last value). ``progress`` shows a tqdm bar on stderr (if tqdm is installed)."""
    values = np.asarray(values)
    n = len(values)
    if n == 0:
        raise ValueError("a sweep needs at least one value (COUNT >= 1)")
    size = min(chunk, n)
    bar = _progress_bar(n) if progress and n > size else None
    parts = []
    for start in range(0, n, size):
        part = values[start:start + size]
        keep = len(part)
        if keep < size:
            part = np.concatenate([part, np.repeat(part[-1:], size - keep, axis=0)])
        parts.append({k: np.asarray(v)[:keep] for k, v in solve_chunk(part).items()})
        if bar is not None:
            bar.update(keep)
    if bar is not None:
        bar.close()
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _progress_bar(total: int):
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, file=sys.stderr, unit="pt", desc="sweep", leave=False)


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


def _py(value):
    arr = np.asarray(value, dtype=float)
    return float(arr) if arr.ndim == 0 else arr.tolist()
