"""Shared base of the network domains' result objects: one member of a solve or a sweep."""

from __future__ import annotations

from typing import Any

from ._network_solve import scalar


class AbstractMemberResult:
    """Status of one solved member (``index`` picks one member of a sweep, ``None``: a single
    solve). Subclasses add the domain's quantities and document ``residual_norm``'s unit."""

    def __init__(self, model: Any, solved: Any, index: int | None = None):
        self.model, self.solved, self.index = model, solved, index

    def _value(self, v) -> Any:
        return scalar(v, self.index)

    @property
    def converged(self) -> bool:
        return bool(self._value(self.solved.solution.converged))

    @property
    def iterations(self) -> int:
        return int(self._value(self.solved.solution.iterations))

    @property
    def residual_norm(self) -> float:
        """max|F| at the solution, in the units of the domain's equations."""
        return float(self._value(self.solved.solution.residual_norm))

    def message(self) -> str:
        return self.solved.solution.message(self.index)
