"""A built power-flow model, its solution by bus number, JSON output and batched sweeps."""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from .._member_result import AbstractMemberResult
from .._network_solve import NetworkMethod, sweep_graph
from .._tables import NamedTables, SweepTables
from ._build import build_graph
from ._case import PowerCase
from ._elements import PowerGraph, branch_power
from ._fallback import Attempt, solve_with_fallback
from ._start import START_NAMES, STARTS
from ._tables import branch_frame, bus_frame


__all__ = ["BusResult", "PowerModel", "PowerResult", "PowerSweep", "build_powerflow",
           "DEFAULT_METHOD", "SWEEP_PARAMETERS"]

#: ``solvers.default_method`` to max|F| = 1e-10 p.u. (the step that gets there lands near
#: 1e-14; roundoff floors the mismatch of large cases near 1e-12): full Newton in polar form,
#: as PYPOWER, first (4-7 steps), with the library's choice of linear solver (a sparse LU with
#: a fill-reducing ordering for large cases); a factory ``System -> method``. With the host LU
#: ``solvers.solve`` steps Newton from the host (the compiled program is F and J alone,
#: which the CLI's compilation cache keeps for the next process).
DEFAULT_METHOD = NetworkMethod(atol=1e-10, rtol=1e-12, atol32=1e-5)
#: Sweep parameter names and the parameter each one sets.
SWEEP_PARAMETERS = {"load_scale": ".loading.scale"}


def build_powerflow(case: PowerCase, start: str = "case") -> "PowerModel":
    """The model of ``case``, its unknowns at ``start``: ``"case"`` (the case file's bus
    voltages, MATPOWER's default), ``"flat"`` or ``"dc"`` (see :data:`START_NAMES`). Raises
    ``IslandError`` for buses cut off from every slack bus."""
    if start not in STARTS:
        raise ValueError(f"unknown power-flow start {start!r}; choose one of {', '.join(STARTS)}")
    return PowerModel(case, build_graph(case, start), start)


