"""Build an equations graph from names and numbers, or from a file (``read_equations``).

The file format is ``_reader``'s (JAX-free ``EquationsData``).
"""
from __future__ import annotations

import os
from typing import Mapping

from .._leaves import leaf
from .._named import lookup
from ._reader import read_equations_data
from ._model import Equation, EquationSet, GradientProvider

__all__ = ["build_equations", "read_equations"]


def build_equations(providers: Mapping[str, float],
                    equations: Mapping[str, tuple[float, str]]) -> EquationSet:
    """``providers``: name -> slope m; ``equations``: name -> (constant c, provider name).

    Equations naming the same provider share one ``GradientProvider`` object.
    """
    if not providers or not equations:
        raise ValueError("build_equations needs at least one provider and one equation")
    both = sorted(set(providers) & set(equations))
    if both:
        raise ValueError(f"{both[0]!r} names a provider and an equation; sweeps and results "
                         "look them up by name: give each its own name")
    shared = {name: GradientProvider(leaf(value))
              for name, value in providers.items()}
    eqs = [Equation(leaf(constant),
                    lookup(shared, provider, f"equation {name!r}", "provider"))
           for name, (constant, provider) in equations.items()]
    return EquationSet(eqs, list(shared.values()), tuple(equations), tuple(shared))


def read_equations(path_or_text: str | os.PathLike) -> EquationSet:
    """The equations graph of a JSON file (format in ``_reader``); errors name the file and
    the key path of the bad entry."""
    return build_equations(**read_equations_data(path_or_text).entries())
