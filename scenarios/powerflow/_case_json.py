"""The validation JSON power-flow format (``acpf/*.json``, "holdout-acpf-v1") to a PowerCase.

Every value is checked where it is read; an error names the file and the key path of the bad
value (``.buses[4].Pd``): numbers are JSON numbers (not true/false or strings), finite; bus
numbers are whole, positive and distinct; PV and slack buses have their set points; branch
impedances can be computed with.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from .._errors import FormatError
from .._spec_input import parse_json
from ._case import (BUS_TYPES, Branch, Bus, Generator, PowerCase, impedance_problem,
                    tap_problem)

__all__ = ["read_case_json"]

_LAYOUT = "expected the holdout-acpf-v1 layout of acpf/README.md"
_BUS_KEYS = ("index", "id", "type", "Pd", "Qd", "Pg", "Qg", "Vset", "Va_set_deg", "Gs", "Bs")
_BRANCH_KEYS = ("from", "to", "from_index", "to_index", "r", "x", "b", "tap", "shift_deg")
#: Set points a bus of each type needs (None elsewhere is allowed).
_NEEDED = {"slack": ("Vset", "Va_set_deg"), "PV": ("Vset", "Pg"), "PQ": ()}


def read_case_json(path: str | os.PathLike) -> PowerCase:
    """Read a validation JSON case (buses, in-service branches, generators; per unit)."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FormatError(name, None, f"cannot read the case ({exc})", "check the path") from None
    return _Reader(name).case(parse_json(name, text, "power-flow case"))


