"""``python -m scenarios run truss``: solve or sweep the shipped two-bar (von Mises) arch."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from .._cli_report import Report, SweepSpec, fmt, quick_solve, solver_name
from ._build import read_truss
from ._solve import solve_truss, sweep_truss

__all__ = ["EXAMPLE", "run"]

#: The shipped example: a shallow two-bar arch loaded at its apex below the limit load.
EXAMPLE = Path(__file__).resolve().parent.parent / "data" / "truss" / "von_mises.json"


def run(input: str | os.PathLike | None = None, sweep: SweepSpec | None = None,
        solver: Any = None, progress: bool | None = None) -> Report:
    """Solve the truss file (default: :data:`EXAMPLE`), or sweep a load factor (``P``) or a
    prescribed support displacement (``SUPPORT.uy``) in batched solves.

    ``solver``: a method object; by default Newton, and ``solvers.Default()`` only if Newton
    fails (see :func:`scenarios._cli_report.quick_solve`).
    """
    truss = read_truss(input or EXAMPLE)
    if sweep is not None:
        return _sweep_report(truss, sweep, solver, progress)
    result, method = quick_solve(lambda m: solve_truss(truss, solver=m), solver)
    doc = result.to_json()
    rows = ([(f"u[{n}]", v, "m") for n, v in doc["displacements"].items()]
            + [(f"N[{n}]", v, "N") for n, v in doc["axial_forces"].items()]
            + [(f"R[{n}]", v, "N") for n, v in doc["reactions"].items()])

    def draw(fig):
        ax = fig.add_subplot()
        for bar in result.graph.bars:
            for shift, style in ((False, "k--"), (True, "b-")):
                ends = [np.asarray(n.X) + (np.asarray(n.u) if shift else 0) for n in (bar.a, bar.b)]
                ax.plot([e[0] for e in ends], [e[1] for e in ends], style, lw=1 + shift)
        ax.set_aspect("equal", adjustable="datalim")
        ax.set_title("truss: reference (dashed) and deformed (solid) geometry")
        ax.set_xlabel("x (m)")
        ax.set_ylabel("y (m)")

    return Report("truss", solver_name(method), doc["converged"], doc["iterations"],
                  doc["residual_norm"], rows, doc, draw,
                  title="plane truss, exact large-displacement kinematics")


def _sweep_report(truss, sweep: SweepSpec, solver, progress) -> Report:
    result, method = quick_solve(lambda m: sweep_truss(truss, sweep.param, sweep.values,
                                                       solver=m, progress=progress), solver)
    doc = result.to_json()
    watched = _watched_node(truss, sweep.param)
    u = result.displacement(watched)
    span = f"{sweep.param}={sweep.values[0]:.4g}..{sweep.values[-1]:.4g}"
    rows = [(f"u[{watched}] at {span}", f"{fmt(u[0])} .. {fmt(u[-1])}", "m")]
    rows += [(f"N[{b}] at {span}", f"{result.axial_force(b)[0]:.6g} .. "
              f"{result.axial_force(b)[-1]:.6g}", "N") for b in truss.bar_names]

    if sweep.param in truss.load_names:  # load control: load factor against deflection
        x, y, ylabel = -u[:, 1], result.values, f"load factor of {sweep.param}"
    else:  # displacement control: the force the support must apply, against deflection
        support = sweep.param.rpartition(".")[0]
        x, y, ylabel = -u[:, 1], -result.reaction(support)[:, 1], f"downward force at {watched} (N)"

    def draw(fig):
        ax = fig.add_subplot()
        ax.plot(x, y, "o-", ms=3)
        ax.axhline(0.0, color="k", lw=0.5)
        ax.set_xlabel(f"downward displacement of {watched} (m)")
        ax.set_ylabel(ylabel)
        ax.set_title("force-displacement curve (batched sweep)")
        ax.grid(True, alpha=0.3)

    return Report("truss", solver_name(method), doc["converged"], doc["iterations"],
                  doc["residual_norm"], rows, doc, draw, title=f"truss, batched sweep of {sweep.param}")


def _watched_node(truss, param: str) -> str:
    """The node the swept load acts on (or the prescribed support's node)."""
    if param in truss.load_names:
        node = truss.loads[truss.load_names.index(param)].node
    else:
        node = truss.supports[truss.support_names.index(param.rpartition(".")[0])].node
    return next(n for n, obj in zip(truss.node_names, truss.nodes) if obj is node)
