"""Build a plane truss graph from named entries (``build_truss``) or from a file (``read_truss``).

The file format is ``_reader``'s; reading gives JAX-free ``TrussData``, building makes the
graph's arrays.
"""
from __future__ import annotations

import os
from typing import Mapping

import jax
import jax.numpy as jnp

from .._named import lookup
from ._reader import read_truss_data
from ._model import Bar, Load, Support, Truss, TrussNode

__all__ = ["build_truss", "read_truss"]


def build_truss(nodes: Mapping[str, tuple], bars: Mapping[str, tuple], *,
                supports: Mapping[str, tuple] = (), loads: Mapping[str, tuple] = ()) -> Truss:
    """A truss graph from named entries.

    ``nodes``: name -> (x, y). ``bars``: name -> (a, b, EA[, L0]). ``supports``: name ->
    (node, (fix_x, fix_y)[, (ux, uy) prescribed]). ``loads``: name -> (node, (Fx, Fy)).
    """
    made = {n: TrussNode(jnp.asarray(xy, dtype=float)) for n, xy in nodes.items()}

    def node(name, where):
        return lookup(made, name, where)

    made_bars = []
    for name, (a, b, ea, *rest) in dict(bars).items():
        na, nb = node(a, f"bar {name!r}"), node(b, f"bar {name!r}")
        length = jnp.asarray(rest[0] if rest else jnp.linalg.norm(nb.X - na.X), dtype=float)
        if _known_nonpositive(length):
            raise ValueError(f"bar {name!r} has zero length: give its nodes distinct positions "
                             "or an explicit positive L0")
        made_bars.append(Bar(na, nb, jnp.asarray(ea, dtype=float), length))
    # a weight, not physics: stop_gradient keeps derivatives of the solution exact and cheap
    scale = jax.lax.stop_gradient(jnp.max(jnp.stack([b.EA / b.L0 for b in made_bars]))
                                  if made_bars else jnp.asarray(1.0))
    made_supports = [Support(node(s[0], f"support {n!r}"), jnp.asarray(s[1], dtype=bool),
                             jnp.asarray(s[2] if len(s) > 2 else (0.0, 0.0), dtype=float), scale)
                     for n, s in dict(supports).items()]
    made_loads = [Load(node(a, f"load {n!r}"), jnp.asarray(f, dtype=float))
                  for n, (a, f) in dict(loads).items()]
    return Truss(list(made.values()), made_bars, made_supports, made_loads, tuple(made),
                 tuple(dict(bars)), tuple(dict(supports)), tuple(dict(loads)))


def _known_nonpositive(length) -> bool:
    """True if ``length`` has a value and it is not positive (a traced one is unknown)."""
    try:
        return not float(length) > 0
    except jax.errors.ConcretizationTypeError:
        return False


def read_truss(path_or_text: str | os.PathLike) -> Truss:
    """The truss graph of a JSON file (format in ``_reader``); errors name the file and the
    key path of the bad entry."""
    return build_truss(**read_truss_data(path_or_text).entries())
