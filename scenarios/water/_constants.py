"""The physical constants of a water model: EPANET 2.2's (exact for a file's flow units) or WNTR's.

EPANET works in ft and cfs with rounded flow-unit factors, which scale its internal laws; the
``epanet`` constants fold that in (``water/README.md``, "*_effective") and so reproduce EPANET's
numbers. The JSON validation files carry both blocks; :meth:`WaterConstants.from_json` reads one.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping

from ._inp_types import WaterNetwork
from ._inp_units import CFS, FT

__all__ = ["WaterConstants", "resolve_constants"]

_HP_W = 745.69987158227022        # W per mechanical horsepower (US files give hp)
_EPANET_KW_PER_HP = 0.7457        # EPANET's factor for the kW of SI files
_EPANET_HW = 4.727                # H-W constant in ft, cfs
_EPANET_MINOR = 0.02517           # 8 / (g pi^2) in ft, s
_EPANET_HP = 8.814                # ft * cfs per hp (1 / (rho g) for power pumps)
_EPANET_RQTOL = 1e-7              # small-flow gradient limit, ft/cfs
_EPANET_CBIG = 1e8                # large gradient limit, ft/cfs
_WNTR_HW = 10.666829500036352


@dataclasses.dataclass(frozen=True)
class WaterConstants:
    """SI constants of the head laws (see ``Hydraulics``); ``pump_fit`` is ``"epanet"`` (EPANET's
    power-curve fit of 1-point curves, through 1.33334 h1) or ``"wntr"`` (WNTR's: 4/3 h1, C = 2)."""

    k_hw: float
    minor_g: float
    rho_g: float
    rq_tol: float
    regularisation: float
    max_gradient: float
    pump_fit: str = "epanet"

    @classmethod
    def epanet(cls, network: WaterNetwork) -> "WaterConstants":
        """EPANET 2.2's constants for this file's flow units (and its ``RQTOL`` option)."""
        ratio = network.units.epanet_flow_ratio
        gradient = FT / CFS * ratio  # one ft/cfs of EPANET's internal flow, in s/m^2
        rq_tol = float(network.options.get("RQTOL", _EPANET_RQTOL))
        watt_per_hp = _HP_W if network.units.is_us else 1e3 * _EPANET_KW_PER_HP
        return cls(
            k_hw=_EPANET_HW * FT ** 4.871 / CFS ** 1.852 * ratio ** 1.852,
            minor_g=8.0 / (math.pi ** 2 * _EPANET_MINOR * FT ** 5 / CFS ** 2) / ratio ** 2,
            rho_g=watt_per_hp * ratio / (_EPANET_HP * FT * CFS),
            rq_tol=rq_tol * gradient, regularisation=0.0, max_gradient=_EPANET_CBIG * gradient)

    @classmethod
    def wntr(cls) -> "WaterConstants":
        """WNTRSimulator's constants: its H-W constant, g = 9.81, rho g = 9810, and its
        regularised pipe law ``r |q|^0.852 q + 1e-5 sqrt(r) q`` instead of EPANET's rule."""
        return cls(k_hw=_WNTR_HW, minor_g=9.81, rho_g=9810.0, rq_tol=0.0, regularisation=1e-5,
                   max_gradient=_EPANET_CBIG * FT / CFS, pump_fit="wntr")

    @classmethod
    def from_json(cls, block: Mapping[str, Any], flavour: str | None = None) -> "WaterConstants":
        """A ``constants.epanet`` or ``constants.wntr`` block of a validation JSON (the
        ``*_effective`` values when present). ``flavour`` defaults to ``"epanet"`` when the
        block has ``hw_k_SI_effective``, else ``"wntr"``."""
        flavour = flavour or ("epanet" if "hw_k_SI_effective" in block else "wntr")
        if flavour not in ("epanet", "wntr"):
            raise ValueError(f"flavour must be 'epanet' or 'wntr', got {flavour!r}")
        pick = lambda key: float(block.get(key + "_effective", block[key]))  # noqa: E731
        try:
            values = dict(k_hw=pick("hw_k_SI"), minor_g=pick("minor_loss_g_SI"),
                          rho_g=pick("power_pump_rho_g_SI"))
        except KeyError as err:
            raise ValueError(f"constants block lacks {err.args[0]!r}; expected the "
                             "constants.epanet or constants.wntr block of a water JSON") from None
        if flavour == "wntr":
            return dataclasses.replace(cls.wntr(), **values)
        ratio = float(block.get("flow_ratio_q_internal_over_q_physical", 1.0))
        gradient = FT / CFS * ratio
        return cls(**values, rq_tol=_EPANET_RQTOL * gradient, regularisation=0.0,
                   max_gradient=_EPANET_CBIG * gradient)


def resolve_constants(network: WaterNetwork, constants: Any) -> WaterConstants:
    """``"epanet"``, ``"wntr"``, a :class:`WaterConstants` or a JSON constants block."""
    if isinstance(constants, WaterConstants):
        return constants
    if constants == "epanet":
        return WaterConstants.epanet(network)
    if constants == "wntr":
        return WaterConstants.wntr()
    if isinstance(constants, Mapping):
        return WaterConstants.from_json(constants)
    raise ValueError(f"constants must be 'epanet', 'wntr', a WaterConstants or a JSON constants "
                     f"block, got {constants!r}")
