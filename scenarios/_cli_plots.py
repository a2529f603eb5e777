"""Default plots drawn from a domain's JSON document, for runs whose Report brings none.

The documents follow the formats of ``--json`` (issue 5): circuits ``node_voltages`` /
``source_currents`` (a sweep: one object per point under ``"sweep"``, the swept values under
``"values"``), water ``heads`` / ``flows``, power flow ``vm`` / ``va_deg``.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

__all__ = ["default_draw"]


def default_draw(name: str, doc: Mapping) -> Callable[[Any], None] | None:
    """A ``draw(fig)`` for the document of scenario ``name``, or None if no plot helps."""
    if name == "circuit" and doc.get("sweep"):
        return lambda fig: _iv_curve(fig, doc)
    if name == "water" and doc.get("heads"):
        return lambda fig: _profile(fig, doc["heads"], "head (m)", "heads along the network",
                                    "node")
    if name == "powerflow" and doc.get("vm"):
        return lambda fig: _bus_profile(fig, doc)
    return None


def _iv_curve(fig, doc: Mapping) -> None:
    points = doc["sweep"]
    xs = doc.get("values") or list(range(len(points)))
    ax = fig.add_subplot()
    for source in points[0].get("source_currents", {}):
        ax.plot(xs, [p["source_currents"][source] * 1e3 for p in points], label=source)
    ax.set_xlabel(str(doc.get("parameter", "sweep point")) + (" (V)" if "values" in doc else ""))
    ax.set_ylabel("source current (mA)")
    ax.set_title("I-V curve of the DC sweep")
    ax.grid(True, alpha=0.3)
    ax.legend()


def _profile(fig, values: Mapping, ylabel: str, title: str, xlabel: str, ax=None):
    names = list(values)
    ax = ax or fig.add_subplot()
    ax.plot(range(len(names)), [values[n] for n in names], "o-", ms=4)
    ax.set_xticks(range(len(names)), names, rotation=60 if len(names) > 12 else 0, fontsize=8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    return ax


def _bus_profile(fig, doc: Mapping) -> None:
    top, bottom = fig.subplots(2, 1, sharex=True)
    _profile(fig, doc["vm"], "Vm (p.u.)", "bus voltage profile", "", ax=top)
    if doc.get("va_deg"):
        _profile(fig, doc["va_deg"], "Va (degrees)", "", "bus", ax=bottom)
