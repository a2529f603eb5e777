"""Tokens of SPICE cards for the netlist reader (``_spice_reader``): splitting and helpers."""
from __future__ import annotations

import re
from typing import NamedTuple

from ._spice_numbers import parse_spice_number

_COMMENT = re.compile(r";|(?:^|(?<=\s))(?:\$|//)")
_TOKEN = re.compile(r"[()=]|[^\s()=,]+")
#: A line without these is a card of whitespace-separated words (no comment, no punctuation).
_SPECIAL = re.compile(r"[;$/()=,]")


class _Tok(NamedTuple):
    """One word of a card and its line number (for error messages)."""

    text: str
    line: int


class _AnyKey:
    """An 'allowed keys' set that allows everything (for .options)."""

    def __contains__(self, key: object) -> bool:
        return True


def _as_tokens(card) -> list[_Tok]:
    """A card from ``_cards`` as tokens: ``(line, words)`` of a plain line, or tokens already."""
    return [_Tok(word, card[0]) for word in card[1]] if type(card) is tuple else card


def _tokens(text: str, line: int) -> list[_Tok]:
    return [_Tok(t, line) for t in _TOKEN.findall(text)]


def _usage(name: str) -> str:
    return {"R": f"{name} n1 n2 value", "D": f"{name} anode cathode model",
            "V": f"{name} pos neg DC value", "I": f"{name} pos neg DC value"}.get(
        name[:1].upper(), name)


def _skip_numbers(tokens: list[_Tok], i: int, most: int) -> int:
    for _ in range(most):
        if i < len(tokens) and parse_spice_number(tokens[i].text) is not None:
            i += 1
    return i


def _skip_function(tokens: list[_Tok], i: int) -> int:
    """Skip a waveform's arguments: ``( ... )`` or bare numbers."""
    if i < len(tokens) and tokens[i].text == "(":
        while i < len(tokens) and tokens[i].text != ")":
            i += 1
        return i + 1
    while i < len(tokens) and parse_spice_number(tokens[i].text) is not None:
        i += 1
    return i
