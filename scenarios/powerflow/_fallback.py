"""Solve from the chosen start; when Newton fails there, from the other starts, then with the
default method's fallback stages (damped Newton, trust region, continuation).

This is MATPOWER's practice made automatic: some real cases (ACTIVSg10k) diverge from a flat
start and converge in 5 steps from the case file's voltages, others the other way round.
Each attempt is recorded, so the output says which start produced the answer.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

import solvers

from .._network_solve import NetworkMethod, Solved, solve_graph
from ._case import PowerCase
from ._elements import PQBus, PowerGraph, PVBus
from ._start import STARTS, start_voltages

__all__ = ["Attempt", "solve_with_fallback"]

#: ``Attempt.method`` of the fallback stages run after every start failed.
FALLBACKS = "fallbacks"


@dataclasses.dataclass(frozen=True)
class Attempt:
    """One solve: from ``start``, with ``method`` ``"newton"`` or ``"fallbacks"``."""

    start: str
    method: str
    converged: bool
    iterations: int
    residual_norm: float

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def solve_with_fallback(case: PowerCase, graph: PowerGraph, start: str, method: Any,
                        fallback: bool = True) -> tuple[Solved, Attempt, list[Attempt]]:
    """``(solved, the attempt that produced it, every attempt)``: ``graph`` holds the chosen
    ``start``. A caller's ``method`` (not a :class:`NetworkMethod`) runs as given from each
    start, with no fallback stages after."""
    system = solvers.System.build(graph)
    if isinstance(method, NetworkMethod):
        first, rest = method.stages(system)
    else:
        first, rest = method, None
    starts = [start] + ([s for s in STARTS if s != start] if fallback else [])
    tried, attempts, best = [], [], None
    for name in starts:
        x0 = system.x0 if name == start else _start_vector(case, graph, system, name)
        if x0 is None or any(np.array_equal(x0, seen) for seen in tried):
            continue  # no DC solution, or the same point as a start already tried
        tried.append(x0)
        run = system if name == start else solvers.System(x0, system.params, system.structure)
        solved = solve_graph(run, first)
        attempt = _attempt(name, "newton", solved)
        attempts.append(attempt)
        best = _better(best, (solved, attempt))
        if attempt.converged:
            return solved, attempt, attempts
    if fallback and rest is not None:
        solved = solve_graph(system, rest)
        attempts.append(_attempt(start, FALLBACKS, solved))
        best = _better(best, (solved, attempts[-1]))
    return best[0], best[1], attempts


def _attempt(start: str, method: str, solved: Solved) -> Attempt:
    s = solved.solution
    return Attempt(start, method, bool(s.converged), int(s.iterations), float(s.residual_norm))


def _better(best, new):
    """The converged one, else the smaller residual (NaN counts as infinite)."""
    if best is None:
        return new
    key = lambda pair: (not pair[1].converged,  # noqa: E731
                        np.nan_to_num(pair[1].residual_norm, nan=np.inf))
    return new if key(new) < key(best) else best


def _start_vector(case: PowerCase, graph: PowerGraph, system, start: str) -> np.ndarray | None:
    """``system.x0`` with every bus's unknowns at ``start`` (None: the start does not exist)."""
    voltages = start_voltages(case, start)
    if voltages is None:
        return None
    vm, va = voltages
    x = np.array(system.x0)
    for k, bus in enumerate(case.buses):
        node = graph.buses[bus.id]
        if isinstance(node, PQBus):  # unknowns in field order: va, vm
            x[system.locate(node)] = (va[k], vm[k])
        elif isinstance(node, PVBus):
            x[system.locate(node)] = va[k]
    return x
