"""``python -m scenarios run truss``: solve or sweep the shipped two-bar (von Mises) arch."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from .._cli_report import (Report, SweepSpec, failed_note, named_rows, points_text, sweep_rows,
                           sweep_span)
from ._build import read_truss
from ._solve import TrussSweep, solve_truss, sweep_truss

__all__ = ["EXAMPLE", "run"]

#: The shipped example: a shallow two-bar arch loaded at its apex below the limit load.
EXAMPLE = Path(__file__).resolve().parent.parent / "data" / "truss" / "von_mises.json"


def run(input: str | os.PathLike | None = None, sweep: SweepSpec | None = None,
        solver: Any = None, progress: bool | None = None) -> Report:
    """Solve the truss file (default: :data:`EXAMPLE`), or sweep a load factor (``P``) or a
    prescribed support displacement (``SUPPORT.uy``) in batched solves. ``solver``: a method
    object (default: that of :func:`solve_truss`, ``solvers.Default``).
    """
    truss = read_truss(input or EXAMPLE)
    if sweep is not None:
        return _sweep_report(truss, sweep_truss(truss, sweep.param, sweep.values, solver=solver,
                                                progress=progress), solver)
    result = solve_truss(truss, solver=solver)
    doc = result.to_json()
    rows = (named_rows("u[{}]", doc["displacements"], "m")
            + named_rows("N[{}]", doc["axial_forces"], "N")
            + named_rows("R[{}]", doc["reactions"], "N"))

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

    return Report.from_doc("truss", doc, rows, solver, draw,
                           tables=lambda: {"truss": result.to_frame()},
                           title="plane truss, exact large-displacement kinematics")


def _sweep_report(truss, result: TrussSweep, solver) -> Report:
    param = result.param
    watched = _watched_node(truss, param)
    span = sweep_span(param, result.values)
    rows = (sweep_rows("u[{}]", [watched], result.displacement, "m", span)
            + sweep_rows("N[{}]", truss.bar_names, result.axial_force, "N", span))

    u = result.displacement(watched)
    if param in truss.load_names:  # load control: load factor against deflection
        x, y, ylabel = -u[:, 1], result.values, f"load factor of {param}"
    else:  # displacement control: the force the support must apply, against deflection
        support = param.rpartition(".")[0]
        x, y, ylabel = -u[:, 1], -result.reaction(support)[:, 1], f"downward force at {watched} (N)"

    def draw(fig):
        ax = fig.add_subplot()
        ax.plot(x, y, "o-", ms=3)
        ax.axhline(0.0, color="k", lw=0.5)
        ax.set_xlabel(f"downward displacement of {watched} (m)")
        ax.set_ylabel(ylabel)
        ax.set_title("force-displacement curve (batched sweep)")
        ax.grid(True, alpha=0.3)

    return Report.from_doc("truss", result.to_json(), rows, solver, draw,
                           tables=lambda: {"truss": result.to_frame()},
                           title=f"truss, batched sweep of {param}",
                           notes=failed_note(param, result.values, result.arrays["converged"])
                           + _unstable_note(param, result))


def _unstable_note(param: str, result: TrussSweep) -> list:
    """``[note]`` naming the converged points that are no stable equilibrium, else ``[]``."""
    unstable = result.arrays["converged"] & ~result.arrays["stable"]
    if not unstable.any():
        return []
    return [f"{int(unstable.sum())} of {len(result.values)} points are no stable equilibrium (a "
            f"mechanism or unstable compression), at {param} = "
            f"{points_text(result.values, unstable)}: their values "
            "are not meaningful"]


def _watched_node(truss, param: str) -> str:
    """The node the swept load acts on (or the prescribed support's node)."""
    if param in truss.load_names:
        node = truss.loads[truss.load_names.index(param)].node
    else:
        node = truss.supports[truss.support_names.index(param.rpartition(".")[0])].node
    return next(n for n, obj in zip(truss.node_names, truss.nodes) if obj is node)
