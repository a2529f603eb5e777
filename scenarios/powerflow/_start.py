"""Starting voltages of a power flow: the case file's (MATPOWER's default), flat, or DC angles.

Every start holds the set points at PV and slack buses (|V| = Vg, the slack angle); they
differ at the unknowns. ``"case"``: the case file's VM/VA columns (a flat value where the
source has none); ``"flat"``: Vm = 1, every Va at the slack angle (PYPOWER's flat start);
``"dc"``: Vm as flat, Va from the DC power flow (``B' Va = P``, MATPOWER's ``makeBdc``).
Numpy and scipy only: no JAX.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

import solvers

from ._case import PowerCase

__all__ = ["STARTS", "START_NAMES", "start_voltages"]

#: The starts, in the order a failed start falls back through them.
STARTS = ("case", "flat", "dc")
#: What each start is, for reports.
START_NAMES = {"case": "the case file's bus voltages (MATPOWER's default)",
               "flat": "a flat start (Vm = 1, every Va at the slack angle)",
               "dc": "the DC power flow's angles (Vm = 1)"}


def start_voltages(case: PowerCase, start: str) -> tuple[np.ndarray, np.ndarray] | None:
    """``(vm, va)`` per bus in case order (p.u., radians) at ``start`` (one of
    :data:`STARTS`); None when the DC power flow has no finite solution."""
    if start not in STARTS:
        raise ValueError(f"unknown power-flow start {start!r}; choose one of {', '.join(STARTS)}")
    slack = next((b for b in case.buses if b.type == "slack"), None)
    slack_va = math.radians(slack.Va_set_deg or 0.0) if slack is not None else 0.0
    held = [b.type != "PQ" and b.Vset is not None for b in case.buses]
    vm = np.asarray([b.Vset if h else 1.0 for b, h in zip(case.buses, held)], dtype=np.float64)
    va = np.full(len(case.buses), slack_va)
    if start == "case":
        vm = np.asarray([v if h or b.Vm0 is None else b.Vm0
                         for b, h, v in zip(case.buses, held, vm)], dtype=np.float64)
        va = np.asarray([slack_va if b.Va0_deg is None else math.radians(b.Va0_deg)
                         for b in case.buses], dtype=np.float64)
    elif start == "dc":
        va = _dc_angles(case)
        if va is None:
            return None
    for k, b in enumerate(case.buses):
        if b.type == "slack":
            va[k] = math.radians(b.Va_set_deg or 0.0)
    return vm, va


def _dc_angles(case: PowerCase) -> np.ndarray | None:
    """Bus angles of the DC power flow (lossless, |V| = 1; taps and phase shifts kept)."""
    n = len(case.buses)
    f = case.branch_array("from_index").astype(np.int64)
    t = case.branch_array("to_index").astype(np.int64)
    x, tap = case.branch_array("x"), case.branch_array("tap")
    with np.errstate(divide="ignore"):
        b = np.where(x != 0.0, 1.0 / (x * tap), 0.0)
    shift = np.radians(case.branch_array("shift_deg"))
    rows = np.concatenate([f, f, t, t])
    cols = np.concatenate([f, t, f, t])
    bbus = sp.csr_matrix((np.concatenate([b, -b, -b, b]), (rows, cols)), shape=(n, n))
    p_shift = np.zeros(n)
    np.add.at(p_shift, f, -b * shift)
    np.add.at(p_shift, t, b * shift)
    pg = np.nan_to_num(case.bus_array("Pg"))
    p = pg - case.bus_array("Pd") - case.bus_array("Gs") - p_shift
    ref = np.asarray([bus.type == "slack" for bus in case.buses])
    va = np.zeros(n)
    va[ref] = np.radians(case.bus_array("Va_set_deg")[ref])
    free = np.flatnonzero(~ref)
    rhs = p[free] - bbus[free][:, ref] @ va[ref]
    try:
        va[free] = solvers.superlu(bbus[free][:, free]).solve(rhs)  # spsolve: see superlu
    except RuntimeError:  # exactly singular
        return None
    return va if np.all(np.isfinite(va)) else None
