"""Checks that a thermal network has one meaning before it is solved.

A connected part with no fixed-temperature node has its temperatures defined only up to a
constant (no load: any common temperature balances; loads: no steady state at all), so the
steady state is refused, naming the nodes of each such part. In a transient a heat capacity
also anchors its part (it carries the temperature from the start), but a part with neither is
still undetermined. Entry names must be unique across the named groups: results and sweeps
look entries up by name.
"""
from __future__ import annotations

import warnings
from typing import Iterable, Mapping, Sequence

import jax
import numpy as np

from .._errors import FormatError
from .._islands import IslandError, islands_without_reference, shown

__all__ = ["IslandError", "check_anchored", "check_file_anchored", "floating_parts",
           "repeated_name", "floating_message", "warn_below_absolute_zero"]


def floating_parts(nodes: Sequence[str], links: Iterable[tuple[str, str]],
                   anchors: Iterable[str]) -> list[list[str]]:
    """The connected parts (node names in ``nodes`` order) holding none of ``anchors``."""
    return islands_without_reference(nodes, links, anchors)


def floating_message(parts: list[list[str]], anchor: str = "fixed-temperature boundary") -> str:
    """``node(s) 'a', 'b' (one part) and 'c' (another) ...`` for an error message."""
    listed = "; ".join(f"[{shown(part)}]" for part in parts)
    return (f"{len(parts)} connected part(s) of the network hold no {anchor}, so their "
            f"temperatures are undefined: {listed}")


def repeated_name(groups: Mapping[str, Sequence[str]]) -> tuple[str, str, str] | None:
    """``(name, first group, second group)`` of a name used twice (also twice in one group:
    a list of node names), or None."""
    seen: dict = {}
    for group, names in groups.items():
        for name in names:
            if name in seen:
                return name, seen[name], group
            seen[name] = group
    return None


def check_file_anchored(data) -> None:
    """Raise ``FormatError`` (naming ``data.source`` and ``.fixed``) for the parts of a read
    network (``ThermalData``) without a fixed-temperature node."""
    links = [(e[0], e[1]) for _, e in (*data.conduction, *data.radiation)]
    parts = floating_parts([n for n, _ in data.nodes], links, [e[0] for _, e in data.fixed])
    if parts:
        raise FormatError(data.source, None, f".fixed: {floating_message(parts)}",
                          "add a fixed entry on a node of each part, link the part to a fixed "
                          "node, or remove its nodes")


def _known_zero(value) -> bool:
    """True if ``value`` is a concrete zero (a link with G = 0 joins nothing); traced: False."""
    try:
        return bool(np.all(np.asarray(value) == 0))
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        # a traced G has no value yet: count the link
        return False


def check_anchored(net, transient: bool = False) -> None:
    """Raise ``IslandError`` for the parts of ``net`` with no fixed temperature (with
    ``transient``, and no heat capacity either), naming their nodes."""
    name_of = {id(n): name for n, name in zip(net.nodes, net.node_names)}
    links = [(name_of[id(c.a)], name_of[id(c.b)]) for c in net.conductions
             if not _known_zero(c.G)]
    links += [(name_of[id(r.a)], name_of[id(r.b)]) for r in net.radiations]
    anchors = [name_of[id(b.node)] for b in net.boundaries]
    if transient:
        anchors += [name_of[id(c.node)] for c in net.capacities or ()]
    parts = floating_parts(net.node_names, links, anchors)
    if parts:
        anchor = ("fixed-temperature boundary or heat capacity" if transient
                  else "fixed-temperature boundary")
        raise IslandError(floating_message(parts, anchor) + ". Hold a node of each part at a "
                          "temperature (fixed), link it to a fixed node, or remove it.",
                          tuple(n for part in parts for n in part))


def warn_below_absolute_zero(names: Sequence[str], temperatures, converged, where: str = "",
                             stacklevel: int = 3) -> None:
    """Warn where a converged steady state puts a node below 0 K. The equations hold there
    (conduction is linear, radiation even in T), but no physical steady state does: the
    loads draw more heat than the links can carry at positive temperatures."""
    temperatures = np.asarray(temperatures, dtype=float)
    cold = (temperatures < 0.0) & np.asarray(converged, bool)[..., None]
    if not cold.any():
        return
    nodes = [n for n, c in zip(names, cold.reshape(-1, len(names)).any(axis=0)) if c]
    warnings.warn(
        f"the steady state{where} puts node(s) {', '.join(map(repr, nodes))} below 0 K "
        f"(lowest {temperatures[cold].min():.6g} K): no physical steady state exists, as the "
        "loads draw more heat than the links can carry at positive temperatures. Lower the "
        "heat drawn, or raise the conductances or the fixed temperatures.",
        UserWarning, stacklevel=stacklevel)
