"""A model's structure as text that reads alike in every process (a resumable sweep's
fingerprint): static values without object addresses or hash-seed order, and the code of the
element classes' hook functions, so another model (or an edited one) is never taken for the
model whose results a directory holds."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import os
import types

import jax
import numpy as np

from . import _kinds

__all__ = ["canonical", "hooks_text"]

_DEPTH = 8  # nesting read into; deeper values count by their identity (`_unreadable`)


def canonical(value, depth: int = 0) -> str:
    """``value`` as text independent of the process: sets sorted (their repr follows the hash
    seed), numpy scalars as Python numbers, arrays by a digest of their bytes, functions and
    partials by their code and the values they hold, dataclasses and objects whose repr is
    only an address by their fields. What cannot be read so counts by its identity in this
    process: a results directory then resumes only there (never another model's results)."""
    if depth > _DEPTH:
        return _unreadable(value)
    inner = lambda v: canonical(v, depth + 1)  # noqa: E731
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(sorted(map(inner, value))) + "}"
    if isinstance(value, (tuple, list)):
        return type(value).__name__ + "(" + ", ".join(map(inner, value)) + ")"
    if isinstance(value, dict):
        return "dict(" + ", ".join(sorted(f"{inner(k)}: {inner(v)}"
                                          for k, v in value.items())) + ")"
    if isinstance(value, np.generic):
        return repr(value.item())
    if isinstance(value, (np.ndarray, jax.Array)):
        data = np.ascontiguousarray(np.asarray(value))
        return f"array({data.dtype.str}, {data.shape}, {hashlib.sha256(data.tobytes()).hexdigest()})"
    if isinstance(value, (types.FunctionType, types.MethodType)):
        return _function_text(value, depth)
    if isinstance(value, functools.partial):
        return f"partial({inner(value.func)}, {inner(value.args)}, {inner(value.keywords)})"
    return _object_text(value, inner)


def _object_text(value, inner) -> str:
    """A dataclass by its fields, another object by its repr, or by its attributes where
    the repr is only an address."""
    name = f"{type(value).__module__}.{type(value).__qualname__}"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = ", ".join(f"{f.name}={inner(getattr(value, f.name))}"
                           for f in dataclasses.fields(value))
        return f"{name}({fields})"
    text = repr(value)
    if " at 0x" not in text:
        return text
    attributes = vars(value) if hasattr(value, "__dict__") else {}
    text = f"{name}({inner(attributes)})" if attributes else ""
    return text if text and " at 0x" not in text else _unreadable(value)


def _unreadable(value) -> str:
    """A value the text cannot describe: its identity in this process."""
    return f"<{type(value).__qualname__} #{id(value)} in process {os.getpid()}>"


def _function_text(fn, depth: int) -> str:
    """A function by its name, code (not its file or lines) and what it closes over."""
    if isinstance(fn, types.MethodType):
        return f"method({canonical(fn.__self__, depth + 1)}, {_function_text(fn.__func__, depth)})"
    cells = tuple(c.cell_contents for c in fn.__closure__ or () if _filled(c))
    return (f"function {fn.__module__}.{fn.__qualname__} {_code_text(fn.__code__)} "
            f"defaults={canonical(fn.__defaults__, depth + 1)} "
            f"closure={canonical(cells, depth + 1)} globals={_globals_text(fn)}")


_CONSTANT = (str, bytes, int, float, complex, bool, type(None), np.generic)


def _globals_text(fn) -> str:
    """The module-level constants (numbers, strings) that ``fn``'s code reads: a setting
    such as ``MODE = "v2"`` changes what it computes."""
    names = sorted(_names(fn.__code__))
    scope = fn.__globals__
    found = {n: scope[n] for n in names if n in scope and isinstance(scope[n], _CONSTANT)}
    return canonical(found)


def _names(code: types.CodeType) -> set:
    inner = (_names(c) for c in code.co_consts if isinstance(c, types.CodeType))
    return set(code.co_names).union(*inner)


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # an empty cell
        return False
    return True


def _code_text(code: types.CodeType) -> str:
    """Bytecode, names and constants (nested code objects too); no file name or line
    numbers, so moving a function within its file keeps its text."""
    consts = ", ".join(_code_text(c) if isinstance(c, types.CodeType) else canonical(c)
                       for c in code.co_consts)
    return f"<{code.co_code.hex()} {code.co_names} {code.co_varnames} ({consts})>"


def hooks_text(cls: type) -> str:
    """The code of ``cls``'s hook functions (`_kinds.HOOKS`: residual, contributions, ...):
    an edited method makes another model. Helpers they call are not read."""
    parts = []
    for name in _kinds.HOOKS:
        fn = getattr(cls, name, None)
        if fn is None:
            continue
        fn = inspect.unwrap(fn) if callable(fn) else fn  # a decorated hook: its function
        text = _function_text(fn, 0) if isinstance(fn, types.FunctionType) else _unreadable(fn)
        parts.append(f"{name}={text}")
    return "; ".join(parts)
