"""Time stepping of ``F(x, p, t) + dQ(x, p)/dt = 0``: the `Integrator` settings, the
``TRANSIENT_RESULTS`` codes and the variable-step implicit time loop (Newton per step,
local-truncation-error step control, breakpoints, output interpolation)."""

from ._integrator import TRANSIENT_RESULTS, Integrator

__all__ = ["TRANSIENT_RESULTS", "Integrator"]
