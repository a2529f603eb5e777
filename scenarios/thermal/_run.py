"""``python -m scenarios run thermal``: solve or sweep the shipped shielded-plates network."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any


from .._cli_report import Report, SweepSpec, quick_solve, solver_name
from ._build import read_thermal
from ._solve import solve_thermal, sweep_thermal

__all__ = ["EXAMPLE", "run"]

#: The shipped example: a heated plate, a radiation shield and a plate held at 300 K.
EXAMPLE = Path(__file__).resolve().parent.parent / "data" / "thermal" / "shielded_plates.json"


def run(input: str | os.PathLike | None = None, sweep: SweepSpec | None = None,
        solver: Any = None, progress: bool | None = None) -> Report:
    """Solve the network file (default: :data:`EXAMPLE`), or sweep a load, boundary
    temperature or conductance by name in batched solves.

    ``solver``: a method object; by default Newton, and ``solvers.Default()`` only if Newton
    fails (see :func:`scenarios._cli_report.quick_solve`).
    """
    net = read_thermal(input or EXAMPLE)
    if sweep is not None:
        return _sweep_report(net, sweep, solver, progress)
    result, method = quick_solve(lambda m: solve_thermal(net, solver=m), solver)
    doc = result.to_json()
    rows = ([(f"T[{n}]", v, "K") for n, v in doc["temperatures"].items()]
            + [(f"q[{n}]", v, "W") for n, v in doc["heat_flows"].items()]
            + [(f"boundary q[{n}]", v, "W") for n, v in doc["boundary_heat"].items()]
            + [("energy imbalance", doc["energy_imbalance"], "W")])

    def draw(fig):
        ax = fig.add_subplot()
        names = list(doc["temperatures"])
        ax.bar(names, [doc["temperatures"][n] for n in names], color="tab:red")
        ax.set_ylabel("temperature (K)")
        ax.set_title("steady-state node temperatures")
        ax.set_ylim(bottom=0.9 * min(doc["temperatures"].values()))

    return Report("thermal", solver_name(method), doc["converged"], doc["iterations"],
                  doc["residual_norm"], rows, doc, draw,
                  title="thermal network with conduction and grey-body radiation")


def _sweep_report(net, sweep: SweepSpec, solver, progress) -> Report:
    result, method = quick_solve(lambda m: sweep_thermal(net, sweep.param, sweep.values,
                                                         solver=m, progress=progress), solver)
    doc = result.to_json()
    span = f"{sweep.param}={sweep.values[0]:.4g}..{sweep.values[-1]:.4g}"
    rows = [(f"T[{n}] at {span}", f"{t[0]:.6g} .. {t[-1]:.6g}", "K")
            for n, t in ((n, result.temperature(n)) for n in net.node_names)]

    def draw(fig):
        ax = fig.add_subplot()
        for name in net.node_names:
            ax.plot(result.values, result.temperature(name), label=name)
        ax.set_xlabel(sweep.param)
        ax.set_ylabel("temperature (K)")
        ax.set_title(f"temperatures over a sweep of {sweep.param}")
        ax.legend()

    return Report("thermal", solver_name(method), doc["converged"], doc["iterations"],
                  doc["residual_norm"], rows, doc, draw,
                  title=f"thermal network, batched sweep of {sweep.param}")
