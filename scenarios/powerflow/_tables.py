"""Tables of a power-flow solution, named as pandapower's ``res_bus`` and ``res_line``."""
from __future__ import annotations

from typing import Any

import numpy as np

from .._tables import pandas

__all__ = ["bus_frame", "branch_frame", "branch_columns"]


def bus_frame(result: Any) -> Any:
    """One row per bus (index ``bus``: the case's bus numbers): ``type``, ``vm_pu``,
    ``va_degree``, ``p_inj_mw``/``q_inj_mvar`` (net injection into the network: generation
    minus load and shunt; pandapower's ``p_mw`` is its negative), ``pg_mw``/``qg_mvar``."""
    base = result.model.case.base_mva
    buses = [result.bus(b.id) for b in result.model.case.buses]
    rows = [{"type": b.type, "vm_pu": b.vm, "va_degree": b.va_deg, "p_inj_mw": b.p * base,
             "q_inj_mvar": b.q * base, "pg_mw": b.pg * base, "qg_mvar": b.qg * base}
            for b in buses]
    return pandas().DataFrame(rows, index=pandas().Index([b.id for b in buses], name="bus"))


def branch_frame(result: Any) -> Any:
    """One row per in-service branch (index ``branch``: its position in ``case.branches``):
    the columns of :func:`branch_columns`."""
    index = pandas().Index(result.model.case.branch_array("index"), name="branch")
    return pandas().DataFrame(branch_columns(result), index=index)


def branch_columns(result: Any) -> dict:
    """Arrays over ``case.branches``: ``from_bus``, ``to_bus``, power sent in at each end
    ``p_from_mw``, ``q_from_mvar``, ``p_to_mw``, ``q_to_mvar``, losses ``pl_mw``,
    ``ql_mvar``, and ``loading_percent``: the larger end's apparent power over RATE_A (NaN
    for unrated branches)."""
    case = result.model.case
    p_f, q_f, p_t, q_t = result.branch_flows() * case.base_mva
    rating = case.branch_array("rate_a").astype(float) * case.base_mva
    apparent = np.maximum(np.hypot(p_f, q_f), np.hypot(p_t, q_t))
    with np.errstate(divide="ignore", invalid="ignore"):
        loading = np.where(rating > 0, 100.0 * apparent / rating, np.nan)
    return {"from_bus": case.branch_array("from_bus"), "to_bus": case.branch_array("to_bus"),
            "p_from_mw": p_f, "q_from_mvar": q_f, "p_to_mw": p_t, "q_to_mvar": q_t,
            "pl_mw": p_f + p_t, "ql_mvar": q_f + q_t, "loading_percent": loading}
