"""A 70 000-bus-class power-flow case from a public one: ``copies`` copies of a MATPOWER case
joined by tie lines.

The largest public ACTIVSg case (70 000 buses) is not in ``../shared``; three copies of
case_ACTIVSg25k make a case of the same size and structure. Copy ``c`` has its bus numbers
shifted by ``c * offset``. Its slack bus becomes a PV bus, joined to the first copy's slack
bus by a short line (x = 0.001 p.u.). Each copy then has the same solution as the original
case, its angles shifted by the small flow on its tie. That gives the benchmark a reference
for the copies too, not only for the memory and time figures.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import numpy as np

_MATRIX = re.compile(r"mpc\.(bus|gen|branch)\s*=\s*\[(.*?)\];", re.S)
_BASE = re.compile(r"mpc\.baseMVA\s*=\s*([0-9.eE+-]+)\s*;")
SLACK, PV = 3, 2


def read_matrices(path: Path) -> tuple[float, dict[str, np.ndarray]]:
    """``(baseMVA, {"bus", "gen", "branch"})`` of a plain MATPOWER case file (comments allowed,
    no continuation lines: the shared cases are written that way)."""
    text = path.read_text()
    matrices = {}
    for name, body in _MATRIX.findall(text):
        rows = [line.split("%", 1)[0].replace(";", " ").replace(",", " ").split()
                for line in body.splitlines()]
        matrices[name] = np.asarray([r for r in rows if r], dtype=float)
    return float(_BASE.search(text).group(1)), matrices


def bus_offset(bus: np.ndarray) -> int:
    """The power of ten above every bus number: copy ``c`` numbers its buses ``c * offset + n``."""
    return 10 ** len(str(int(bus[:, 0].max())))


class Tiled(NamedTuple):
    buses: int   # in the tiled case
    offset: int  # copy c's bus n is numbered c * offset + n
    slack: int   # the original case's slack bus


def tile(source: Path, copies: int, target: Path) -> Tiled:
    """Write ``copies`` tied copies of ``source`` to ``target``."""
    base, m = read_matrices(source)
    offset = bus_offset(m["bus"])
    slack = m["bus"][m["bus"][:, 1] == SLACK, 0][0]
    parts: dict[str, list] = {"bus": [], "gen": [], "branch": []}
    for c in range(copies):
        bus, gen, branch = m["bus"].copy(), m["gen"].copy(), m["branch"].copy()
        bus[:, 0] += c * offset
        gen[:, 0] += c * offset
        branch[:, :2] += c * offset
        if c:
            bus[bus[:, 1] == SLACK, 1] = PV
            tie = np.zeros(branch.shape[1])
            tie[:5] = (slack, slack + c * offset, 0.0, 0.001, 0.0)
            tie[10] = 1.0  # in service; ratio 0 = a line, no rating
            branch = np.vstack([branch, tie])
        for name, part in (("bus", bus), ("gen", gen), ("branch", branch)):
            parts[name].append(part)
    with open(target, "w") as out:
        out.write(f"function mpc = tiled\nmpc.version = '2';\nmpc.baseMVA = {base!r};\n")
        for name, chunks in parts.items():
            out.write(f"mpc.{name} = [\n")
            np.savetxt(out, np.vstack(chunks), fmt="%.17g", delimiter="\t", newline=";\n")
            out.write("];\n")
    return Tiled(sum(len(b) for b in parts["bus"]), offset, int(slack))


def copy_deviations(doc: dict, reference: dict, offset: int, slack: int, copies: int):
    """Max |dVm| (p.u.) and |dVa| (deg, relative to each copy's own slack bus) of every copy
    against the original case's reference."""
    ids = [int(i) for i in reference["buses"]["id"]]
    ref_vm = np.asarray(reference["solution"]["Vm"])
    ref_va = np.asarray(reference["solution"]["Va_deg"])
    ref_va = ref_va - ref_va[ids.index(int(slack))]
    dvm = dva = 0.0
    for c in range(copies):
        vm = np.asarray([doc["vm"][str(i + c * offset)] for i in ids])
        va = np.asarray([doc["va_deg"][str(i + c * offset)] for i in ids])
        va = va - doc["va_deg"][str(int(slack) + c * offset)]
        dvm = max(dvm, float(np.max(np.abs(vm - ref_vm))))
        dva = max(dva, float(np.max(np.abs(va - ref_va))))
    return dvm, dva
