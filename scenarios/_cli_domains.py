"""The scenarios the command line knows: names, descriptions, shipped examples, runners.

Every domain package exposes ``run(input=None, sweep=None, solver=None, progress=False)``
returning a :class:`Report` (``sweep`` is a :class:`SweepSpec` or None). A domain whose
``run`` is missing is reported as "not available yet" instead of failing obscurely; a ``run``
that returns the domain's JSON document (a dict) instead of a Report is adapted here, and a
Report without a plot gets the default plot for its document (:mod:`scenarios._cli_plots`).
"""
from __future__ import annotations

import dataclasses
import importlib
import inspect
from pathlib import Path
from typing import Any, Mapping

from ._cli_plots import default_draw
from ._cli_report import Report, SweepSpec, read_residual

__all__ = ["SCENARIOS", "Scenario", "ScenarioUnavailable", "DATA"]

#: Shipped example inputs (package data).
DATA = Path(__file__).resolve().parent / "data"


class ScenarioUnavailable(RuntimeError):
    """The domain package does not provide its ``run`` entry yet."""


@dataclasses.dataclass(frozen=True)
class Scenario:
    """One entry of ``python -m scenarios list``; the demo runs ``demo_input`` (default: the
    example) with ``demo_sweep``."""

    name: str
    module: str
    description: str
    example: Path
    sweep_hint: str | None
    demo_sweep: str | None = None
    demo_input: Path | None = None

    def runner(self):
        """The domain's ``run`` function, or raise :class:`ScenarioUnavailable`."""
        try:
            module = importlib.import_module(self.module)
        except ImportError as err:
            raise ScenarioUnavailable(
                f"the {self.name} scenario is not available yet: importing {self.module} "
                f"failed ({err})") from None
        run = getattr(module, "run", None)
        if run is None:
            # TODO(lead): remove once every domain package exports run(...).
            raise ScenarioUnavailable(
                f"the {self.name} scenario is not available yet: {self.module} has no run() "
                "entry point")
        return run

    def available(self) -> bool:
        try:
            self.runner()
        except ScenarioUnavailable:
            return False
        return True

    def run(self, input: str | None, sweep: SweepSpec | None, progress: bool,
            **options: Any) -> Report:
        """Run the domain on ``input`` (default: the shipped example); ``options`` are
        domain-specific keywords of its ``run`` (e.g. powerflow's ``start``)."""
        run = self.runner()
        kwargs: dict[str, Any] = {"sweep": sweep, "progress": progress}
        accepted = inspect.signature(run).parameters
        if not any(p.kind is p.VAR_KEYWORD for p in accepted.values()):
            if sweep is not None and "sweep" not in accepted:
                raise ValueError(f"the {self.name} scenario does not support --sweep yet")
            for name in options:
                if name not in accepted:
                    flag = "--flat-start" if name == "start" else name
                    raise ValueError(f"the {self.name} scenario has no {flag} option")
            kwargs = {k: v for k, v in kwargs.items() if k in accepted}
        kwargs.update(options)
        out = run(str(input) if input is not None else str(self.example), **kwargs)
        report = out if isinstance(out, Report) else _from_json(self.name, out)
        if report.draw is None:
            report.draw = default_draw(self.name, report.json)
        return report


def _from_json(name: str, doc: Any) -> Report:
    """Adapt a domain's JSON document (or an object with ``to_json()``) to a Report."""
    if hasattr(doc, "to_json"):
        doc = doc.to_json()
    if not isinstance(doc, Mapping):
        raise TypeError(f"scenarios.{name}.run returned {type(doc).__name__}; expected a "
                        "Report or the JSON document (a dict)")
    point = doc["sweep"][-1] if doc.get("sweep") else doc
    rows = [(f"{group}[{key}]", value, "")
            for group, values in point.items() if isinstance(values, Mapping)
            for key, value in values.items()]
    return Report(name, str(doc.get("solver", "default")), bool(doc.get("converged", False)),
                  int(doc.get("iterations", 0)), read_residual(doc.get("residual_norm")),
                  rows, dict(doc))


SCENARIOS: dict[str, Scenario] = {s.name: s for s in (
    Scenario("equations", "scenarios.equations",
             "m * x = c equations sharing gradient providers: solve, batch, d x / d m",
             DATA / "equations" / "shared_slopes.json", "m=1:4:31 (a slope) or e1=0:10:11",
             None),
    Scenario("circuit", "scenarios.circuits",
             "nonlinear circuits from SPICE netlists (R, C, L, D, V, I; .op, .dc and .tran)",
             DATA / "circuits" / "ladder_rd_5.cir", "V1=0:9:46 (a source: I-V curve)",
             "V1=0:9.157:46"),
    Scenario("water", "scenarios.water",
             "water distribution networks from EPANET .inp files (Hazen-Williams, pumps)",
             DATA / "water" / "Net1.inp", "demand_multiplier=0.5:1.5:11", None),
    Scenario("powerflow", "scenarios.powerflow",
             "AC power flow from MATPOWER case files (PQ, PV, slack buses; pi-model branches)",
             DATA / "powerflow" / "case9.m", "load_scale=0.8:1.2:9", None),
    Scenario("thermal", "scenarios.thermal",
             "thermal networks with conduction and grey-body radiation",
             DATA / "thermal" / "shielded_plates.json", "heater=0:200:21 (a heat load, W)",
             None),
    Scenario("truss", "scenarios.truss",
             "plane trusses with large displacements (two-bar von Mises arch)",
             DATA / "truss" / "von_mises.json", "P=0:1.25:26 (a load factor)",
             "apex_control.uy=0:-0.25:51", DATA / "truss" / "von_mises_control.json"),
)}
