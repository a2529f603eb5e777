"""SciPy's sparse modules, imported when first used.

Only host sparse solves, orderings and pattern checks need them. Imported with ``solvers``
they cost about 120 ms of every process's start (two thirds of ``import solvers``), also
for a script that only ever solves a few dense unknowns.
"""

from __future__ import annotations

import importlib
from typing import Any


class _OnFirstUse:
    """Stands in for a module: the first attribute read imports it."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: Any = None

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        module = self.__dict__["_module"]
        if module is None:
            module = self.__dict__["_module"] = importlib.import_module(self._name)
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<{self._name}, imported on first use>"


sparse = _OnFirstUse("scipy.sparse")
sparse_linalg = _OnFirstUse("scipy.sparse.linalg")
csgraph = _OnFirstUse("scipy.sparse.csgraph")
