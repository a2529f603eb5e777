"""SPICE numbers: engineering suffixes on read, shortest exact round-trip text on write."""
from __future__ import annotations

import math
import re
from decimal import Decimal

__all__ = ["parse_spice_number", "format_spice_number"]

_NUMBER = re.compile(r"([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)([A-Za-z_]*)")
_PLAIN = re.compile(r"[0-9.eE+-]+")
_SCALE = {
    "t": Decimal("1e12"), "g": Decimal("1e9"), "k": Decimal("1e3"), "m": Decimal("1e-3"),
    "u": Decimal("1e-6"), "n": Decimal("1e-9"), "p": Decimal("1e-12"), "f": Decimal("1e-15"),
}
_MEG = Decimal("1e6")
_MIL = Decimal("25.4e-6")


def parse_spice_number(text: str) -> float | None:
    """Value of a SPICE number such as ``10k``, ``1meg``, ``2.2uF``, ``5mil``, ``1e-3``; None if not one.

    Letters after the number are a scale suffix (``meg``/``mil`` first, then one of
    ``t g k m u n p f``, case-insensitive) followed by an ignored unit, as in ngspice: ``10kohm``
    is 1e4, ``1uA`` is 1e-6, ``5V`` is 5 and ``1F`` is 1e-15. The product is rounded once, so
    ``0.1u`` is exactly ``1e-07``.
    """
    if _PLAIN.fullmatch(text):  # no suffix: Python's float reads exactly SPICE's grammar
        try:
            return float(text)
        except ValueError:
            pass
    match = _NUMBER.fullmatch(text)
    if match is None:
        return None
    mantissa, letters = match.groups()
    letters = letters.lower()
    if letters.startswith("meg"):
        scale = _MEG
    elif letters.startswith("mil"):
        scale = _MIL
    else:
        scale = _SCALE.get(letters[:1], Decimal(1))
    return float(Decimal(mantissa) * scale)


def format_spice_number(value: float) -> str:
    """Shortest text that reads back to exactly ``value`` (Python's ``repr``, which SPICE accepts)."""
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"cannot write the non-finite number {value!r} into a SPICE netlist")
    return repr(value)
