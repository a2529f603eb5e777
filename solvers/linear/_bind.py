"""Give every linear solver inside a method the sparsity of the Jacobian it will solve with.

Linear solvers are configuration (``Newton(linear_solver=SparseLU())``); the pattern comes
from the problem: a `System` knows its Jacobian's, ``solve_flat`` takes ``sparsity=``. A
solve calls `bind_linear_solvers` once, on the host, before anything is traced.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Optional, Union

from ._abstract import AbstractLinearSolver
from ._sparsity import SparsityPattern

Sparsity = Union[SparsityPattern, None, Callable[[], Optional[SparsityPattern]]]


def bind_linear_solvers(method: Any, sparsity: Sparsity) -> Any:
    """``method`` with its linear solvers bound to ``sparsity`` (a `SparsityPattern`, None,
    or a function computing it, called only when some solver needs a pattern)."""
    if not _needs_sparsity(method):
        return method
    pattern = sparsity() if callable(sparsity) else sparsity
    return _bind(method, pattern)


@functools.lru_cache(maxsize=256)
def _needs_sparsity(value: Any) -> bool:
    if isinstance(value, AbstractLinearSolver):
        return value.needs_sparsity
    return any(_needs_sparsity(v) for v in _children(value))


@functools.lru_cache(maxsize=64)
def _bind(value: Any, pattern: Optional[SparsityPattern]) -> Any:
    if isinstance(value, AbstractLinearSolver):
        return value.bind(pattern)
    if isinstance(value, tuple):
        return tuple(_bind(v, pattern) for v in value)
    if not (dataclasses.is_dataclass(value) and _needs_sparsity(value)):
        return value
    changes = {f.name: _bind(getattr(value, f.name), pattern)
               for f in dataclasses.fields(value) if _needs_sparsity(getattr(value, f.name))}
    return dataclasses.replace(value, **changes)


def _children(value: Any) -> tuple:
    """The fields of a method (a frozen dataclass) or the items of a tuple of methods."""
    if isinstance(value, tuple):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = (getattr(value, f.name) for f in dataclasses.fields(value))
        return tuple(v for v in fields if isinstance(v, (AbstractLinearSolver, tuple))
                     or dataclasses.is_dataclass(v))
    return ()
