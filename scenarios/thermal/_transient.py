"""A thermal network through time: heat capacities store ``C T``, so each balance gains
``C dT/dt`` (``solvers.simulate``); without capacities a network is only a steady state."""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

import solvers

from .._trajectories import trajectories
from ._checks import check_anchored
from ._model import ThermalNetwork

__all__ = ["ThermalTransient", "simulate_thermal"]


@dataclasses.dataclass(frozen=True)
class ThermalTransient:
    """Temperatures (K) on the output times: ``temperature("plate")`` is a (G,) array."""

    time: np.ndarray
    temperatures: dict
    solution: Any

    @property
    def converged(self) -> bool:
        return bool(np.all(np.asarray(self.solution.converged)))

    def temperature(self, node: str) -> np.ndarray:
        if node not in self.temperatures:
            raise KeyError(f"no node named {node!r}; the names are {', '.join(self.temperatures)}")
        return self.temperatures[node]


def simulate_thermal(network: ThermalNetwork, times, *, initial: str = "given",
                     integrator: solvers.Integrator | None = None) -> ThermalTransient:
    """Temperatures from the nodes' given ones (``initial="given"``) or from the steady
    state (``"dc"``) over ``times`` (s). Default tolerances: 1e-6 relative, 1e-6 K."""
    if not network.capacities:
        raise ValueError("the network has no heat capacities, so it has no dynamics: add "
                         "capacities={name: (node, C)} to build_thermal")
    if initial == "dc":  # a steady state needs a fixed temperature in every part
        check_anchored(network)
    cfg = integrator or solvers.Integrator(rtol=1e-6, atol=1e-6)
    times = np.asarray(times, dtype=float)
    sol = solvers.simulate(network, times, integrator=cfg, initial=initial)
    of = trajectories(sol)
    temps = {name: of(node)[:, 0] for name, node in zip(network.node_names, network.nodes)}
    return ThermalTransient(times, temps, sol)
