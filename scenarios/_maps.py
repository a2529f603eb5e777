"""Network maps: nodes coloured by a result (head, pressure, voltage), links by another (flow,
loading), at the file's coordinates or at a layout computed from the graph.

A network without coordinates and too large for a readable computed layout gets charts
instead: the node values by node (a profile) and the histogram of the link values.

The node markers are one scatter collection with gid ``"nodes"`` (its offsets are the node
positions, in the order of ``NetworkMap.names``); the links one line collection with gid
``"links"``.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

import numpy as np

from ._layout import MAX_LAYOUT_NODES, graph_layout

__all__ = ["NetworkMap", "draw_charts", "draw_map", "positions"]

#: Networks up to this size get node labels and flow arrows.
LABEL_LIMIT = 40
ARROW_LIMIT = 300


@dataclasses.dataclass(frozen=True)
class NetworkMap:
    """What a map shows. ``xy`` (n, 2) positions of the nodes ``names`` (None: draw charts,
    not a map); ``node_values`` their
    colours (NaN: not coloured, e.g. a reservoir's pressure); ``links`` pairs of node indices
    with ``link_values`` (colour and width: their magnitude) and ``bends`` (per link, points
    between its ends); ``direction`` (per link, the sign of the flow from first to second node:
    an arrow) or None; ``kinds`` per node (and ``link_kinds`` per link, marked at its middle)
    with ``markers`` {kind: matplotlib marker} for the kinds drawn apart (tanks, generators,
    pumps); ``where`` says where the positions come from; ``chart_axes`` label the charts drawn
    instead of a map: the axis of nodes and the count of links."""

    names: Sequence[str]
    xy: np.ndarray | None
    node_values: np.ndarray
    node_label: str
    links: Sequence[tuple[int, int]]
    link_values: np.ndarray
    link_label: str
    title: str
    where: str
    bends: Sequence[Sequence[tuple[float, float]]] = ()
    direction: np.ndarray | None = None
    kinds: Sequence[str] = ()
    link_kinds: Sequence[str] = ()
    markers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    node_cmap: str = "RdYlBu"
    chart_axes: tuple[str, str] = ("node (file order)", "links")
    link_cmap: str = "viridis"


def positions(names: Sequence[str], coordinates: Mapping[str, tuple[float, float]],
              links: Sequence[tuple[int, int]]) -> tuple[np.ndarray | None, str]:
    """``(xy, where)``: the nodes' coordinates when the file gives every node one, else a
    layout computed from the links (:func:`graph_layout`), else (too many nodes) None."""
    if names and all(name in coordinates for name in names):
        return np.asarray([coordinates[n] for n in names], dtype=float), "file coordinates"
    if len(names) > MAX_LAYOUT_NODES:
        return None, f"no coordinates, too many nodes ({len(names)}) for a computed layout"
    return graph_layout(len(names), links), "layout computed from the graph"


def draw_map(fig, m: NetworkMap) -> None:
    """Draw ``m`` on a new axis of ``fig`` with colour bars for nodes and links (without
    positions: :func:`draw_charts`)."""
    if m.xy is None:
        draw_charts(fig, m)
        return
    ax = fig.add_subplot()
    _draw_links(fig, ax, m)
    nodes = ax.scatter(m.xy[:, 0], m.xy[:, 1], c=m.node_values, cmap=_greyed(m.node_cmap),
                       s=60, edgecolors="k", linewidths=0.6, zorder=3, plotnonfinite=True)
    nodes.set_gid("nodes")
    fig.colorbar(nodes, ax=ax, label=m.node_label, shrink=0.85, pad=0.01)
    _draw_kinds(ax, m, m.xy, m.kinds, 170)
    _draw_kinds(ax, m, np.asarray([_middle(line)[0] for line in _polylines(m)]), m.link_kinds, 60)
    if any(kind in m.markers for kind in (*m.kinds, *m.link_kinds)):
        ax.legend(loc="best", fontsize=7, framealpha=0.8, markerscale=0.6)
    if len(m.names) <= LABEL_LIMIT:
        for name, (x, y) in zip(m.names, m.xy):
            ax.annotate(str(name), (x, y), xytext=(5, 5), textcoords="offset points",
                        fontsize=7, zorder=4)
    ax.set_aspect("equal", adjustable="datalim")
    ax.margins(0.08)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(m.title, fontsize=10)
    ax.set_xlabel(m.where, fontsize=8, color="dimgrey")


def draw_charts(fig, m: NetworkMap) -> None:
    """The node values by node and the histogram of the link values, side by side."""
    left, right = fig.subplots(1, 2)
    values = np.asarray(m.node_values, dtype=float)
    left.plot(np.arange(len(values)), values, ".", ms=3)
    left.set_xlabel(m.chart_axes[0])
    left.set_ylabel(m.node_label)
    links = np.asarray(m.link_values, dtype=float)
    right.hist(links[np.isfinite(links)], bins=40, color="tab:purple")
    right.set_xlabel(m.link_label)
    right.set_ylabel(m.chart_axes[1])
    fig.suptitle(f"{m.title}\n{m.where}", fontsize=9)


def _greyed(name: str):
    """The colour map ``name`` with NaN values drawn light grey."""
    import matplotlib
    return matplotlib.colormaps[name].with_extremes(bad="lightgrey")


def _polylines(m: NetworkMap) -> list[np.ndarray]:
    bends = list(m.bends) or [()] * len(m.links)
    return [np.asarray([m.xy[a], *bend, m.xy[b]], dtype=float)
            for (a, b), bend in zip(m.links, bends)]


def _draw_links(fig, ax, m: NetworkMap) -> None:
    from matplotlib.collections import LineCollection
    lines = _polylines(m)
    values = np.asarray(m.link_values, dtype=float)
    scale = np.nanmax(np.abs(values)) if np.isfinite(values).any() else 1.0
    widths = 1.0 + 4.0 * np.nan_to_num(np.abs(values) / (scale or 1.0))
    collection = LineCollection(lines, array=values, cmap=_greyed(m.link_cmap),
                                linewidths=widths, zorder=1)
    collection.set_gid("links")
    ax.add_collection(collection)
    fig.colorbar(collection, ax=ax, label=m.link_label, shrink=0.85, pad=0.01)
    if m.direction is not None and len(lines) <= ARROW_LIMIT:
        size = 0.015 * float(np.ptp(m.xy, axis=0).max() or 1.0)
        for line, sign in zip(lines, m.direction):
            if sign != 0:
                _arrow(ax, line if sign > 0 else line[::-1], size)


def _middle(line: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The middle point of a polyline and the direction of the segment holding it."""
    lengths = np.linalg.norm(np.diff(line, axis=0), axis=1)
    if lengths.sum() == 0:
        return line[0], np.zeros(2)
    k = min(int(np.searchsorted(np.cumsum(lengths), lengths.sum() / 2)), len(lengths) - 1)
    done = lengths[:k].sum()
    step = line[k + 1] - line[k]
    return line[k] + step * (lengths.sum() / 2 - done) / lengths[k], step / lengths[k]


def _arrow(ax, line: np.ndarray, size: float) -> None:
    """An arrow head at the middle of a polyline, pointing along it (``size``: half its
    length in data units)."""
    middle, along = _middle(line)
    if not along.any():
        return
    ax.annotate("", xy=middle + size * along, xytext=middle - size * along, zorder=2,
                arrowprops=dict(arrowstyle="-|>", color="k", lw=0.8, mutation_scale=11))


def _draw_kinds(ax, m: NetworkMap, xy: np.ndarray, kinds, size: float) -> None:
    """Open markers over the entries (nodes or link middles) of the kinds in ``m.markers``."""
    kinds = np.asarray(kinds)
    for kind, marker in m.markers.items():
        mask = kinds == kind
        if mask.any():
            ax.scatter(xy[mask, 0], xy[mask, 1], marker=marker, s=size, facecolors="none",
                       edgecolors="k", linewidths=1.2, zorder=3, label=kind)
