"""The MATLAB unit conversions of MATPOWER's distribution cases, read as data, never run.

MATPOWER's distribution cases (case33bw, case69, case141 and 20 more) give branch r and x in
ohms and loads in kW, then convert them after their tables with the same few statements::

    [PQ, PV, REF, ...] = idx_bus;   [F_BUS, T_BUS, BR_R, BR_X, ...] = idx_brch;
    Vbase = mpc.bus(1, BASE_KV) * 1e3;      Sbase = mpc.baseMVA * 1e6;
    mpc.branch(:, [BR_R BR_X]) = mpc.branch(:, [BR_R BR_X]) / (Vbase^2 / Sbase);
    mpc.bus(:, [PD, QD]) = mpc.bus(:, [PD, QD]) / 1e3;
    pf = 0.85;  mpc.bus(:, QD) = mpc.bus(:, PD) * sin(acos(pf));
    mpc.bus(:, PD) = mpc.bus(:, PD) * pf;

`recognize` matches exactly these statements (blanks aside) and `apply` performs their fixed
arithmetic on the parsed matrices, in file order; any other statement stays refused.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from .._errors import FormatError

__all__ = ["Conversion", "recognize", "apply"]

#: MATPOWER's idx_bus and idx_brch outputs, in order (the names a declaration may bind).
_INDEX_NAMES = {
    "idx_bus": ("PQ", "PV", "REF", "NONE", "BUS_I", "BUS_TYPE", "PD", "QD", "GS", "BS",
                "BUS_AREA", "VM", "VA", "BASE_KV", "ZONE", "VMAX", "VMIN", "LAM_P", "LAM_Q",
                "MU_VMAX", "MU_VMIN"),
    "idx_brch": ("F_BUS", "T_BUS", "BR_R", "BR_X", "BR_B", "RATE_A", "RATE_B", "RATE_C", "TAP",
                 "SHIFT", "BR_STATUS", "PF", "QF", "PT", "QT", "MU_SF", "MU_ST", "ANGMIN",
                 "ANGMAX", "MU_ANGMIN", "MU_ANGMAX"),
}
_DECLARATION = re.compile(r"\[([A-Z_,]*)\]=(idx_bus|idx_brch);")
_PF = re.compile(r"pf=(\d+(?:\.\d*)?|\.\d+);")
#: The statements (blanks removed) -> (what they do, the index names they need).
_STATEMENTS = {
    "Vbase=mpc.bus(1,BASE_KV)*1e3;": ("vbase", ("BASE_KV",)),
    "Sbase=mpc.baseMVA*1e6;": ("sbase", ()),
    "mpc.branch(:,[BR_RBR_X])=mpc.branch(:,[BR_RBR_X])/(Vbase^2/Sbase);": ("ohms",
                                                                            ("BR_R", "BR_X")),
    "mpc.bus(:,[PD,QD])=mpc.bus(:,[PD,QD])/1e3;": ("kw", ("PD", "QD")),
    "mpc.bus(:,QD)=mpc.bus(:,PD)*sin(acos(pf));": ("pf_q", ("PD", "QD")),
    "mpc.bus(:,PD)=mpc.bus(:,PD)*pf;": ("pf_p", ("PD",)),
}


@dataclass(frozen=True)
class Conversion:
    """One recognized statement: its line, what it does, and the power factor of ``pf``."""

    line: int
    kind: str
    value: float = 0.0


def recognize(code: str, line: int, declared: set) -> Conversion | None:
    """The conversion ``code`` (one statement) is, or None; ``declared`` collects the index
    names bound so far (a conversion needs its names bound, as MATLAB does)."""
    compact = "".join(code.split())
    if not compact.endswith(";"):
        compact += ";"
    found = _DECLARATION.fullmatch(compact)
    if found:
        names, standard = found.group(1).split(","), _INDEX_NAMES[found.group(2)]
        if tuple(names) != standard[:len(names)]:  # another order would bind other columns
            return None
        declared.update(names)
        return Conversion(line, "index")
    power_factor = _PF.fullmatch(compact)
    if power_factor:
        return Conversion(line, "pf", float(power_factor.group(1)))
    kind, needs = _STATEMENTS.get(compact, (None, ()))
    if kind is None or not declared.issuperset(needs):
        return None
    return Conversion(line, kind)


def apply(path: str, conversions: list, matrices: dict, base_mva: float) -> list[str]:
    """Perform ``conversions`` on the ``bus`` and ``branch`` matrices (in place, file order);
    returns notes saying what changed."""
    values: dict = {}
    notes = []
    for c in conversions:
        if c.kind == "index":
            continue
        if c.kind in ("pf", "sbase"):
            values[c.kind] = c.value if c.kind == "pf" else base_mva * 1e6
            continue
        table = _table(path, c, matrices, "branch" if c.kind == "ohms" else "bus")
        if c.kind == "vbase":
            values["vbase"] = float(table[0, 9]) * 1e3
        elif c.kind == "ohms":
            z_base = _needed(path, c, values, "vbase") ** 2 / _needed(path, c, values, "sbase")
            table[:, 2:4] /= z_base
            notes.append(f"branch r, x converted from ohms to p.u. (Z base {z_base:g} ohm), as "
                         f"the file's MATLAB code on line {c.line} does")
        elif c.kind == "kw":
            table[:, 2:4] /= 1e3
            notes.append(f"loads converted from kW/kVAr to MW/MVAr, as line {c.line} does")
        elif c.kind == "pf_q":
            table[:, 3] = table[:, 2] * math.sin(math.acos(_needed(path, c, values, "pf")))
        else:  # pf_p
            table[:, 2] *= _needed(path, c, values, "pf")
            notes.append(f"loads set to power factor {values['pf']:g}, as line {c.line} does")
    return notes


def _table(path: str, c: Conversion, matrices: dict, key: str) -> np.ndarray:
    """The data of ``mpc.<key>`` as assigned before the statement on ``c.line``."""
    matrix = matrices.get(key)
    if matrix is None or matrix.line > c.line or matrix.data is None or not len(matrix.data):
        raise FormatError(path, c.line, f"this conversion reads mpc.{key}, which is not a "
                          "full matrix assigned before it", f"assign mpc.{key} above it")
    return matrix.data


def _needed(path: str, c: Conversion, values: dict, name: str) -> float:
    if name not in values:
        raise FormatError(path, c.line, f"this conversion uses {name}, which is not assigned "
                          "before it", f"assign {name} above it, as MATPOWER's cases do")
    return values[name]
