"""A built power-flow model, its solution by bus number, JSON output and batched sweeps."""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from .._member_result import AbstractMemberResult
from .._network_solve import newton, solve_graph, solve_graph_batch
from .._tables import NamedTables, SweepTables
from ._build import build_graph
from ._case import PowerCase
from ._elements import PowerGraph, branch_power
from ._tables import branch_frame, bus_frame


__all__ = ["BusResult", "PowerModel", "PowerResult", "PowerSweep", "build_powerflow",
           "DEFAULT_METHOD", "SWEEP_PARAMETERS"]

#: Full Newton in polar form, as PYPOWER, to max|F| = 1e-10 p.u. (the step that gets there
#: lands near 1e-14; roundoff floors the mismatch of large cases near 1e-12), dense or sparse
#: LU by size: a factory ``System -> method``. 4-5 steps from a flat start.
DEFAULT_METHOD = newton(atol=1e-10, rtol=1e-12, max_steps=50, atol32=1e-5)
#: Sweep parameter names and the parameter each one sets.
SWEEP_PARAMETERS = {"load_scale": ".loading.scale"}


def build_powerflow(case: PowerCase) -> "PowerModel":
    """The model of ``case`` at a flat start. Raises ``IslandError`` for buses cut off from
    every slack bus."""
    return PowerModel(case, build_graph(case))


class PowerModel:
    """``graph`` (a :class:`PowerGraph`) built from ``case``."""

    def __init__(self, case: PowerCase, graph: PowerGraph):
        self.case, self.graph = case, graph

    def solve(self, method: Any = None) -> "PowerResult":
        """Solve the power flow. ``method``: a ``solvers`` method object or a factory
        ``System -> method``; default :data:`DEFAULT_METHOD`."""
        return PowerResult(self, solve_graph(self.graph, method or DEFAULT_METHOD))

    def sweep(self, values, parameter: str = "load_scale", method: Any = None,
              progress: bool | None = None) -> "PowerSweep":
        """One batched solve over ``values`` of ``parameter`` (a name in
        :data:`SWEEP_PARAMETERS` or a parameter key path such as ``".loads[5].p"``)."""
        where = SWEEP_PARAMETERS.get(parameter, parameter)
        values = np.asarray(values, dtype=np.float64)
        solved = solve_graph_batch(self.graph, method or DEFAULT_METHOD, {where: values},
                                   progress)
        return PowerSweep(self, solved, parameter, values)


@dataclasses.dataclass(frozen=True)
class BusResult:
    """One bus: ``vm`` (p.u.), ``va`` (rad), ``va_deg``; ``p``, ``q``: net injection into the
    network (p.u.); ``pg``, ``qg``: generation = injection + load."""

    id: int
    type: str
    vm: float
    va: float
    p: float
    q: float
    pg: float
    qg: float

    @property
    def va_deg(self) -> float:
        return math.degrees(self.va)


