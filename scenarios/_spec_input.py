"""Reading the small JSON input files of the equations, thermal and truss scenarios.

These domains have no community file format, so their inputs are JSON objects of named
entries. Every check raises :class:`FormatError` naming the file, the key path of the bad
entry (``.bars.left.EA``) and what to write instead.
"""
from __future__ import annotations

import json
import math
import os
import re
from typing import Any, Iterable

from ._errors import FormatError
from ._source import read_source

__all__ = ["Spec", "parse_json"]


class _RepeatedKey(Exception):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list) -> dict:
    """A JSON object, refusing a key given twice (``json`` silently keeps the last)."""
    doc = {}
    for key, value in pairs:
        if key in doc:
            raise _RepeatedKey(key)
        doc[key] = value
    return doc


def _second_line(text: str, key: str) -> int | None:
    """The line of ``key``'s second appearance as a JSON key, where it appears exactly twice
    in the file (else None: another object may hold it legitimately)."""
    hits = [m.start() for m in re.finditer(re.escape(json.dumps(key)) + r"\s*:", text)]
    return text.count("\n", 0, hits[1]) + 1 if len(hits) == 2 else None


def parse_json(name: str, text: str, kind: str) -> Any:
    """``text`` (the file ``name``) as JSON, a key given twice in one object refused:
    ``json`` keeps only the last, so an entry would vanish silently."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as err:
        raise FormatError(name, err.lineno, f"invalid JSON ({err.msg}, column {err.colno})",
                          f"a {kind} file is one JSON object") from None
    except _RepeatedKey as err:
        raise FormatError(name, _second_line(text, err.key), f"the key {err.key!r} appears "
                          "twice in one object (JSON would keep only the last)",
                          "give each entry its own name") from None
    except RecursionError:
        raise FormatError(name, None, "invalid JSON (arrays or objects nested too deep to "
                          "read)", f"a {kind} file is one JSON object of named sections, "
                          "nested a few levels") from None
    except ValueError:  # an integer of more digits than Python converts (4300)
        raise FormatError(name, None, "an integer has more digits than Python reads "
                          "(4300)", "give numbers as finite floats, e.g. 1.5e300") from None


class Spec:
    """A parsed JSON input document with location-aware accessors (``name`` is the file)."""

    def __init__(self, name: str, doc: dict):
        self.name, self.doc = name, doc

    @classmethod
    def load(cls, path_or_text: str | os.PathLike, kind: str) -> "Spec":
        """Parse a file (or JSON text); ``kind`` ("thermal network", ...) is used in messages."""
        try:
            name, text = read_source(path_or_text, text_name="<json>")
        except OSError as err:
            raise FormatError(str(path_or_text), None, f"cannot read the {kind} file "
                              f"({err.strerror or err})", "check the path") from None
        doc = parse_json(name, text, kind)
        if not isinstance(doc, dict):
            raise FormatError(name, 1, f"expected a JSON object, got {type(doc).__name__}",
                              f"a {kind} file is one JSON object of named sections")
        return cls(name, doc)

    def fail(self, where: str, problem: str, hint: str = "") -> FormatError:
        return FormatError(self.name, None, f"{where}: {problem}", hint)

    def check_keys(self, obj: dict, allowed: Iterable[str], where: str = "") -> None:
        """Reject keys other than ``allowed`` (typos would otherwise be silently ignored)."""
        allowed = tuple(allowed)
        for key in obj:
            if key not in allowed:
                raise self.fail(f"{where}.{key}" if where else f".{key}", "unknown key",
                                f"allowed keys here: {', '.join(allowed)}")

    def section(self, key: str, required: bool = False) -> dict:
        """The top-level object ``key`` ({} when absent and not required)."""
        value = self.doc.get(key)
        if value is None:
            if required:
                raise self.fail(f".{key}", "missing section", f'add "{key}": {{...}}')
            return {}
        if not isinstance(value, dict) or not value and required:
            raise self.fail(f".{key}", "expected a non-empty object of named entries",
                            f'write "{key}": {{"name": ..., ...}}')
        return value

    def entry(self, value: Any, where: str, allowed: Iterable[str]) -> dict:
        """An object with only ``allowed`` keys."""
        if not isinstance(value, dict):
            raise self.fail(where, f"expected an object, got {json.dumps(value)}",
                            f"give {{{', '.join(repr(k) for k in allowed)}: ...}}")
        self.check_keys(value, allowed, where)
        return value

    def number(self, obj: dict, key: str, where: str, default: Any = None,
               positive: bool = False, unit: str = "") -> float:
        """A finite number at ``obj[key]`` (``default`` if absent and a default is given)."""
        if key not in obj:
            if default is not None:
                return default
            raise self.fail(f"{where}.{key}", "missing", f"give a number{_unit(unit)}")
        return self.scalar(obj[key], f"{where}.{key}", positive=positive, unit=unit)

    def scalar(self, value: Any, where: str, positive: bool = False, unit: str = "") -> float:
        """``value`` as a finite (optionally positive) number."""
        if not _finite(value) or (positive and value <= 0):
            need = "a positive number" if positive else "a finite number"
            raise self.fail(where, f"expected {need}, got {_shown(value)}",
                            f"give {need}{_unit(unit)}")
        return float(value)

    def vector(self, obj: dict, key: str, where: str, n: int, default: Any = None,
               unit: str = "", kind: type = float) -> list:
        """A list of ``n`` finite numbers (or booleans when ``kind`` is bool)."""
        if key not in obj and default is not None:
            return list(default)
        value = obj.get(key)
        item_ok = ((lambda v: isinstance(v, bool)) if kind is bool else
                   _finite)
        if not isinstance(value, list) or len(value) != n or not all(map(item_ok, value)):
            what = "true/false values" if kind is bool else "numbers"
            raise self.fail(f"{where}.{key}", f"expected a list of {n} {what}, got "
                            f"{_shown(value)}", f"write e.g. {_example(n, kind)}{_unit(unit)}")
        return [kind(v) for v in value]

    def distinct(self, sections: Iterable[str], names: dict) -> None:
        """Refuse a name used in two of ``sections`` (``names[section]``: its entry names):
        results and sweeps look entries up by name, so one of the two would be lost."""
        seen: dict = {}
        for section in sections:
            for name in names[section]:
                if name in seen:
                    raise self.fail(f".{section}.{name}", f"the name {json.dumps(name)} is "
                                    f"also used in .{seen[name]}",
                                    "give every entry of these sections its own name")
                seen[name] = section

    def ref(self, obj: dict, key: str, where: str, names: Iterable[str], what: str) -> str:
        """A name that must be one of ``names`` (a reference to another entry)."""
        names = list(names)
        value = obj.get(key)
        if value not in names:
            problem = "missing" if key not in obj else f"unknown {what} {json.dumps(value)}"
            raise self.fail(f"{where}.{key}", problem,
                            f"use one of the {what}s defined: {', '.join(names[:12])}")
        return value


def _finite(value: Any) -> bool:
    """A JSON number (not a boolean) that is finite as a float: an integer too large for a
    float (``1e400`` written out) is not, rather than an ``OverflowError``."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _shown(value: Any, limit: int = 60) -> str:
    """``value`` as JSON for a message, cut short (a 400-digit integer is not shown whole)."""
    text = json.dumps(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _unit(unit: str) -> str:
    return f" in {unit}" if unit else ""


def _example(n: int, kind: type) -> str:
    item = "true" if kind is bool else "0.0"
    return "[" + ", ".join([item] * n) + "]"
