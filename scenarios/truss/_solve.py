"""Solve a truss, read results by name, sweep a load factor or a prescribed displacement."""
from __future__ import annotations

import dataclasses
import functools
import warnings
from typing import Any

import jax
import numpy as np

import solvers

from .._cli_report import points_text, solve_status
from .._sweep_table import SweepTable, sweep_arrays, sweep_values
from .._tables import PointTable
from ._model import Truss, axial_force
from ._stability import check_stable, unstable_points
from ._tolerance import RTOL, default_solver, force_tolerance

__all__ = ["TrussResult", "TrussSweep", "default_solver", "force_tolerance", "solve_truss",
           "sweep_truss", "parameter_path", "RTOL"]

#: Table columns: displacements ``ux[node]``, ``uy[node]`` (m), axial forces ``N[bar]`` (N),
#: support reactions ``Rx[support]``, ``Ry[support]`` (N).
LABELS = {"displacements": ("ux[{}]", "uy[{}]"), "axial_forces": "N[{}]",
          "reactions": ("Rx[{}]", "Ry[{}]")}


def _arrays(truss: Truss) -> dict:
    """Result groups of a (possibly batched) solved truss, entry axis after the batch axes."""
    def stack(values, trailing):
        values = [np.asarray(v) for v in values]
        return np.stack(np.broadcast_arrays(*values), axis=-1 - trailing) if values else None
    pos = {id(n): np.asarray(n.X) + np.asarray(n.u) for n in truss.nodes}
    forces = [axial_force(pos[id(b.b)] - pos[id(b.a)], np.asarray(b.EA), np.asarray(b.L0))
              for b in truss.bars]
    return {"displacements": stack((n.u for n in truss.nodes), 1),
            "axial_forces": stack(forces, 0),
            "reactions": stack((s.reaction for s in truss.supports), 1)}


def _columns(truss: Truss) -> dict:
    return {"displacements": truss.node_names, "axial_forces": truss.bar_names,
            "reactions": truss.support_names}


@dataclasses.dataclass(frozen=True)
class TrussResult(PointTable):
    """A solved truss: ``displacement("apex")`` (m, (ux, uy)), ``axial_force("left")`` (N,
    tension positive), ``reaction("pin")`` (N, the force the support applies);
    ``to_frame()``: one row (``ux[node]``, ``uy[node]``, ``N[bar]``, ``Rx``/``Ry``, status)."""

    LABELS = LABELS
    graph: Truss
    solution: Any

    @functools.cached_property
    def _values(self) -> dict:
        return _arrays(self.graph)

    def _get(self, key: str, name: str):
        names = _columns(self.graph)[key]
        if name not in names:
            raise KeyError(f"no {key} entry named {name!r}; the names are {', '.join(names)}")
        return self._values[key][names.index(name)]

    def displacement(self, node: str) -> np.ndarray:
        return self._get("displacements", node)

    def axial_force(self, bar: str) -> float:
        return float(self._get("axial_forces", bar))

    def reaction(self, support: str) -> np.ndarray:
        return self._get("reactions", support)

    def to_json(self) -> dict:
        cols = _columns(self.graph)
        doc = {key: {n: np.asarray(self._values[key][j]).tolist() for j, n in enumerate(names)}
               for key, names in cols.items()}
        conv, iters, norm = solve_status(self.solution)
        doc.update(converged=conv, iterations=iters, residual_norm=norm)
        return doc


class TrussSweep(SweepTable):
    """Results over a sweep: ``displacement("apex")`` has shape (points, 2), etc.;
    ``arrays["stable"]``: False where a converged point is no stable equilibrium."""

    LABELS = LABELS

    def to_json(self) -> dict:
        doc = super().to_json()
        for point, stable in zip(doc["sweep"], self.arrays.get("stable", ())):
            point["stable"] = bool(stable)
        return doc

    def displacement(self, node: str) -> np.ndarray:
        return self.column("displacements", node)

    def axial_force(self, bar: str) -> np.ndarray:
        return self.column("axial_forces", bar)

    def reaction(self, support: str) -> np.ndarray:
        return self.column("reactions", support)


def solve_truss(truss: Truss, solver: Any = None) -> TrussResult:
    """Static equilibrium of ``truss`` with exact (large-displacement) kinematics. ``solver``
    defaults to :func:`default_solver` (tolerance on the forces scaled to the truss). Raises
    ``MechanismError`` if the equilibrium found is not stable (a mechanism, or one that only
    unstable compression holds)."""
    system = solvers.System.build(truss)
    solution = solvers.solve(system, default_solver(truss, system) if solver is None else solver)
    result = TrussResult(solution.system, solution)
    if _concrete(solution.converged):
        check_stable(solution.system, result)
    return result


