"""What a ``.tran tstep tstop [tstart [tmax]]`` card's times must be (ngspice's rules, SI
seconds): the checks that ``Netlist``, ``simulate_circuit`` and the reader share.

As ngspice: tstep > 0, tstop > 0 and tstart < tstop (the run always starts at t = 0; tstart
only delays the output, so it must also be >= 0 here); tmax omitted or 0 takes the default
step limit ``min(tstep, (tstop - tstart) / 50)``, and a negative tmax is an error.
"""
from __future__ import annotations

import math

__all__ = ["TRAN_VALUES", "tran_problem"]

#: The card's values in order (an index of :func:`tran_problem` points into it).
TRAN_VALUES = ("tstep", "tstop", "tstart", "tmax")
_EXAMPLE = "e.g. '.tran 1u 1m' (output every 1 us up to 1 ms)"


def tran_problem(tstep: float, tstop: float, tstart: float = 0.0,
                 tmax: float | None = None) -> tuple[int, str, str] | None:
    """The first bad value as ``(index into TRAN_VALUES, problem, what to do)``, or None."""
    values = (tstep, tstop, tstart, 0.0 if tmax is None else tmax)
    for k, value in enumerate(values):
        if not math.isfinite(value):
            return k, f"{TRAN_VALUES[k]} {value} must be a finite time", f"write {_EXAMPLE}"
    if not tstep > 0:
        return 0, f"tstep {tstep:g} must be > 0 (it spaces the output)", f"write {_EXAMPLE}"
    if not tstop > 0:
        return 1, f"tstop {tstop:g} must be > 0 (the end time)", f"write {_EXAMPLE}"
    if not 0 <= tstart < tstop:
        return (2, f"tstart {tstart:g} must satisfy 0 <= tstart < tstop ({tstop:g})",
                "give 0 or a time before tstop (tstart only delays the output: the run always "
                "starts at t = 0)")
    if not values[3] >= 0:
        return (3, f"tmax {tmax:g} must be >= 0 (the largest step; 0 or omitted takes the "
                   "default, min(tstep, (tstop - tstart) / 50), as ngspice)",
                "give a positive largest step, or 0 for the default")
    return None