class PowerResult(NamedTables, AbstractMemberResult):
    """Bus voltages and injections by case bus number; ``index`` picks one member of a sweep.
    ``residual_norm`` is max|F| in p.u. power mismatch.
    """

    TABLES = ("bus", "branch")

    def __init__(self, model: PowerModel, solved, index: int | None = None):
        super().__init__(model, solved, index)
        self._buses: dict | None = None
        self._flows: np.ndarray | None = None

    def bus(self, bus_id: int) -> BusResult:
        """The result at case bus number ``bus_id``."""
        buses = self._computed()
        if bus_id not in buses:
            raise KeyError(f"case {self.model.case.name!r} has no bus {bus_id!r}; bus numbers "
                           f"run from {min(buses)} to {max(buses)}.")
        return buses[bus_id]

    def _computed(self) -> dict:
        if self._buses is None:
            self._buses = self._compute()
        return self._buses

    def _compute(self) -> dict:
        g, case = self.solved.graph, self.model.case
        col = lambda nodes, f: np.asarray([self._value(getattr(n, f)) for n in nodes])  # noqa
        buses = [g.buses[b.id] for b in case.buses]
        vm, va = col(buses, "vm"), col(buses, "va")
        branches = {f: col(g.branches, f) for f in ("r", "x", "b", "tap", "shift")}
        self._flows = _branch_flows(case, vm, va, branches)
        s = _injections(case, self._flows)
        load = {i: complex(self._value(d.p), self._value(d.q)) * self._value(d.loading.scale)
                for i, d in g.loads.items()}
        shunt = {i: complex(self._value(sh.g), -self._value(sh.b)) for i, sh in g.shunts.items()}
        out = {}
        for k, b in enumerate(case.buses):
            inj = s[k] + shunt.get(b.id, 0.0) * vm[k] ** 2
            gen = inj + load.get(b.id, 0.0)
            out[b.id] = BusResult(b.id, b.type, float(vm[k]), float(va[k]), inj.real, inj.imag,
                                  gen.real, gen.imag)
        return out

    def branch_flows(self) -> np.ndarray:
        """Power sent into each branch of ``case.branches`` (p.u.): rows P and Q at the FROM
        end, P and Q at the TO end (shape (4, branches))."""
        self._computed()
        return self._flows

    def vm(self) -> dict:
        return {b.id: self.bus(b.id).vm for b in self.model.case.buses}

    def va_deg(self) -> dict:
        return {b.id: self.bus(b.id).va_deg for b in self.model.case.buses}

    def to_json(self) -> dict:
        """``{"vm": {bus: p.u.}, "va_deg": {bus: deg}, "converged", "iterations",
        "residual_norm"}`` (bus numbers as JSON keys)."""
        return {"vm": {str(k): v for k, v in self.vm().items()},
                "va_deg": {str(k): v for k, v in self.va_deg().items()},
                "converged": self.converged, "iterations": self.iterations,
                "residual_norm": self.residual_norm}

    def to_frames(self) -> dict:
        """``{"bus": ..., "branch": ...}`` as pandas DataFrames, as pandapower's ``res_bus``
        and ``res_line``: ``"bus"`` by bus number (type, vm_pu, va_degree, injections and
        generation in MW/Mvar), ``"branch"`` by position in ``case.branches`` (end buses,
        flows at both ends, losses, loading_percent). ``to_frame(name)`` picks one."""
        return {"bus": bus_frame(self), "branch": branch_frame(self)}


def _branch_flows(case: PowerCase, vm, va, branches: dict) -> np.ndarray:
    """(P_f, Q_f, P_t, Q_t) sent into each branch at its ends (p.u.), from the branch model."""
    f = case.branch_array("from_index").astype(int)
    t = case.branch_array("to_index").astype(int)
    return np.asarray([np.asarray(a) for a in branch_power(
        vm[f], va[f], vm[t], va[t], *(branches[k] for k in ("r", "x", "b", "tap", "shift")))])


def _injections(case: PowerCase, flows: np.ndarray) -> np.ndarray:
    """Complex power each bus sends into its branches (p.u.)."""
    f = case.branch_array("from_index").astype(int)
    t = case.branch_array("to_index").astype(int)
    p_f, q_f, p_t, q_t = flows
    s = np.zeros(len(case.buses), dtype=complex)
    np.add.at(s, f, p_f + 1j * q_f)
    np.add.at(s, t, p_t + 1j * q_t)
    return s


class PowerSweep(SweepTables):
    """The members of a batched solve: ``sweep[i]`` is a :class:`PowerResult`; its tables
    (``to_frames()``) stack the members' by ``parameter`` value."""

    TABLES = ("bus", "branch")

    def __init__(self, model: PowerModel, solved, parameter: str, values: np.ndarray):
        self.model, self.solved, self.parameter, self.values = model, solved, parameter, values

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, i: int) -> PowerResult:
        if not -len(self) <= i < len(self):
            raise IndexError(f"sweep member {i} out of range for {len(self)} members")
        return PowerResult(self.model, self.solved, i % len(self))

    @property
    def converged(self) -> np.ndarray:
        return np.asarray(self.solved.solution.converged)

    def vm(self, bus_id: int) -> np.ndarray:
        """Vm of ``bus_id`` for every member (p.u.)."""
        return np.asarray([self[i].bus(bus_id).vm for i in range(len(self))])

    def to_json(self) -> dict:
        """``{"parameter", "values", "sweep": [member JSON, ...], "converged"}``."""
        return {"parameter": self.parameter, "values": self.values.tolist(),
                "sweep": [self[i].to_json() for i in range(len(self))],
                "converged": bool(self.converged.all())}
