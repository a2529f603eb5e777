"""What a source's waveform parameters must be (``KIND(p1 p2 ...)`` as written, SI units):
the checks that ``Netlist`` and the reader share."""
from __future__ import annotations

import math

__all__ = ["WAVEFORMS", "check_wave_params"]

#: Waveform functions and how many parameters each takes at most (ngspice-39).
WAVEFORMS = {"PULSE": 8, "SIN": 6, "EXP": 6, "PWL": None}
#: PULSE's durations (parameters 4 to 7), which ngspice-39 cannot run negative.
_PULSE_TIMES = ("TR", "TF", "PW", "PER")


def check_wave_params(kind: str, params: tuple) -> str | None:
    """What is wrong with a waveform's parameters, or None."""
    if kind not in WAVEFORMS:
        return f"waveform {kind} is not supported (use {', '.join(WAVEFORMS)})"
    most = WAVEFORMS[kind]
    if most is None and not params:
        return f"{kind} needs (time value) pairs, e.g. {kind}(0 0 1m 5), got no parameters"
    if not params or (most is not None and len(params) > most):
        return f"{kind} takes 1 to {most} parameters, got {len(params)}"
    if not all(math.isfinite(p) for p in params):
        return f"{kind} parameters must be finite numbers"
    if kind == "PWL":
        times = params[0::2]
        if len(params) % 2 or any(b < a for a, b in zip(times, times[1:])):
            return "PWL needs pairs (time value) with non-decreasing times"
    if kind == "PULSE":
        for i, name in enumerate(_PULSE_TIMES, start=3):
            if len(params) > i and params[i] < 0:
                return (f"PULSE {name} (parameter {i + 1}) must be >= 0, got {params[i]:g} "
                        "(0 or omitted takes ngspice's default)")
    return None
