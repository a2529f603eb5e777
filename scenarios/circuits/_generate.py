"""Generated circuits for scale tests and benchmarks, as :class:`Netlist` objects or SPICE text.

* :func:`grid_netlist`: a k x k grid of resistors with a diode from every node to ground,
  driven by voltage sources (each through one resistor) at two opposite corners (issue 4's
  ngspice anchor: k = 100 is about 30 000 elements, k = 180 about 97 000). The series
  resistor keeps a diode from sitting directly across a source, where SPICE's law would
  give ~1e70 A.
* :func:`diode_ladder_netlist`: an n-node ladder, a source driving a chain of series
  resistors with a diode from every other node to ground (a tridiagonal Jacobian).
"""
from __future__ import annotations

import numpy as np

from ._netlist import (GROUND, DCSweep, Diode, DiodeModel, Netlist, OperatingPoint, Resistor,
                       VoltageSource)

__all__ = ["grid_netlist", "grid_spice", "diode_ladder_netlist", "diode_ladder_spice",
           "TIGHT_OPTIONS"]

#: The tolerances of the validation decks (ngspice then agrees with an exact root to ~1e-12 V).
TIGHT_OPTIONS = {"reltol": 1e-12, "vntol": 1e-15, "abstol": 1e-18, "gmin": 1e-12}
_DEFAULT_MODEL = DiodeModel("DGEN", IS=1e-14, N=1.0)


def _resistances(count: int, r: float, spread: float, seed: int | None) -> np.ndarray:
    """``count`` values: all ``r``, or log-uniform in [r / spread, r * spread] for a seed."""
    if seed is None or spread == 1.0:
        return np.full(count, float(r))
    rng = np.random.default_rng(seed)
    return np.round(r * np.exp(rng.uniform(-1.0, 1.0, count) * np.log(spread)), 3)


def _analyses(sweep):
    if sweep is None:
        return (OperatingPoint(),)
    return (OperatingPoint(), DCSweep("V1", *map(float, sweep)))


def grid_netlist(k: int, *, r: float = 100.0, v1: float = 5.0, v2: float = 3.0,
                 model: DiodeModel = _DEFAULT_MODEL, spread: float = 1.0,
                 seed: int | None = None, tight: bool = True, sweep=None) -> Netlist:
    """k x k nodes ``n{row}_{col}``; resistors between neighbours (``r`` ohm, or log-uniform
    within a factor ``spread`` for a ``seed``); a diode from every node to ground; ``V1`` drives
    ``n0_0`` and ``V2`` the opposite corner, each through a resistor ``r`` (nodes ``s1``,
    ``s2``). ``tight``: the validation decks' .options; ``sweep``: ``(start, stop, step)``
    of a ``.dc V1`` analysis."""
    if k < 2:
        raise ValueError(f"grid_netlist needs k >= 2 (two distinct corners), got k={k}")
    name = lambda i, j: f"n{i}_{j}"  # noqa: E731
    pairs = [(name(i, j), name(i, j + 1)) for i in range(k) for j in range(k - 1)]
    pairs += [(name(i, j), name(i + 1, j)) for i in range(k - 1) for j in range(k)]
    values = _resistances(len(pairs), r, spread, seed)
    elements = [VoltageSource("V1", "s1", GROUND, float(v1)),
                VoltageSource("V2", "s2", GROUND, float(v2)),
                Resistor("RS1", "s1", name(0, 0), float(r)),
                Resistor("RS2", "s2", name(k - 1, k - 1), float(r))]
    elements += [Resistor(f"R{m + 1}", a, b, float(v)) for m, ((a, b), v)
                 in enumerate(zip(pairs, values))]
    elements += [Diode(f"D{i * k + j + 1}", name(i, j), GROUND, model.name)
                 for i in range(k) for j in range(k)]
    return Netlist(f"* resistor grid {k}x{k} with a diode from every node to ground",
                   elements, {model.name: model}, _analyses(sweep),
                   dict(TIGHT_OPTIONS) if tight else {})


def grid_spice(k: int, **kwargs) -> str:
    """:func:`grid_netlist` as SPICE text (for ngspice or ``read_netlist``)."""
    return grid_netlist(k, **kwargs).to_spice()


def diode_ladder_netlist(n: int, *, r: float = 100.0, v: float = 5.0,
                         model: DiodeModel = _DEFAULT_MODEL, spread: float = 1.0,
                         seed: int | None = None, tight: bool = True, sweep=None) -> Netlist:
    """Nodes ``1..n``: ``V1`` drives node 1; ``R{k}`` joins nodes k and k+1 (``r`` ohm, or
    log-uniform within a factor ``spread`` for a ``seed``); ``D{k}`` goes from node k to
    ground for k = 2..n."""
    if n < 2:
        raise ValueError(f"diode_ladder_netlist needs n >= 2 nodes, got n={n}")
    values = _resistances(n - 1, r, spread, seed)
    elements = [VoltageSource("V1", "1", GROUND, float(v))]
    elements += [Resistor(f"R{m}", str(m), str(m + 1), float(values[m - 1])) for m in range(1, n)]
    elements += [Diode(f"D{m}", str(m), GROUND, model.name) for m in range(2, n + 1)]
    return Netlist(f"* diode ladder with {n} nodes", elements, {model.name: model},
                   _analyses(sweep), dict(TIGHT_OPTIONS) if tight else {})


def diode_ladder_spice(n: int, **kwargs) -> str:
    """:func:`diode_ladder_netlist` as SPICE text."""
    return diode_ladder_netlist(n, **kwargs).to_spice()
