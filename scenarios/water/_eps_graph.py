"""The graph of an extended-period run: every link present, opened and closed by a parameter.

Each link class gains a ``status`` (1 open, 0 closed). A closed link follows EPANET's law for
closed links, ``H_start - H_end = CBIG q`` (CBIG = 1e8 ft/cfs), so a step's structure never
changes: one lowering and one compiled solve serve every hydraulic time, with new demands,
tank levels, reservoir heads, pump speeds and statuses set as parameters.
"""
from __future__ import annotations

import dataclasses

import numpy as np

import solvers

from .._network_solve import method_for
from ._build import _pump, build_nodes, check_headloss, check_islands
from ._constants import resolve_constants
from ._closed import CBIG, SwitchedPipe, closed_resistance, switched
from ._elements import WaterGraph
from ._inp_types import WaterNetwork
from ._inp_units import FT

__all__ = ["EPSGraph", "StepValues", "CBIG"]


@dataclasses.dataclass
class StepValues:
    """What changes between hydraulic times (SI): junction demands, tank levels, reservoir
    heads, link statuses (1/0) and pump speeds, each in file order."""

    demands: np.ndarray
    tank_levels: np.ndarray
    reservoir_heads: np.ndarray
    link_open: np.ndarray
    pump_speeds: np.ndarray


class EPSGraph:
    """The all-links graph of ``network``, lowered once, solved at one hydraulic time by
    :meth:`solve` (warm-started from the previous solution)."""

    def __init__(self, network: WaterNetwork, method, constants="epanet"):
        check_headloss(network)
        check_islands(network)
        self.network, self.consts = network, resolve_constants(network, constants)
        self.ratio = network.units.epanet_flow_ratio
        self.graph = self._graph()
        self.system = solvers.System.build(self.graph)
        self.method = method_for(method, self.system)
        self._x = self.system.x0
        self._locate()

    def _graph(self) -> WaterGraph:
        net, c = self.network, self.consts
        hyd, junctions, reservoirs, tanks = build_nodes(net, c)
        nodes = {**junctions, **reservoirs, **tanks}
        closed_r = closed_resistance(self.ratio)
        pipes = {p.name: SwitchedPipe(nodes[p.start], nodes[p.end], hyd, p.length, p.diameter,
                                      p.roughness, p.minor_loss, FT * np.pi * p.diameter ** 2
                                      / 4.0, 1.0, closed_r) for p in net.pipes}
        pumps = {}
        for p in net.pumps:
            plain = _pump(dataclasses.replace(p, speed_t0=1.0), nodes, hyd, c, self.ratio)
            pumps[p.name] = switched(plain, 1.0, closed_r)
        return WaterGraph(hyd, junctions, reservoirs, tanks, pipes, pumps)

    def _locate(self) -> None:
        """Where each junction head and link flow sits in x, and the parameters set per step:
        ``(key, StepValues field, rows of it, table, names, field)``, with the canonical leaf
        order of each key (found once by setting 0, 1, 2, ... and reading the graph back)."""
        g, s = self.graph, self.system
        links = [*g.pipes.values(), *g.pumps.values()]
        self._heads = np.asarray([s.locate(node).start for node in g.junctions.values()], int)
        self._flows = np.asarray([s.locate(link).start for link in links], dtype=int)
        groups = [("Junction.demand", "demands", "junctions", "demand"),
                  ("Tank.level", "tank_levels", "tanks", "level"),
                  ("Reservoir.head", "reservoir_heads", "reservoirs", "head")]
        self._groups = [(key, what, np.arange(len(getattr(g, table))), table,
                         list(getattr(g, table)), field)
                        for key, what, table, field in groups if getattr(g, table)]
        n_pipes, kinds = len(g.pipes), {}
        for i, (name, link) in enumerate([*g.pipes.items(), *g.pumps.items()]):
            kinds.setdefault(type(link).__name__, []).append((i, name))
        for kind, members in kinds.items():
            rows, names = np.asarray([i for i, _ in members]), [n for _, n in members]
            table = "pipes" if kind == "SwitchedPipe" else "pumps"
            self._groups.append((f"{kind}.status", "link_open", rows, table, names, "status"))
            if kind in ("SwitchedPump", "SwitchedCurvePump", "SwitchedPowerPump"):
                self._groups.append((f"{kind}.speed", "pump_speeds", rows - n_pipes, table,
                                     names, "speed"))
        self._orders = [self._order(key, table, names, field)
                        for key, _, _, table, names, field in self._groups]

    def _order(self, key: str, table: str, names: list, field: str) -> np.ndarray:
        """``order[c]``: the position in ``names`` of the c-th leaf that ``key`` selects."""
        probe = self.system.set_params(self.system.params,
                                       {key: np.arange(len(names), dtype=float)})
        back = getattr(self.system.to_graph(self.system.x0, probe), table)
        order = np.empty(len(names), dtype=int)
        order[[int(getattr(back[name], field)) for name in names]] = np.arange(len(names))
        return order

    def solve(self, values: StepValues):
        """``(junction heads, link flows, solution)`` at ``values`` (numpy arrays and the
        ``solvers.Solution``: ``converged``, ``iterations``, ``residual_norm``)."""
        params = self.system.set_params(self.system.params, self._updates(values))
        system = solvers.System(self._x, params, self.system.structure)
        solution = solvers.solve(system, self.method)
        x = np.asarray(solution.x)
        if bool(solution.converged):
            self._x = solution.x
        return x[self._heads], x[self._flows], solution

    def _updates(self, v: StepValues) -> dict:
        """Parameter updates, one vector per class and field, in canonical leaf order."""
        open_pumps = v.link_open[len(self.network.pipes):] > 0.5
        speeds = np.where(open_pumps & (v.pump_speeds > 0), v.pump_speeds, 1.0)
        arrays = {**dataclasses.asdict(v), "pump_speeds": speeds}
        return {key: np.asarray(arrays[what], dtype=float)[rows][order]
                for (key, what, rows, *_), order in zip(self._groups, self._orders)}