class PowerModel:
    """``graph`` (a :class:`PowerGraph`) built from ``case``, its unknowns at ``start``."""

    def __init__(self, case: PowerCase, graph: PowerGraph, start: str = "case"):
        self.case, self.graph, self.start = case, graph, start

    def solve(self, method: Any = None, fallback: bool = True) -> "PowerResult":
        """Solve the power flow from the graph's start. ``method``: a ``solvers`` method
        object or a factory ``System -> method``; default :data:`DEFAULT_METHOD`. When Newton
        fails there (and ``fallback``), the other starts are tried in the order of
        :data:`STARTS`, then the default method's fallback stages from the first start;
        ``result.start`` says which produced the answer, ``result.attempts`` lists them all."""
        solved, used, attempts = solve_with_fallback(self.case, self.graph, self.start,
                                                     method or DEFAULT_METHOD, fallback)
        return PowerResult(self, solved, attempt=used, attempts=attempts)

    def sweep(self, values, parameter: str = "load_scale", method: Any = None,
              progress: bool | None = None) -> "PowerSweep":
        """One batched solve over ``values`` of ``parameter`` (a name in
        :data:`SWEEP_PARAMETERS` or a parameter key path such as ``".loads[5].p"``)."""
        values = np.asarray(values, dtype=np.float64)
        solved = sweep_graph(self.graph, method or DEFAULT_METHOD, SWEEP_PARAMETERS, parameter,
                             values, progress)
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

    def __init__(self, model: PowerModel, solved, index: int | None = None,
                 attempt: Attempt | None = None, attempts: list | None = None):
        super().__init__(model, solved, index)
        self.attempt, self.attempts = attempt, list(attempts or [])
        self._buses: dict | None = None
        self._flows: np.ndarray | None = None

    @property
    def start(self) -> str:
        """The start that produced this result (``"case"``, ``"flat"``, ``"dc"``)."""
        return self.attempt.start if self.attempt is not None else self.model.start

    def start_note(self) -> str:
        """One sentence: which start (and method) produced the answer, and what failed."""
        how = START_NAMES[self.start]
        if self.attempt is not None and self.attempt.method != "newton":
            how += " with the fallback stages (damped Newton, trust region, continuation)"
        failed = [f"{a.start} ({a.method}: {a.iterations} steps, max|F| {a.residual_norm:.3g})"
                  for a in self.attempts if a is not self.attempt and not a.converged]
        text = f"{'solved' if self.converged else 'best attempt'} from {how}"
        return text + (f"; failed first: {', '.join(failed)}" if failed else "")

    def buses(self) -> dict:
        """Every bus's :class:`BusResult` by case bus number."""
        if self._buses is None:
            self._buses = self._compute()
        return self._buses

    def bus(self, bus_id: int) -> BusResult:
        """The result at case bus number ``bus_id``."""
        self.buses()
        if bus_id not in self._buses:
            raise KeyError(f"case {self.model.case.name!r} has no bus {bus_id!r}; bus numbers "
                           f"run from {min(self._buses)} to {max(self._buses)}.")
        return self._buses[bus_id]

    def _compute(self) -> dict:
        g, case = self.solved.graph, self.model.case
        buses = [g.buses[b.id] for b in case.buses]
        self._vm, self._va = _as_matpower_reports(self._column(buses, "vm"),
                                                 self._column(buses, "va"))
        branches = {f: self._column(g.branches, f) for f in ("r", "x", "b", "tap", "shift")}
        self._flows = _branch_flows(case, self._vm, self._va, branches)
        position = {b.id: k for k, b in enumerate(case.buses)}
        shunts, loads = list(g.shunts.values()), list(g.loads.values())
        at_shunts, at_loads = [position[i] for i in g.shunts], [position[i] for i in g.loads]
        drawn = np.zeros(len(position), dtype=complex)    # by shunts, at Vm^2
        drawn[at_shunts] = (_complex(self._column(shunts, "g"), -self._column(shunts, "b"))
                            * self._vm[at_shunts] ** 2)
        inj = _injections(case, self._flows) + drawn
        demand = np.zeros(len(position), dtype=complex)
        demand[at_loads] = _complex(self._column(loads, "p"), self._column(loads, "q")) * (
            self._column([d.loading for d in loads], "scale"))
        gen = inj + demand
        return dict(zip(position, map(BusResult, position, [b.type for b in case.buses],
                                      self._vm.tolist(), self._va.tolist(),
                                      inj.real.tolist(), inj.imag.tolist(),
                                      gen.real.tolist(), gen.imag.tolist())))

    def _column(self, nodes, field: str) -> np.ndarray:
        """``field`` of every node in ``nodes`` (float64; this member's in a sweep)."""
        if not nodes:
            return np.zeros(0)
        values = np.asarray([getattr(n, field) for n in nodes], dtype=np.float64)
        if self.index is None:
            return values.reshape(len(nodes))
        return values.reshape(len(nodes), -1)[:, self.index]

    def branch_flows(self) -> np.ndarray:
        """Power sent into each branch of ``case.branches`` (p.u.): rows P and Q at the FROM
        end, P and Q at the TO end (shape (4, branches))."""
        self.buses()
        return self._flows

    def low_voltage_buses(self, below: float = 0.5) -> dict:
        """Vm (p.u.) by bus number where it is below ``below``: a power flow has several
        solutions, and a start far from the operating point (a case file's VM column) can
        lead Newton to a low-voltage one, which solves the equations just as well."""
        return {i: vm for i, vm in self.vm().items() if vm < below}

    def q_limit_violations(self, tol: float = 1e-9) -> list[dict]:
        """The PV and slack buses whose generation ``qg`` lies outside the summed limits
        ``qmin``, ``qmax`` of their generators (p.u.; ``tol`` of slack): the power flow holds
        their voltages whatever Q it takes, as MATPOWER's ``runpf`` does by default (Q limits
        are not enforced), so a violation means the set point is not reachable."""
        limits: dict = {}
        for gen in self.model.case.generators:
            low, high = limits.get(gen.bus, (0.0, 0.0))
            limits[gen.bus] = (low + gen.Qmin, high + gen.Qmax)
        out = []
        for bus in self.buses().values():
            if bus.type == "PQ" or bus.id not in limits:
                continue
            low, high = limits[bus.id]
            if not low - tol <= bus.qg <= high + tol:
                out.append({"bus": bus.id, "qg": bus.qg, "qmin": low, "qmax": high})
        return out

    def vm(self) -> dict:
        """Vm (p.u.) by case bus number."""
        self.buses()
        return dict(zip([b.id for b in self.model.case.buses], self._vm.tolist()))

    def va_deg(self) -> dict:
        """Va (degrees) by case bus number."""
        self.buses()
        return dict(zip([b.id for b in self.model.case.buses], np.degrees(self._va).tolist()))

    def to_json(self) -> dict:
        """``{"vm": {bus: p.u.}, "va_deg": {bus: deg}, "converged", "iterations",
        "residual_norm", "start", "attempts"}`` (bus numbers as JSON keys; ``attempts``: every
        solve tried, ``{"start", "method", "converged", "iterations", "residual_norm"}``)."""
        keys = [str(b.id) for b in self.model.case.buses]
        return {"vm": dict(zip(keys, self.vm().values())),
                "va_deg": dict(zip(keys, self.va_deg().values())),
                "converged": self.converged, "iterations": self.iterations,
                "residual_norm": self.residual_norm, "start": self.start,
                "attempts": [a.to_json() for a in self.attempts]}

    def to_frames(self) -> dict:
        """``{"bus": ..., "branch": ...}`` as pandas DataFrames, as pandapower's ``res_bus``
        and ``res_line``: ``"bus"`` by bus number (type, vm_pu, va_degree, injections and
        generation in MW/Mvar), ``"branch"`` by position in ``case.branches`` (end buses,
        flows at both ends, losses, loading_percent). ``to_frame(name)`` picks one."""
        return {"bus": bus_frame(self), "branch": branch_frame(self)}


