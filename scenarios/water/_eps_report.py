"""The ``python -m scenarios run water --eps`` report: an extended-period run over [TIMES]."""
from __future__ import annotations

from typing import Any

import numpy as np

from .._cli_report import Report
from ._eps import simulate_eps
from ._inp_types import NotModelled, WaterNetwork

__all__ = ["eps_report"]


def eps_report(net: WaterNetwork, name: str, solver_label: str, method: Any = None) -> Report:
    """Run ``net`` over its DURATION and report tank levels (rows, plot) and the report-grid
    JSON ``{"analysis": "eps", "time", "tank_levels", "heads", "flows", ...}``."""
    if net.duration_s <= 0:
        raise NotModelled(f"--eps: network {name!r} has DURATION 0 in [TIMES] (a single "
                          "snapshot); give it a duration there (e.g. 'Duration 24:00') or run "
                          "without --eps for the t = 0 snapshot", "DURATION")
    result = simulate_eps(net, method=method)
    doc = {**result.to_json(), "solver": solver_label}
    hours = np.asarray(doc["time"]) / 3600.0
    rows = [("hydraulic times", str(len(result)), f"{result.times[-1] / 3600:g} h")]
    rows += [(f"level[{k}] at {h:g} h", v, "m") for k, levels in doc["tank_levels"].items()
             for h, v in ((hours[0], levels[0]), (hours[-1], levels[-1]))]
    events = [f"t = {t} s: step ended by {e}" for t, e in zip(result.times, result.step_ends)
              if e not in ("hydraulic step", "report time", "pattern step", "end")]

    def draw(fig):
        ax = fig.add_subplot()
        for k, levels in doc["tank_levels"].items():
            ax.plot(hours, levels, label=f"tank {k}")
        ax.set_xlabel("time (h)")
        ax.set_ylabel("tank level (m)")
        ax.set_title(f"{name}: tank levels")
        ax.legend()

    return Report("water", solver_label, doc["converged"], doc["iterations"],
                  doc["residual_norm"], rows, doc, draw if doc["tank_levels"] else None,
                  title=f"water network {name!r}, extended period ({result.times[-1]} s)",
                  notes=events[:10], tables=result.to_frames)
