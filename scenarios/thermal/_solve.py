"""Solve a thermal network, read results by name, sweep a load, boundary or conductance."""
from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax.numpy as jnp
import numpy as np

import solvers

from .._cli_report import points_text, solve_status
from .._sweep_table import SweepTable, sweep_arrays, sweep_values
from .._tables import PointTable
from ._checks import check_anchored, warn_below_absolute_zero
from ._model import ThermalNetwork

__all__ = ["ThermalResult", "ThermalSweep", "solve_thermal", "sweep_thermal", "parameter_path"]

#: Table columns: ``T[node]`` (K), ``q[link]`` (W, from its a to its b), ``boundary q[name]`` (W).
LABELS = {"temperatures": "T[{}]", "heat_flows": "q[{}]", "boundary_heat": "boundary q[{}]"}


def _flows(net: ThermalNetwork) -> dict:
    """Result groups of a (possibly batched) solved network: arrays with the entry axis last."""
    def stack(values):
        values = list(values)
        return jnp.stack(values, axis=-1) if values else None
    return {"temperatures": stack(n.T for n in net.nodes),
            "heat_flows": stack([c.heat_flow() for c in net.conductions]
                                + [r.heat_flow() for r in net.radiations]),
            "boundary_heat": stack(b.q for b in net.boundaries)}


def _columns(net: ThermalNetwork) -> dict:
    return {"temperatures": net.node_names,
            "heat_flows": net.conduction_names + net.radiation_names,
            "boundary_heat": net.boundary_names}


@dataclasses.dataclass(frozen=True)
class ThermalResult(PointTable):
    """A solved network: ``temperature("plate")`` (K), ``heat_flow("r1")`` (W, from its
    ``a`` to its ``b``), ``boundary_heat("sink")`` (W injected to hold the temperature);
    ``to_frame()``: one row (``T[node]``, ``q[link]``, ``boundary q[name]``, status)."""

    LABELS = LABELS
    graph: ThermalNetwork
    solution: Any

    @functools.cached_property
    def _arrays(self) -> dict:
        return {k: None if v is None else np.asarray(v) for k, v in _flows(self.graph).items()}

    def _get(self, key: str, name: str) -> float:
        names = _columns(self.graph)[key]
        if name not in names:
            raise KeyError(f"no {key} entry named {name!r}; the names are {', '.join(names)}")
        return float(self._arrays[key][names.index(name)])

    def temperature(self, node: str) -> float:
        return self._get("temperatures", node)

    def heat_flow(self, link: str) -> float:
        return self._get("heat_flows", link)

    def boundary_heat(self, boundary: str) -> float:
        return self._get("boundary_heat", boundary)

    def energy_imbalance(self) -> float:
        """Boundary heats plus loads (W): zero at a steady state."""
        loads = sum(float(q.Q) for q in self.graph.loads)
        return sum(float(b.q) for b in self.graph.boundaries) + loads

    def to_json(self) -> dict:
        arrays, cols = self._arrays, _columns(self.graph)
        doc = {key: {n: float(v) for n, v in zip(cols[key], arrays[key])}
               if arrays[key] is not None else {} for key in cols}
        conv, iters, norm = solve_status(self.solution)
        doc.update(energy_imbalance=self.energy_imbalance(), converged=conv, iterations=iters,
                   residual_norm=norm)
        return doc


class ThermalSweep(SweepTable):
    """Results over a sweep: ``temperature("plate")`` etc. are arrays over the points."""

    LABELS = LABELS

    def temperature(self, node: str) -> np.ndarray:
        return self.column("temperatures", node)

    def heat_flow(self, link: str) -> np.ndarray:
        return self.column("heat_flows", link)

    def boundary_heat(self, boundary: str) -> np.ndarray:
        return self.column("boundary_heat", boundary)


def solve_thermal(net: ThermalNetwork, solver: Any = None) -> ThermalResult:
    """Steady-state temperatures of ``net`` (one Newton-family solve of the whole graph).
    Raises ``IslandError`` for a connected part without a fixed temperature (undefined)."""
    check_anchored(net)
    solution = solvers.solve(net, solver=solver)
    result = ThermalResult(solution.system, solution)
    if net.nodes:
        warn_below_absolute_zero(net.node_names, result._arrays["temperatures"],
                                 solution.converged)
    return result


def parameter_path(net: ThermalNetwork, name: str) -> str:
    """Key path of a sweepable value by name: a load -> its ``Q`` (W), a fixed boundary -> its
    ``T`` (K), a conduction link -> its ``G`` (W/K). A key path (``.x...``) is used as is."""
    if name.startswith("."):
        return name
    for names, path in ((net.load_names, ".loads[{}].Q"), (net.boundary_names, ".boundaries[{}].T"),
                        (net.conduction_names, ".conductions[{}].G")):
        if name in names:
            return path.format(names.index(name))
    raise KeyError(f"nothing named {name!r} to sweep; loads: {', '.join(net.load_names) or '-'};"
                   f" fixed: {', '.join(net.boundary_names) or '-'}; conduction: "
                   f"{', '.join(net.conduction_names) or '-'}")


def sweep_thermal(net: ThermalNetwork, param: str, values, solver: Any = None,
                  progress: bool | None = None) -> ThermalSweep:
    """Solve for every value of ``param`` (see :func:`parameter_path`) with ``solve_batch``."""
    check_anchored(net)
    path = parameter_path(net, param)
    values = sweep_values(param, values)
    columns = {k: v for k, v in _columns(net).items() if v}

    arrays = sweep_arrays(net, {path: values},
                          lambda g: {k: v for k, v in _flows(g).items() if k in columns},
                          solver=solver, progress=progress)
    if "temperatures" in arrays:
        cold = (arrays["temperatures"] < 0.0).any(axis=-1) & arrays["converged"]
        warn_below_absolute_zero(net.node_names, arrays["temperatures"], arrays["converged"],
                                 f" at {param} = {points_text(values, cold)}")
    return ThermalSweep(param, values, columns, arrays)
