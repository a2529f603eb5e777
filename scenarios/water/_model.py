"""A built water model, its solution read by EPANET id, JSON output, and batched sweeps."""
from __future__ import annotations

import difflib
import warnings
from typing import Any

import numpy as np

from .._member_result import AbstractMemberResult
from .._network_solve import NetworkMethod, sweep_graph
from .._tables import NamedTables, SweepTables
from ._build import build_graph
from ._constants import WaterConstants
from ._disconnected import warn_disconnected
from ._elements import WaterGraph
from ._inp_types import WaterNetwork
from ._snapshot_status import cut_off, snapshot_state, solve_snapshot, tank_limited
from ._tables import link_frame, node_frame


__all__ = ["WaterModel", "WaterResult", "WaterSweep", "build_water", "DEFAULT_METHOD",
           "SWEEP_PARAMETERS"]

#: ``solvers.default_method`` to max|F| = 1e-12 (m of head, m3/s of flow): a factory
#: ``System -> method``. From EPANET's start the validation networks take 5-8 Newton steps.
#: Its linear solver is the library's choice: dense LU for small networks, else scipy's LU on
#: the host, which pivots on the (flow, head) saddle-point Jacobian.
DEFAULT_METHOD = NetworkMethod(atol=1e-12, rtol=1e-14)
#: Sweep parameter names and the parameter each one sets.
SWEEP_PARAMETERS = {"demand_multiplier": ".hydraulics.demand_multiplier"}


def build_water(network: WaterNetwork, constants: Any = "epanet") -> "WaterModel":
    """The model of ``network`` at t = 0. ``constants``: ``"epanet"`` (EPANET 2.2's, exact for
    the file's flow units), ``"wntr"`` (WNTRSimulator's), a ``WaterConstants`` or the
    ``constants.epanet``/``constants.wntr`` block of a validation JSON. Raises ``IslandError``
    for junctions cut off from every reservoir and tank."""
    graph, consts = build_graph(network, constants)
    return WaterModel(network, graph, consts)


def _lookup(table: dict, name: str, what: str):
    if name in table:
        return table[name]
    near = difflib.get_close_matches(str(name), [str(k) for k in table], n=3)
    hint = f" Did you mean {', '.join(map(repr, near))}?" if near else ""
    raise KeyError(f"the network has no {what} {name!r}.{hint}")


class WaterModel:
    """``graph`` (a :class:`WaterGraph`) built from ``network`` with ``constants``."""

    def __init__(self, network: WaterNetwork, graph: WaterGraph, constants: WaterConstants):
        self.network, self.graph, self.constants = network, graph, constants

    def solve(self, method: Any = None) -> "WaterResult":
        """Solve the t = 0 snapshot. ``method``: a ``solvers`` method object or a factory
        ``System -> method``; default :data:`DEFAULT_METHOD`. As in EPANET, check valves
        against reverse flow, pumps that cannot lift the head and links that would fill a
        full tank or drain an empty one are closed and the network solved again
        (``WaterResult.closed`` names them)."""
        solved, closed = solve_snapshot(self.network, self.graph, method or DEFAULT_METHOD)
        return WaterResult(self, solved, closed=closed, checked=True)

    def sweep(self, values, parameter: str = "demand_multiplier", method: Any = None,
              progress: bool | None = None) -> "WaterSweep":
        """One batched solve over ``values`` of ``parameter`` (a name in
        :data:`SWEEP_PARAMETERS` or a key path such as ``".pipes['P3'].roughness"``)."""
        values = np.asarray(values, dtype=np.float64)
        solved = sweep_graph(self.graph, method or DEFAULT_METHOD, SWEEP_PARAMETERS, parameter,
                             values, progress)
        sweep = WaterSweep(self, solved, parameter, values)
        _warn_status([f"member {i}: {p}" for i, m in enumerate(sweep) for p in m.status_problems()])
        cut = {i: m.disconnected() for i, m in enumerate(sweep)}
        if any(cut.values()):
            members = [str(i) for i, names in cut.items() if names]
            warn_disconnected(sorted({n for names in cut.values() for n in names}),
                              f"in sweep member(s) {', '.join(members[:5])}"
                              + (" ..." if len(members) > 5 else ""), stacklevel=2)
        return sweep


def _warn_status(problems: list) -> None:
    if problems:
        warnings.warn("these link statuses are kept at their t = 0 values, but the solution has "
                      + "; ".join(problems[:5]) + (f" and {len(problems) - 5} more" if
                                                   len(problems) > 5 else "")
                      + ". EPANET would close these links and re-solve; close them in the "
                      "file ([STATUS]) to model that.", stacklevel=3)


