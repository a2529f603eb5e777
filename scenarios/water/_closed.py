"""Closed links as EPANET models them: ``H_start - H_end = CBIG q`` (CBIG = 1e8 ft/cfs).

EPANET never removes a closed link: it keeps it in the equations with the conductance
``1 / CBIG`` (``hydcoeffs.c``), so a closed link carries the tiny flow ``dh / CBIG`` (reported
as 0) and that flow enters the mass balance of its end nodes. Each link class here gains a
``status`` (1 open, 0 closed) that switches between its own law and that one.
"""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from ._elements import CurvePump, Pipe, PowerPump, Pump
from ._inp_units import CFS, FT

__all__ = ["CBIG", "closed_resistance", "switched", "SwitchedPipe", "SwitchedPump",
           "SwitchedCurvePump", "SwitchedPowerPump"]

CBIG = 1e8  # EPANET's closed-link resistance, ft per cfs


def _switched(base):
    """``base`` with a ``status`` parameter: open, its own law; closed, ``dh = closed_r q``."""

    def residual(self):
        closed = self.start.head - self.end.head - self.closed_r * self.flow
        return jnp.where(self.status > 0.5, base.residual(self), closed)

    return type("Switched" + base.__name__, (base,), {
        "__annotations__": {"status": jax.Array, "closed_r": jax.Array},
        "status": 1.0, "closed_r": 1.0, "residual": residual, "__module__": __name__})


SwitchedPipe, SwitchedPump = _switched(Pipe), _switched(Pump)
SwitchedCurvePump, SwitchedPowerPump = _switched(CurvePump), _switched(PowerPump)
_SWITCHED = {Pipe: SwitchedPipe, Pump: SwitchedPump, CurvePump: SwitchedCurvePump,
             PowerPump: SwitchedPowerPump}


def closed_resistance(ratio: float) -> float:
    """EPANET's closed-link law ``dh = CBIG q`` as ``closed_r`` (s/m^2, on the physical flow;
    ``ratio``: the network's EPANET flow-unit ratio)."""
    return FT * CBIG * ratio / CFS


def switched(link, status: float, closed_r: float, **changes):
    """The switchable form of a pipe or pump element (plain or already switchable; same
    fields, with ``changes``, e.g. ``speed``), open (1) or closed (0)."""
    fields = {f.name: getattr(link, f.name) for f in dataclasses.fields(link)}
    fields.update(changes, status=status, closed_r=closed_r)
    return _SWITCHED.get(type(link), type(link))(**fields)
