"""How a ``.tran`` run ended, in a deck's terms: the integrator's own messages name
``Integrator`` settings (``hmin``, ``max_steps``, ``initial='given'``) that a deck cannot set."""
from __future__ import annotations

import numpy as np

import solvers

__all__ = ["deck_message"]

R = solvers.TRANSIENT_RESULTS
_NAN_AFTER = "The output after that time is NaN."
_ADVICE = {
    R.step_too_small: (
        "after t = {t:.6g} s the step fell below the smallest, {hmin:.3g} s ({floor}), with "
        "Newton or the error test failing: the circuit may jump there (a source corner with no "
        "breakpoint) or have no solution. Lower tmax (the 4th .tran value{follows}) or check "
        "the circuit near that time. " + _NAN_AFTER),
    R.max_steps_reached: (
        "the run used all its {max_steps} steps by t = {t:.6g} s: raise tmax (the 4th .tran "
        "value) or tstep where they hold the steps small, loosen .options reltol, or shorten "
        "tstop; from Python, pass simulate_circuit(..., integrator=integrator_for(netlist, "
        "system, tran, max_steps=...)). " + _NAN_AFTER),
    R.time_resolution: (
        "after t = {t:.6g} s the step fell below the resolution of the time there ({dtype}: "
        "times {ulp:.3g} s apart; the smallest step, {floor}, is {hmin:.3g} s), with Newton "
        "or the error test failing. {what} " + _NAN_AFTER),
    R.initial_point_failed: (
        "the operating point at t = 0 did not converge: check the circuit's .op, or add uic to "
        "the .tran card to start from the .ic values (0 V elsewhere) without one."),
}

#: What to do at the time's resolution: in float32 (True), or in float64 (False).
_RESOLUTION_WHAT = {
    True: ("Enable float64 with jax.config.update(\"jax_enable_x64\", True) before reading the "
           "deck (python -m scenarios does), or move the events nearer t = 0 (shorter source "
           "delays and tstop), where times are finer."),
    False: ("The circuit may jump there (a source corner with no breakpoint) or have no "
            "solution: check the circuit near that time."),
}


#: The smallest step: a deck's (``integrator_for``'s, 1e-11 of ``hmax``: True) or another;
#: and whether a lower tmax lowers it.
_FLOOR = {
    True: ("1e-11 of the .tran step limit, as ngspice's delmin",
           "; the smallest step goes down with it"),
    False: ("given with the integrator, not a deck's 1e-11 of the .tran step limit", ""),
}


def deck_message(solution, integrator: solvers.Integrator | None) -> str:
    """``solution.message()``, with the advice for a deck where a failure's advice names
    settings a deck cannot give (``integrator``: the deck's, from ``integrator_for``; one
    without ``hmin``, given from Python, keeps the library's message). The time is where
    the run stopped (``solution.t_stop``)."""
    code = R(int(np.asarray(solution.result)))
    if code not in _ADVICE or integrator is None or integrator.hmin is None:
        return solution.message()
    stop = np.asarray(solution.t_stop)
    floor, follows = _FLOOR[_deck_floor(integrator)]
    text = _ADVICE[code].format(t=float(stop), hmin=integrator.hmin,
                                max_steps=integrator.max_steps, dtype=stop.dtype.name,
                                ulp=float(np.spacing(stop)), floor=floor, follows=follows,
                                what=_RESOLUTION_WHAT[stop.dtype.itemsize < 8])
    return f"{code.name}: {text}"


def _deck_floor(integrator: solvers.Integrator) -> bool:
    """Whether ``hmin`` is a deck's: ``MIN_STEP_FRACTION`` of ``hmax`` (``integrator_for``)."""
    from ._transient import MIN_STEP_FRACTION  # that module imports this one
    return bool(np.isclose(integrator.hmin, MIN_STEP_FRACTION * integrator.hmax, rtol=1e-9,
                           atol=0.0))
