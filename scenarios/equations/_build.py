"""Build an equations graph from names and numbers, or read one from a JSON file.

File format (``scenarios/data/equations/shared_slopes.json``)::

    {"providers": {"m": 2.0, "k": 4.0},
     "equations": {"e1": {"constant": 1.0, "provider": "m"}, ...}}
"""
from __future__ import annotations

import os
from typing import Mapping

import jax.numpy as jnp

from .._named import lookup
from .._spec_input import Spec
from ._model import Equation, EquationSet, GradientProvider

__all__ = ["build_equations", "read_equations"]


def build_equations(providers: Mapping[str, float],
                    equations: Mapping[str, tuple[float, str]]) -> EquationSet:
    """``providers``: name -> slope m; ``equations``: name -> (constant c, provider name).

    Equations naming the same provider share one ``GradientProvider`` object.
    """
    if not providers or not equations:
        raise ValueError("build_equations needs at least one provider and one equation")
    shared = {name: GradientProvider(jnp.asarray(value, dtype=float))
              for name, value in providers.items()}
    eqs = [Equation(jnp.asarray(constant, dtype=float),
                    lookup(shared, provider, f"equation {name!r}", "provider"))
           for name, (constant, provider) in equations.items()]
    return EquationSet(eqs, list(shared.values()), tuple(equations), tuple(shared))


def read_equations(path_or_text: str | os.PathLike) -> EquationSet:
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
    return build_equations(providers, equations)