class _Reader:
    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, where: str, problem: str, hint: str = _LAYOUT) -> FormatError:
        return FormatError(self.path, None, f"malformed case: {where}: {problem}", hint)

    def need(self, item: Any, keys: tuple[str, ...], where: str) -> dict:
        if not isinstance(item, dict):
            raise self.fail(where, f"expected an object, got {type(item).__name__}")
        missing = [k for k in keys if k not in item]
        if missing:
            raise self.fail(where, f"missing {', '.join(missing)}")
        return item

    def items(self, data: dict, key: str, required: bool = True) -> list:
        value = data.get(key, None if required else [])
        if not isinstance(value, list):
            raise self.fail(f".{key}", f"expected a list, got {type(value).__name__}")
        return value

    def number(self, item: dict, key: str, where: str, optional: bool = False) -> float | None:
        """``item[key]`` as a finite float (None allowed where ``optional``)."""
        value = item.get(key)
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(f"{where}.{key}", f"expected a number, got {_shown(value)}")
        try:
            number = float(value)
        except OverflowError:       # an integer written out beyond 1.8e308
            number = math.inf
        if not math.isfinite(number):
            raise self.fail(f"{where}.{key}", f"{key} is {number}, it must be a finite number")
        return number

    def whole(self, item: dict, key: str, where: str, low: int) -> int:
        """``item[key]`` as an integer of at least ``low`` (bus numbers, row indices)."""
        value = self.number(item, key, where)
        if value != int(value) or value < low:
            raise self.fail(f"{where}.{key}", f"expected a whole number of at least {low}, got "
                            f"{_shown(item[key])}")
        return int(value)

    def case(self, data: Any) -> PowerCase:
        if isinstance(data, dict) and {"bus", "branch"} <= data.keys() and "buses" not in data:
            raise self.fail("top level", "it holds MATPOWER's mpc fields (baseMVA, bus, gen, "
                            "branch matrices: a case saved as JSON, e.g. by jsonencode(mpc)), "
                            "not the validation layout", "save the case as a MATPOWER .m file "
                            "(savecase('case.m', mpc)) and read that")
        data = self.need(data, ("base_mva", "buses", "branches"), "top level")
        base = self.number(data, "base_mva", "")
        if not base > 0.0:
            raise self.fail(".base_mva", f"base_mva must be a finite positive number, got {base}")
        buses = [self.bus(i, b) for i, b in enumerate(self.items(data, "buses"))]
        index = {}
        for bus in buses:
            if bus.id in index:
                raise self.fail(f".buses[{bus.index}].id", f"bus number {bus.id} is also "
                                f"that of .buses[{index[bus.id]}]", "bus numbers must be unique")
            index[bus.id] = bus.index
        branches = [self.branch(k, br, index) for k, br in enumerate(self.items(data, "branches"))]
        generators = [self.generator(g, gen, index)
                      for g, gen in enumerate(self.items(data, "generators", required=False))]
        name = data.get("case", Path(self.path).stem)
        return PowerCase(str(name), base, tuple(buses), tuple(branches), tuple(generators))

    def bus(self, i: int, b: Any) -> Bus:
        where = f".buses[{i}]"
        b = self.need(b, _BUS_KEYS, where)
        if b["type"] not in BUS_TYPES:
            raise self.fail(f"{where}.type", f"type must be one of {BUS_TYPES}, got "
                            f"{_shown(b['type'])}")
        if self.whole(b, "index", where, 0) != i:
            raise self.fail(f"{where}.index", f"index must be {i}, the bus's position")
        optional = [self.number(b, k, where, optional=True)
                    for k in ("Pg", "Qg", "Vset", "Va_set_deg", "Vm0", "Va0_deg")]
        for key in _NEEDED[b["type"]]:
            if b[key] is None:
                raise self.fail(f"{where}.{key}", f"a {b['type']} bus needs {key}, got null",
                                "give the set point")
        if optional[2] is not None and not optional[2] > 0.0:
            raise self.fail(f"{where}.Vset", f"the voltage set point must be positive, got "
                            f"{optional[2]}", "give Vset in p.u., e.g. 1.0")
        numbers = [self.number(b, k, where) for k in ("Pd", "Qd")]
        shunt = [self.number(b, k, where) for k in ("Gs", "Bs")]
        kv = self.number(b, "base_kv", where) if "base_kv" in b else 0.0
        count = self.whole(b, "n_generators", where, 0) if "n_generators" in b else 0
        return Bus(i, self.whole(b, "id", where, 1), b["type"], *numbers, *optional[:4], *shunt,
                   kv, count, *optional[4:])

    def branch(self, k: int, br: Any, index: dict) -> Branch:
        where = f".branches[{k}]"
        br = self.need(br, _BRANCH_KEYS, where)
        ends = [self.whole(br, key, where, 1) for key in ("from", "to")]
        rows = [self.whole(br, key, where, 0) for key in ("from_index", "to_index")]
        if [index.get(e) for e in ends] != rows:
            raise self.fail(where, "from/to do not match from_index/to_index (or name no bus)")
        r, x, b, tap, shift = (self.number(br, key, where)
                               for key in ("r", "x", "b", "tap", "shift_deg"))
        if tap == 0.0:
            raise self.fail(f"{where}.tap", "tap is 0", "give the off-nominal ratio (1.0 for "
                            "a line)")
        bad = tap_problem(tap)
        if bad is not None:
            raise self.fail(f"{where}.tap", *bad)
        bad = impedance_problem(r, x)
        if bad is not None:
            raise self.fail(where, bad[0], bad[1])
        transformer = br.get("is_transformer", tap != 1.0 or shift != 0.0)
        if not isinstance(transformer, bool):
            raise self.fail(f"{where}.is_transformer", "expected true or false, got "
                            f"{_shown(transformer)}")
        return Branch(k, *ends, *rows, r, x, b, tap, shift, transformer)

    def generator(self, g: int, gen: Any, index: dict) -> Generator:
        where = f".generators[{g}]"
        gen = self.need(gen, ("bus", "Pg_spec", "Qg_spec", "Vg"), where)
        bus = self.whole(gen, "bus", where, 1)
        if bus not in index:
            raise self.fail(f"{where}.bus", f"unknown bus {bus}")
        return Generator(bus, index[bus], *(self.number(gen, key, where)
                                            for key in ("Pg_spec", "Qg_spec", "Vg")))


def _shown(value: Any, limit: int = 40) -> str:
    """``value`` as JSON, cut short, for a message."""
    text = json.dumps(value)
    return text if len(text) <= limit else text[:limit] + "..."