def _concrete(flag) -> bool:
    """``flag`` as a bool, False when it is traced (under ``jit``: no check)."""
    try:
        return bool(flag)
    except (jax.errors.TracerBoolConversionError, jax.errors.ConcretizationTypeError):
        return False


def parameter_path(truss: Truss, name: str) -> tuple[str, int | None]:
    """``(key path, component)`` of a sweepable value: a load's name -> its ``factor``;
    ``SUPPORT.ux`` / ``SUPPORT.uy`` -> component 0 / 1 of the support's prescribed displacement
    (displacement control, which passes limit points)."""
    if name in truss.load_names:
        return f".loads[{truss.load_names.index(name)}].factor", None
    support, _, comp = name.rpartition(".")
    if support in truss.support_names and comp in ("ux", "uy"):
        i = truss.support_names.index(support)
        if not bool(np.asarray(truss.supports[i].fixed)[int(comp == "uy")]):
            raise KeyError(f"support {support!r} does not fix {comp}; prescribe only fixed "
                           "components (set its \"fixed\" entry to true)")
        return f".supports[{i}].prescribed", int(comp == "uy")
    raise KeyError(f"nothing named {name!r} to sweep; loads: {', '.join(truss.load_names) or '-'};"
                   f" prescribed displacements: "
                   f"{', '.join(s + '.ux|.uy' for s in truss.support_names) or '-'}")


def sweep_truss(truss: Truss, param: str, values, solver: Any = None,
                progress: bool | None = None) -> TrussSweep:
    """Solve for every value of ``param`` (see :func:`parameter_path`) with ``solve_batch``;
    every point starts from the graph's own start (zero displacement by default)."""
    path, comp = parameter_path(truss, param)
    values = sweep_values(param, values)
    columns = {k: v for k, v in _columns(truss).items() if v}
    batch = values
    if comp is not None:  # the other component keeps its prescribed value
        base = np.asarray(truss.supports[truss.support_names.index(param[:-3])].prescribed)
        batch = np.repeat(base[None, :], len(values), axis=0)
        batch[:, comp] = values
    problem = truss
    if solver is None:  # the tolerance also sees the largest swept load or displacement
        problem = solvers.System.build(truss)
        solver = default_solver(truss, problem, batch_size=len(values),
                                swept=_swept_force(truss, param, comp, values))
    arrays = sweep_arrays(problem, {path: batch},
                          lambda g: {k: v for k, v in _arrays(g).items() if k in columns},
                          solver=solver, progress=progress)
    _warn_unstable(truss, param, values, arrays)
    return TrussSweep(param, values, columns, arrays)


def _warn_unstable(truss: Truss, param: str, values: np.ndarray, arrays: dict) -> None:
    """Mark (``arrays["stable"]``) and warn about converged points that are no meaningful
    equilibrium: ``solve_truss`` refuses them with ``MechanismError``, a sweep keeps its
    other points."""
    stable = np.ones(len(values), bool)
    if "displacements" in arrays:
        stable[unstable_points(truss, arrays["displacements"], arrays["converged"])] = False
    arrays["stable"] = stable
    if stable.all():
        return
    warnings.warn(
        f"{int((~stable).sum())} of {len(values)} sweep points converged to no stable "
        f"equilibrium (a mechanism, or a position only unstable compression holds), at {param} "
        f"= {points_text(values, ~stable)}: their values are not meaningful (arrays['stable'] "
        "marks them; solve_truss raises MechanismError there). Add bars or supports, or prescribe a "
        "displacement instead of a load to pass a limit point.", UserWarning, stacklevel=3)


def _swept_force(truss: Truss, param: str, comp: int | None, values: np.ndarray) -> float:
    """The largest force (N) a sweep point applies: a load times its largest factor, or the
    stiffest bar's EA / L0 times the largest prescribed displacement."""
    top = float(np.max(np.abs(values))) if values.size else 0.0
    if comp is None:
        load = truss.loads[truss.load_names.index(param)]
        return top * float(np.max(np.abs(np.asarray(load.force))))
    return top * max((float(np.max(np.asarray(b.EA) / np.asarray(b.L0))) for b in truss.bars),
                     default=0.0)
