"""``python -m scenarios run thermal``: solve or sweep the shipped shielded-plates network."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .._cli_report import (Report, SweepSpec, failed_note, named_rows, plot_bars, plot_lines,
                           sweep_rows, sweep_span)
from ._build import read_thermal
from ._solve import ThermalSweep, solve_thermal, sweep_thermal

__all__ = ["EXAMPLE", "run"]

#: The shipped example: a heated plate, a radiation shield and a plate held at 300 K.
EXAMPLE = Path(__file__).resolve().parent.parent / "data" / "thermal" / "shielded_plates.json"


def run(input: str | os.PathLike | None = None, sweep: SweepSpec | None = None,
        solver: Any = None, progress: bool | None = None) -> Report:
    """Solve the network file (default: :data:`EXAMPLE`), or sweep a load, boundary
    temperature or conductance by name in batched solves. ``solver``: a method object
    (default: that of :func:`solve_thermal`, ``solvers.Default``).
    """
    net = read_thermal(input or EXAMPLE)
    if sweep is not None:
        return _sweep_report(net, sweep_thermal(net, sweep.param, sweep.values, solver=solver,
                                                progress=progress), solver)
    result = solve_thermal(net, solver=solver)
    doc = result.to_json()
    rows = (named_rows("T[{}]", doc["temperatures"], "K")
            + named_rows("q[{}]", doc["heat_flows"], "W")
            + named_rows("boundary q[{}]", doc["boundary_heat"], "W")
            + [("energy imbalance", doc["energy_imbalance"], "W")])

    def draw(fig):
        temperatures = doc["temperatures"]
        plot_bars(fig.add_subplot(), temperatures, "temperature (K)",
                  "steady-state node temperatures", "tab:red",
                  bottom=0.9 * min(temperatures.values()))

    return Report.from_doc("thermal", doc, rows, solver, draw,
                           tables=lambda: {"thermal": result.to_frame()},
                           title="thermal network with conduction and grey-body radiation")


def _sweep_report(net, result: ThermalSweep, solver) -> Report:
    names, param = net.node_names, result.param
    rows = sweep_rows("T[{}]", names, result.temperature, "K", sweep_span(param, result.values))

    def draw(fig):
        plot_lines(fig.add_subplot(), result.values, {n: result.temperature(n) for n in names},
                   param, "temperature (K)", f"temperatures over a sweep of {param}")

    return Report.from_doc("thermal", result.to_json(), rows, solver, draw,
                           tables=lambda: {"thermal": result.to_frame()},
                           title=f"thermal network, batched sweep of {param}",
                           notes=failed_note(param, result.values, result.arrays["converged"]))
