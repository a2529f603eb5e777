"""Closed form of the two-bar (von Mises) truss: the reference the truss model is checked on.

Two equal bars (axial stiffness ``EA``) run from pinned supports at ``(-a, 0)`` and ``(a, 0)`` to
an apex at ``(0, h)``; a downward load ``P`` on the apex moves it down by ``w``. With
``L0 = sqrt(a^2 + h^2)`` and ``L = sqrt(a^2 + (h - w)^2)``, vertical equilibrium with the
exact geometry and ``N = EA (L - L0) / L0`` gives ``P(w) = 2 EA (h - w) (1/L - 1/L0)``: it
rises to the limit load, falls to zero at ``w = h`` (bars flat), is negative until ``w = 2h``
(the mirrored, stress-free shape) and rises again. Under load control the arch snaps through
at the limit load; displacement control follows the whole curve.
"""
from __future__ import annotations

import numpy as np

__all__ = ["von_mises_load", "von_mises_limit"]


def von_mises_load(w, a: float, h: float, EA: float):
    """Downward apex load ``P`` (N) that holds the apex at deflection ``w`` (m, downward)."""
    s = h - np.asarray(w, dtype=float)
    return 2.0 * EA * s * (1.0 / np.hypot(a, s) - 1.0 / np.hypot(a, h))


def von_mises_limit(a: float, h: float, EA: float) -> tuple[float, float]:
    """``(w, P)`` at the limit point, where ``dP/dw = 0``: ``L^3 = a^2 L0``."""
    length = (a * a * np.hypot(a, h)) ** (1.0 / 3.0)
    w = h - np.sqrt(length * length - a * a)
    return float(w), float(von_mises_load(w, a, h, EA))
