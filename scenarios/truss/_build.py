"""Build a plane truss graph from named entries (``build_truss``) or from a file (``read_truss``).

The file format is ``_reader``'s; reading gives JAX-free ``TrussData``, building makes the
graph's arrays.
"""
from __future__ import annotations

import os
from typing import Mapping

import jax
import jax.numpy as jnp
import numpy as np

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
        span = leaf(xp.linalg.norm(xp.asarray(nb.X) - xp.asarray(na.X)))
        _check_span(name, a, b, span)
        length = leaf(rest[0]) if rest else span
        if _known_nonpositive(length):
            raise ValueError(f"bar {name!r} has a rest length L0 = {float(length)} m: give a "
                             "positive L0")
        made_bars.append(Bar(na, nb, leaf(ea), length))
    scale = _scale(made_bars)
    made_supports = [Support(node(s[0], f"support {n!r}"), leaf(s[1], bool),
                             leaf(s[2] if len(s) > 2 else (0.0, 0.0)), scale)
                     for n, s in dict(supports).items()]
    _check_supports(dict(supports), made_supports)
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


def _check_span(name: str, a: str, b: str, span) -> None:
    """A bar between coincident nodes has no direction; a NaN coordinate has no place."""
    value = _concrete(span)
    if value is None:
        return
    if not np.isfinite(value):
        raise ValueError(f"bar {name!r} joins nodes {a!r} and {b!r}, whose distance is not a "
                         "finite number (a NaN or infinite coordinate, or so large that its "
                         "square overflows): give finite x, y in metres")
    if value == 0:
        raise ValueError(f"bar {name!r} joins {a!r} to itself or to a node at the same place, "
                         "so its direction is undefined: give its nodes distinct positions "
                         "(an L0 does not help)")


def _check_supports(entries: dict, made: list) -> None:
    """Refuse a prescribed displacement on a free component (it would be ignored) and a
    component fixed by two supports (two equations for one displacement)."""
    held: dict = {}
    for (name, entry), support in zip(entries.items(), made):
        fixed, prescribed = _concrete(support.fixed), _concrete(support.prescribed)
        if fixed is None:
            continue
        for k, comp in enumerate(("ux", "uy")):
            if prescribed is not None and prescribed[k] != 0 and not fixed[k]:
                raise ValueError(f"support {name!r} prescribes {comp} = {prescribed[k]} on a "
                                 "component it leaves free, so it would be ignored: fix it "
                                 "(True) or prescribe 0")
            if fixed[k] and (id(support.node), k) in held:
                raise ValueError(f"supports {held[id(support.node), k]!r} and {name!r} both fix "
                                 f"{comp} of node {entry[0]!r}: fix each component once")
            if fixed[k]:
                held[id(support.node), k] = name


def _concrete(value):
    """``value`` as a NumPy array, or None when it is traced (no value yet)."""
    try:
        return np.asarray(value)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        return None


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
