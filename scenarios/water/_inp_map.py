"""[COORDINATES] and [VERTICES] of an EPANET file: where nodes and link bends sit on the map.

Map units are the file's own (no unit conversion); they only place the network in a picture.
"""
from __future__ import annotations

from typing import Container

from .._errors import FormatError
from ._inp_sections import Line, Sections, number

__all__ = ["read_map"]


def read_map(path: str, sections: Sections, nodes: Container[str],
             links: Container[str]) -> tuple[dict, dict]:
    """``({node: (x, y)}, {link: ((x, y), ...)})`` in file order; a later line for the same
    node replaces an earlier one (as EPANET), vertices of one link accumulate."""
    coordinates = {}
    for line in sections["COORDINATES"]:
        node = _owner(path, line, nodes, "node", "COORDINATES")
        coordinates[node] = _point(path, line)
    vertices: dict = {}
    for line in sections["VERTICES"]:
        link = _owner(path, line, links, "link", "VERTICES")
        vertices.setdefault(link, []).append(_point(path, line))
    return coordinates, {link: tuple(points) for link, points in vertices.items()}


def _owner(path: str, line: Line, known: Container[str], kind: str, section: str) -> str:
    if not line.tokens:
        raise FormatError(path, line.number, f"[{section}] line has no {kind} id",
                          f"write '{kind.upper()}-ID X Y'")
    name = line.tokens[0]
    if name not in known:
        raise FormatError(path, line.number, f"[{section}] names unknown {kind} {name!r}",
                          f"use the id of a {kind} defined in the file, or delete the line")
    return name


def _point(path: str, line: Line) -> tuple[float, float]:
    what = f"coordinate of {line.tokens[0]!r}"
    return number(path, line, 1, "x " + what), number(path, line, 2, "y " + what)