class WaterResult(NamedTables, AbstractMemberResult):
    """Heads (m), flows (m3/s), demands by EPANET id; ``index`` picks one member of a sweep.
    ``residual_norm`` is max|F| in m of head or m3/s of flow. ``closed``: the links EPANET's
    status checks closed for the solve (check valves, pumps at shutoff, links into a full or
    out of an empty tank; flow 0); ``checked``: whether those checks ran (a snapshot; not a
    sweep member).
    """

    TABLES = ("nodes", "links")

    def __init__(self, model: WaterModel, solved, index: int | None = None,
                 closed: tuple = (), checked: bool = False):
        super().__init__(model, solved, index)
        self.closed, self.checked = tuple(closed), checked
        g = solved.graph
        self._nodes = {**g.junctions, **g.reservoirs, **g.tanks}
        # closed links (in the file, by a control or a check) carry dh / CBIG, reported as 0
        self._links = {k: v for k, v in {**g.pipes, **g.pumps}.items() if self._is_open(v)}
        self._demands: dict | None = None

    def _is_open(self, link) -> bool:
        status = np.asarray(getattr(link, "status", 1.0))
        return bool((status if status.ndim == 0 else self._value(status)) > 0.5)

    def head(self, node: str) -> float:
        """Hydraulic head (m) at a junction, reservoir or tank."""
        return self._value(_lookup(self._nodes, node, "node").head)

    def pressure(self, node: str) -> float:
        """Head minus elevation (m of water; 0 at reservoirs, as EPANET reports)."""
        elevation = getattr(_lookup(self._nodes, node, "node"), "elevation", None)
        return 0.0 if elevation is None else self.head(node) - self._value(elevation)

    def flow(self, link: str) -> float:
        """Flow (m3/s, positive from start to end) in a pipe or pump; 0 if closed (in the
        file, by a control or by a status check), as EPANET reports it."""
        if link in self._links and link not in self.closed:
            return self._value(self._links[link].flow)
        _lookup({name: None for name in self.model.network.link_names}, link, "link")
        return 0.0

    def demand(self, node: str) -> float:
        """Outflow to consumers (m3/s); at a reservoir or tank the net flow it receives
        (negative when it supplies the network), as EPANET reports it."""
        if self._demands is None:
            demands = {name: 0.0 for name in self.model.network.node_names}
            for link in (*self.model.network.pipes, *self.model.network.pumps):
                q = self.flow(link.name)
                demands[link.start] -= q
                demands[link.end] += q
            for j in self.model.network.junctions:
                demands[j.name] = self._value(self.solved.graph.junctions[j.name].demand
                                              * self.solved.graph.hydraulics.demand_multiplier)
            self._demands = demands
        return _lookup(self._demands, node, "node")

    def status_problems(self) -> list:
        """In a sweep member (solved without status checks), the links whose open status
        contradicts the solution (EPANET's status checks would close them): reverse flow
        through a check-valve pipe or a pump, flow into a full or out of an empty tank.
        Empty for a snapshot, whose checks closed them."""
        if self.checked:
            return []
        net = self.model.network
        checked = [p.name for p in net.pipes if p.check_valve] + [p.name for p in net.pumps]
        problems = [f"reverse flow {self.flow(name):.3g} m3/s in {name!r}" for name in checked
                    if self.flow(name) < 0.0]
        if net.tanks:
            full = tank_limited(snapshot_state(net, self.solved.graph, self._value),
                                self.solved.graph, self._value)
            problems += [f"flow {self.flow(name):.3g} m3/s into a full or out of an empty "
                         f"tank in {name!r}" for name in full]
        return problems

    def disconnected(self) -> list:
        """The junctions with demand that no open link joins to a reservoir or tank (closed
        links cut them off; their heads are meaningless): EPANET's "System disconnected"."""
        net = self.model.network
        flowing = [link.name in self._links and link.name not in self.closed
                   for link in (*net.pipes, *net.pumps)]
        return cut_off(net, self.solved.graph, np.asarray(flowing, bool), self._value)

    def status(self, link: str) -> int:
        """1 if the link is open in the solve, 0 if closed at t = 0 or by a status check."""
        self.flow(link)  # a KeyError naming near matches for an unknown link
        return int(link in self._links and link not in self.closed)

    def heads(self) -> dict:
        return {name: self.head(name) for name in self.model.network.node_names}

    def flows(self) -> dict:
        return {name: self.flow(name) for name in self.model.network.link_names}

    def to_json(self) -> dict:
        """``{"heads": {node: m}, "flows": {link: m3/s}, "status": {link: 1 open, 0 closed},
        "converged", "iterations", "residual_norm"}`` (JSON-ready Python values)."""
        status = {name: self.status(name) for name in self.model.network.link_names}
        return {"heads": self.heads(), "flows": self.flows(), "status": status,
                "converged": self.converged,
                "iterations": self.iterations, "residual_norm": self.residual_norm}

    def to_frames(self) -> dict:
        """``{"nodes": ..., "links": ...}`` as pandas DataFrames by EPANET id: ``"nodes"``
        (type, elevation, head, pressure, demand), ``"links"`` (type, ends, status, flow,
        velocity, head loss); SI units named in the columns. ``to_frame(name)`` picks one."""
        return {"nodes": node_frame(self), "links": link_frame(self)}


class WaterSweep(SweepTables):
    """The members of a batched solve: ``sweep[i]`` is a :class:`WaterResult`; its tables
    (``to_frames()``) stack the members' by ``parameter`` value."""

    TABLES = ("nodes", "links")

    def __init__(self, model: WaterModel, solved, parameter: str, values: np.ndarray):
        self.model, self.solved, self.parameter, self.values = model, solved, parameter, values

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, i: int) -> WaterResult:
        if not -len(self) <= i < len(self):
            raise IndexError(f"sweep member {i} out of range for {len(self)} members")
        return WaterResult(self.model, self.solved, i % len(self))

    @property
    def converged(self) -> np.ndarray:
        return np.asarray(self.solved.solution.converged)

    def head(self, node: str) -> np.ndarray:
        """The head of ``node`` for every member (m)."""
        return np.asarray([self[i].head(node) for i in range(len(self))])

    def to_json(self) -> dict:
        """``{"parameter", "values", "sweep": [member JSON, ...], "converged"}``."""
        return {"parameter": self.parameter, "values": self.values.tolist(),
                "sweep": [self[i].to_json() for i in range(len(self))],
                "converged": bool(self.converged.all())}
