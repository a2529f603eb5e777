"""Looking up the named entries a graph builder links together (a bar's nodes, ...)."""
from __future__ import annotations

from typing import Any, Mapping

__all__ = ["lookup"]


def lookup(table: Mapping[str, Any], name: str, where: str, kind: str = "node") -> Any:
    """``table[name]``; else a KeyError saying that ``where`` (``"bar 'left'"``) names a
    ``kind`` that is not defined, listing the defined ones."""
    if name not in table:
        raise KeyError(f"{where} names {kind} {name!r}, which is not defined; the {kind}s are "
                       f"{', '.join(table)}")
    return table[name]