def _as_matpower_reports(vm: np.ndarray, va: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The same complex voltages as MATPOWER reports them: ``vm >= 0`` and ``va`` within
    +-180 deg (its ``angle(V)``). Newton from a start with a negative Vm (a case file's VM
    column) can land on ``-|V|`` at ``Va + 180 deg``, and from an angle start of 3600 deg on
    a root 3600 deg away from MATPOWER's. Angles within +-180 deg (a slack set to -180 deg
    too) and non-finite ones are kept as they are."""
    flip = vm < 0
    if flip.any():
        vm, va = np.abs(vm), np.where(flip, va - np.copysign(np.pi, va), va)
    outside = (np.abs(va) > np.pi) & np.isfinite(va)
    if outside.any():
        va = va.copy()
        va[outside] = np.pi - np.remainder(np.pi - va[outside], 2 * np.pi)
    return vm, va


def _branch_flows(case: PowerCase, vm, va, branches: dict) -> np.ndarray:
    """(P_f, Q_f, P_t, Q_t) sent into each branch at its ends (p.u.), from the branch model."""
    f = case.branch_array("from_index").astype(int)
    t = case.branch_array("to_index").astype(int)
    return np.asarray(branch_power(
        vm[f], va[f], vm[t], va[t], *(branches[k] for k in ("r", "x", "b", "tap", "shift")),
        xp=np))


def _complex(real: np.ndarray, imag: np.ndarray) -> np.ndarray:
    out = np.empty(len(real), dtype=complex)
    out.real, out.imag = real, imag
    return out


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
