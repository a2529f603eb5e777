"""Build a plane truss graph from named entries (``build_truss``) or from a file (``read_truss``).

The file format is ``_reader``'s; reading gives JAX-free ``TrussData``, building makes the
graph's arrays.
"""
from __future__ import annotations

import os
from typing import Mapping

import jax
import jax.numpy as jnp

from .._leaves import leaf, numpy_or_jnp
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
    made = {n: TrussNode(leaf(xy)) for n, xy in nodes.items()}

    def node(name, where):
        return lookup(made, name, where)

    made_bars = []
    for name, (a, b, ea, *rest) in dict(bars).items():
        na, nb = node(a, f"bar {name!r}"), node(b, f"bar {name!r}")
        xp = numpy_or_jnp(na.X, nb.X)
        length = leaf(rest[0] if rest else xp.linalg.norm(xp.asarray(nb.X) - xp.asarray(na.X)))
        if _known_nonpositive(length):
            raise ValueError(f"bar {name!r} has zero length: give its nodes distinct positions "
                             "or an explicit positive L0")
        made_bars.append(Bar(na, nb, leaf(ea), length))
    scale = _scale(made_bars)
    made_supports = [Support(node(s[0], f"support {n!r}"), leaf(s[1], bool),
                             leaf(s[2] if len(s) > 2 else (0.0, 0.0)), scale)
                     for n, s in dict(supports).items()]
    made_loads = [Load(node(a, f"load {n!r}"), leaf(f)) for n, (a, f) in dict(loads).items()]
    return Truss(list(made.values()), made_bars, made_supports, made_loads, tuple(made),
                 tuple(dict(bars)), tuple(dict(supports)), tuple(dict(loads)))


def _scale(bars: list) -> jax.Array:
    """The supports' weight: the stiffest bar's EA / L0 (1 without bars). A weight, not
    physics: stop_gradient keeps derivatives of the solution exact and cheap."""
    if not bars:
        return leaf(1.0)
    xp = numpy_or_jnp([(b.EA, b.L0) for b in bars])
    largest = xp.max(xp.stack([xp.asarray(b.EA) / xp.asarray(b.L0) for b in bars]))
    return jax.lax.stop_gradient(largest) if xp is jnp else leaf(largest)


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
