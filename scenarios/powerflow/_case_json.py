"""The validation JSON power-flow format (``acpf/*.json``, "holdout-acpf-v1") to a PowerCase."""
from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path

from .._errors import FormatError
from .._spec_input import parse_json
from ._case import BUS_TYPES, Branch, Bus, Generator, PowerCase

__all__ = ["read_case_json"]

_BUS_KEYS = ("index", "id", "type", "Pd", "Qd", "Pg", "Qg", "Vset", "Va_set_deg", "Gs", "Bs")
_BRANCH_KEYS = ("from", "to", "from_index", "to_index", "r", "x", "b", "tap", "shift_deg")


def read_case_json(path: str | os.PathLike) -> PowerCase:
    """Read a validation JSON case (buses, in-service branches, generators; per unit)."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FormatError(name, None, f"cannot read the case ({exc})", "check the path") from None
    data = parse_json(name, text, "power-flow case")
    try:
        return _case(name, data)
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        problem = exc.args[0] if exc.args else repr(exc)
        raise FormatError(name, None, f"malformed case: {problem}",
                          "expected the holdout-acpf-v1 layout of acpf/README.md") from None


def _start_fields(bus: dict) -> tuple:
    """The case's own voltage (``Vm0``, ``Va0_deg``) where the JSON has it."""
    return tuple(None if bus.get(k) is None else float(bus[k]) for k in ("Vm0", "Va0_deg"))


def _need(item: dict, keys: tuple[str, ...], where: str) -> None:
    if not isinstance(item, dict):
        raise TypeError(f"{where} is not an object")
    missing = [k for k in keys if k not in item]
    if missing:
        raise KeyError(f"{where}: missing {', '.join(missing)}")


def _case(path: str, data: dict) -> PowerCase:
    _need(data, ("base_mva", "buses", "branches"), "top level")
    buses = []
    for i, b in enumerate(data["buses"]):
        _need(b, _BUS_KEYS, f".buses[{i}]")
        if b["type"] not in BUS_TYPES or b["index"] != i:
            raise ValueError(f".buses[{i}]: type must be one of {BUS_TYPES} and index {i}")
        optional = [None if b[k] is None else float(b[k]) for k in ("Pg", "Qg", "Vset",
                                                                     "Va_set_deg")]
        buses.append(Bus(i, int(b["id"]), b["type"], float(b["Pd"]), float(b["Qd"]), *optional,
                         float(b["Gs"]), float(b["Bs"]), float(b.get("base_kv", 0.0)),
                         int(b.get("n_generators", 0)), *_start_fields(b)))
    index = {bus.id: bus.index for bus in buses}
    branches = []
    for k, br in enumerate(data["branches"]):
        _need(br, _BRANCH_KEYS, f".branches[{k}]")
        if index.get(br["from"]) != br["from_index"] or index.get(br["to"]) != br["to_index"]:
            raise ValueError(f".branches[{k}]: from/to do not match from_index/to_index")
        tap, shift = float(br["tap"]), float(br["shift_deg"])
        branches.append(Branch(k, int(br["from"]), int(br["to"]), int(br["from_index"]),
                               int(br["to_index"]), float(br["r"]), float(br["x"]),
                               float(br["b"]), tap, shift,
                               bool(br.get("is_transformer", tap != 1.0 or shift != 0.0))))
    generators = []
    for g, gen in enumerate(data.get("generators", [])):
        _need(gen, ("bus", "Pg_spec", "Qg_spec", "Vg"), f".generators[{g}]")
        if gen["bus"] not in index:
            raise ValueError(f".generators[{g}]: unknown bus {gen['bus']!r}")
        generators.append(Generator(int(gen["bus"]), index[gen["bus"]], float(gen["Pg_spec"]),
                                    float(gen["Qg_spec"]), float(gen["Vg"])))
    for where, items in ((".buses", buses), (".branches", branches),
                         (".generators", generators)):
        for k, item in enumerate(items):
            _check_finite(item, f"{where}[{k}]")
    base = float(data["base_mva"])
    if not (math.isfinite(base) and base > 0.0):
        raise ValueError(f"base_mva must be a finite positive number, got {base}")
    return PowerCase(str(data.get("case", Path(path).stem)), base,
                     tuple(buses), tuple(branches), tuple(generators))


def _check_finite(item, where: str) -> None:
    """Refuse NaN and infinite numbers (JSON's NaN, Infinity, 1e400) and a zero tap: the
    power flow would run on them and fail without saying why."""
    for field in dataclasses.fields(item):
        value = getattr(item, field.name)
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{where}: {field.name} is {value}, it must be a finite number")
    if getattr(item, "tap", 1.0) == 0.0:
        raise ValueError(f"{where}: tap is 0; give the off-nominal ratio (1.0 for a line)")
