"""The element cards of the SPICE reader: ``R``, ``D``, ``V`` and ``I`` (a mixin of the reader's
class, like :mod:`._spice_transient`; errors name file:line like the rest)."""
from __future__ import annotations

import math

from ._netlist import CurrentSource, Diode, Resistor, VoltageSource
from ._spice_numbers import parse_spice_number
from ._spice_tokens import _skip_numbers, _Tok, _usage
from ._spice_transient import time_zero_value

__all__ = ["ElementCards"]

_TRANSIENT = {"PULSE", "SIN", "EXP", "PWL", "SFFM", "AM", "TRNOISE", "TRRANDOM"}


class ElementCards:
    """Parsers of the ``R``/``D``/``V``/``I`` cards; the reader provides ``error``, ``_name``,
    ``_node``, ``_number``, ``_params``, ``_waveform``, ``elements`` and ``element_lines``."""

    def _plain(self, number: int, words: list[str]) -> bool:
        """Add an ``R``/``D`` card of exactly four plain words (the bulk of a big deck) without
        token objects; False leaves the card (and any error in it) to :meth:`_card`."""
        if len(words) != 4 or words[0][0] not in "RrDd" \
                or words[0].lower() in self.element_lines:
            return False
        name, a, b, last = words
        if name[0] in "Rr":
            value = parse_spice_number(last)
            if not value or math.isinf(value):  # not a number, zero or overflow: _card says why
                return False
            element = Resistor(name, self._name(a), self._name(b), value)
        else:
            element = Diode(name, self._name(a), self._name(b), last, 1.0)
        self.element_lines[name.lower()] = number
        self.elements.append(element)
        return True

    def _resistor(self, card: list[_Tok]) -> Resistor:
        name = card[0].text
        n1, n2 = self._node(card, 1, "node 1"), self._node(card, 2, "node 2")
        positional, params = self._params(card[3:], {"r", "resistance", "m", "ac", "noisy"})
        if len(positional) > 1:
            raise self.error(positional[1], f"{name}: unexpected {positional[1].text!r}",
                             "semiconductor resistor models and other options are not supported")
        value_tok = positional[0] if positional else params.get("r") or params.get("resistance")
        if value_tok is None:
            raise self.error(card[-1], f"{name}: missing resistance value",
                             f"write it as '{_usage(name)}'")
        value = self._number(value_tok, f"{name} resistance")
        if "m" in params:
            m = self._number(params["m"], f"{name} multiplier m")
            if m == 0.0:
                raise self.error(params["m"], f"{name}: multiplier m must be non-zero",
                                 "m is the number of resistors in parallel, e.g. m=2")
            value /= m
        if math.isinf(value):  # e.g. 1e300 with m=1e-300
            raise self.error(value_tok, f"{name}: resistance {value_tok.text} / m is out of "
                             "range (larger than 1.8e308)", "check the value and m")
        if value == 0.0:
            raise self.error(value_tok, f"{name}: resistance must be non-zero",
                             "use a voltage source of 0 V for a short circuit")
        return Resistor(name, n1, n2, value)

    def _diode(self, card: list[_Tok]) -> Diode:
        name = card[0].text
        anode, cathode = self._node(card, 1, "anode"), self._node(card, 2, "cathode")
        if len(card) < 4 or card[3].text in "()=":
            raise self.error(card[-1], f"{name}: missing model name", f"write '{_usage(name)}'")
        model = card[3]
        positional, params = self._params(card[4:], {"area", "m", "ic", "off"})
        area, m = 1.0, 1.0
        for tok in positional:
            if tok.text.lower() == "off":
                continue
            if parse_spice_number(tok.text) is None:  # e.g. ngspice's 'D1 a k tj model thermal'
                raise self.error(tok, f"{name}: {tok.text!r} after the model name "
                                 f"{model.text!r} is not a number (the area)",
                                 f"write '{_usage(name)} [area]'; diodes with a third (thermal) "
                                 "node are not supported")
            area = self._number(tok, f"{name} area")
        if "area" in params:
            area = self._number(params["area"], f"{name} area")
        if "m" in params:
            m = self._number(params["m"], f"{name} multiplier m")
            if m == 0.0:
                raise self.error(params["m"], f"{name}: multiplier m must be non-zero",
                                 "m is the number of diodes in parallel, e.g. m=2")
            area *= m
        if not 0.0 < area < math.inf:  # inf: area times m overflowed
            raise self.error(card[0], f"{name}: area must be positive and finite")
        return Diode(name, anode, cathode, model.text, area, m)

    def _source(self, card: list[_Tok]) -> VoltageSource | CurrentSource:
        name = card[0].text
        pos, neg = self._node(card, 1, "+ node"), self._node(card, 2, "- node")
        dc, wave, rest, i = None, None, card[3:], 0
        while i < len(rest):
            word = rest[i].text.upper()
            if word == "DC":
                i += 2 if i + 1 < len(rest) and rest[i + 1].text == "=" else 1
                if i >= len(rest):
                    raise self.error(rest[-1], f"{name}: missing value after DC",
                                     f"write '{_usage(name)}'")
                dc, i = self._number(rest[i], f"{name} DC value"), i + 1
            elif word in ("AC", "DISTOF1", "DISTOF2"):
                i = _skip_numbers(rest, i + 1, 2)
            elif word in _TRANSIENT:
                wave_tok, (wave, i) = rest[i], self._waveform(name, rest, i)
            elif dc is None and parse_spice_number(rest[i].text) is not None:
                dc, i = self._number(rest[i], f"{name} value"), i + 1
            else:
                raise self.error(rest[i], f"{name}: unexpected {rest[i].text!r}",
                                 f"write '{_usage(name)}'")
        if dc is None and wave is not None:  # as ngspice: "transient time 0 value used"
            dc = time_zero_value(wave)
            if not math.isfinite(dc):
                raise self.error(wave_tok, f"{name}: {wave.kind} has no value at t = 0 (a "
                                 "negative delay with default timings), which .op and .dc use",
                                 "give a DC value, the timings, or a delay >= 0")
        cls = VoltageSource if name[0].upper() == "V" else CurrentSource
        return cls(name, pos, neg, 0.0 if dc is None else dc, wave)
