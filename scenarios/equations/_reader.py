"""Read an equations graph's names and numbers from a JSON file (JAX-free ``EquationsData``).

File format (``scenarios/data/equations/shared_slopes.json``)::

    {"providers": {"m": 2.0, "k": 4.0},
     "equations": {"e1": {"constant": 1.0, "provider": "m"}, ...}}
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from .._spec_input import Spec

__all__ = ["EquationsData", "read_equations_data"]


@dataclass(frozen=True)
class EquationsData:
    """Equations as read from a file, in file order: ``providers`` (name, slope) pairs and
    ``equations`` (name, (constant, provider name)) pairs."""

    providers: tuple
    equations: tuple

    def entries(self) -> dict:
        """The arguments of ``build_equations`` (name -> entry mappings)."""
        return {"providers": dict(self.providers), "equations": dict(self.equations)}


def read_equations_data(path_or_text: str | os.PathLike) -> EquationsData:
    """Read the JSON format above; errors name the file and the key path of the bad entry."""
    spec = Spec.load(path_or_text, "equations")
    spec.check_keys(spec.doc, ("providers", "equations", "description"))
    providers = {}
    for name, value in spec.section("providers", required=True).items():
        providers[name] = spec.scalar(value, f".providers.{name}")
        if providers[name] == 0.0:
            raise spec.fail(f".providers.{name}", "a slope of 0 makes m * x = c unsolvable",
                            "give a nonzero slope")
    equations = {}
    for name, value in spec.section("equations", required=True).items():
        where = f".equations.{name}"
        entry = spec.entry(value, where, ("constant", "provider"))
        equations[name] = (spec.number(entry, "constant", where),
                           spec.ref(entry, "provider", where, providers, "provider"))
        _check_solution(spec, where, *equations[name], providers)
    # a sweep or a derivative names either kind: one name for both would pick the equation
    spec.distinct(("providers", "equations"), {"providers": providers, "equations": equations})
    return EquationsData(tuple(providers.items()), tuple(equations.items()))


def _check_solution(spec: Spec, where: str, constant: float, provider: str,
                    providers: dict) -> None:
    """Refuse an equation whose solution ``x = c / m`` is beyond the floats (a subnormal
    slope): Newton would report it unsolved without saying why."""
    try:
        x = constant / providers[provider]
    except OverflowError:
        x = float("inf")
    if abs(x) == float("inf"):
        raise spec.fail(where, f"its solution x = c / m = {constant:g} / "
                        f"{providers[provider]:g} is too large for a float",
                        "rescale the equation (give c and m in other units)")
