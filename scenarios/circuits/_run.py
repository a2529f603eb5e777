"""``python -m scenarios run circuit``: the operating point, or a DC sweep, of a SPICE netlist."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .._cli_report import Report, SweepSpec, solver_name
from ._netlist import DCSweep, Netlist, VoltageSource
from ._solve import solve_circuit, sweep_circuit
from ._spice_reader import read_netlist

__all__ = ["EXAMPLE", "run"]

#: The shipped example: a diode ladder of the validation set (ngspice: V(2) = 2.42856 V).
EXAMPLE = Path(__file__).resolve().parent.parent / "data" / "circuits" / "ladder_rd_5.cir"


def run(input: str | os.PathLike | None = None, sweep: SweepSpec | None = None,
        solver: Any = None, progress: bool | None = None) -> Report:
    """Solve the netlist (default: :data:`EXAMPLE`). ``sweep`` (``V1=0:5:51``: a source by
    name) or else the netlist's ``.dc`` analysis runs as one batched solve; otherwise the
    ``.op`` operating point is computed."""
    netlist = read_netlist(input or EXAMPLE)
    dc = next((a for a in netlist.analyses if isinstance(a, DCSweep)), None)
    if sweep is not None:
        return _sweep_report(netlist, sweep.param, sweep.values, solver, progress)
    if dc is not None:
        return _sweep_report(netlist, dc.source, dc.points(), solver, progress)
    result = solve_circuit(netlist, solver=solver)
    doc = result.to_json()
    doc["diode_currents"] = result.diode_currents()
    rows = ([(f"V({n})", v, "V") for n, v in doc["node_voltages"].items()]
            + [(f"I({n})", v, "A") for n, v in doc["source_currents"].items()]
            + [(f"I({n})", v, "A") for n, v in doc["diode_currents"].items()])
    notes = [] if result.converged else [result.message()]

    def draw(fig):
        ax = fig.add_subplot()
        names = list(doc["node_voltages"])
        ax.bar(names, [doc["node_voltages"][n] for n in names], color="tab:blue")
        ax.set_xlabel("node")
        ax.set_ylabel("voltage (V)")
        ax.set_title(f"DC operating point: {_title(netlist)}")

    return Report("circuit", solver_name(solver), doc["converged"], doc["iterations"],
                  doc["residual_norm"], rows, doc, draw, title=_title(netlist), notes=notes)


def _title(netlist: Netlist) -> str:
    return netlist.title.lstrip("* ").split(":")[0][:60] or "circuit"


def _sweep_report(netlist: Netlist, source: str, values, solver, progress) -> Report:
    result = sweep_circuit(netlist, source, values, solver=solver, progress=bool(progress))
    doc = result.to_json()
    span = f"{source}={result.values[0]:.4g}..{result.values[-1]:.4g}"
    rows = [(f"V({n}) at {span}", f"{v[0]:.6g} .. {v[-1]:.6g}", "V")
            for n, v in ((n, result.voltage(n)) for n in result.columns["node_voltages"])]
    rows += [(f"I({n}) at {span}", f"{i[0]:.6g} .. {i[-1]:.6g}", "A")
             for n, i in ((n, result.source_current(n))
                          for n in result.columns["source_currents"])]
    notes = [] if result.converged else [
        f"{int((~result.arrays['converged']).sum())} of {len(result.values)} points failed"]
    unit = "V" if isinstance(netlist.element(source), VoltageSource) else "A"

    def draw(fig):
        left, right = fig.subplots(1, 2)
        for name in result.columns["source_currents"]:
            left.plot(result.values, result.source_current(name), label=f"I({name})")
        left.set_xlabel(f"{source} ({unit})")
        left.set_ylabel("source current (A)")
        left.set_title("I-V curve")
        left.legend()
        for name in result.columns["node_voltages"][:12]:
            right.plot(result.values, result.voltage(name), label=f"V({name})")
        right.set_xlabel(f"{source} ({unit})")
        right.set_ylabel("node voltage (V)")
        right.set_title("node voltages")
        right.legend(fontsize="small")

    return Report("circuit", solver_name(solver), doc["converged"], doc["iterations"],
                  doc["residual_norm"], rows, doc, draw,
                  title=f"{_title(netlist)}: DC sweep of {source}, {len(result.values)} points "
                        "in one batched solve", notes=notes)
