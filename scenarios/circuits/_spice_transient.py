"""The transient cards of the SPICE reader: ``C``/``L`` elements, source waveforms, ``.tran``
and ``.ic`` (a mixin of the reader's class; errors name file:line like the rest)."""
from __future__ import annotations

import numpy as np

from ._netlist import Capacitor, Inductor, Transient, Waveform, check_wave_params
from ._spice_tokens import _skip_function, _Tok
from ._tran_times import TRAN_VALUES, tran_problem

__all__ = ["TransientCards", "time_zero_value"]


def time_zero_value(wave: Waveform) -> float:
    """The value at t = 0 that ngspice-39 gives a source with a waveform and no DC value in
    ``.op`` and ``.dc`` (vsrcload.c in DC mode, where TSTEP = TSTOP = 0 fill the defaults);
    NaN where that is undefined (a negative delay with default timings, as ngspice fails)."""
    p = [np.float64(v) for v in wave.params]
    get = lambda i, default: p[i] if len(p) > i and p[i] != 0.0 else default  # noqa: E731
    zero = np.float64(0.0)
    with np.errstate(all="ignore"):
        if wave.kind == "PULSE":
            return float(_pulse_at_zero(p[0], get(1, zero), get(2, zero), get(3, zero),
                                        get(4, zero), get(5, zero), get(6, zero), get(7, zero)))
        if wave.kind == "SIN":
            x, phase = -get(3, zero), get(5, zero) * np.pi / 180.0
            if x <= 0:
                return float(p[0] + get(1, zero) * np.sin(phase))
            freq = get(2, 1.0 / zero)
            return float(p[0] + get(1, zero) * np.sin(freq * x * 2.0 * np.pi + phase)
                         * np.exp(-x * get(4, zero)))
        if wave.kind == "EXP":
            v1, v2, td1 = p[0], get(1, zero), get(2, zero)
            td2 = get(4, td1)
            if td1 >= 0:
                return float(v1)
            rise = (v2 - v1) * (1 - np.exp(td1 / get(3, zero)))
            fall = 0.0 if td2 >= 0 else (v1 - v2) * (1 - np.exp(td2 / get(5, zero)))
            return float(v1 + rise + fall)
        return _pwl_at_zero(wave.params)


def _pulse_at_zero(v1, v2, td, tr, tf, pw, per, pulses):
    """ngspice's PULSE at t = 0 (``pulses``: the 8th parameter, a number of pulses)."""
    x = -td
    if pulses > 0 and x > pulses * per:
        return v1
    if x > per:
        x -= per * np.floor(x / per)
    if x <= 0 or x >= tr + pw + tf:
        return v1
    if tr <= x <= tr + pw:
        return v2
    if x < tr:
        return v1 + (v2 - v1) * x / tr
    return v2 + (v1 - v2) * (x - (tr + pw)) / tf


def _pwl_at_zero(params: tuple) -> float:
    """PWL at t = 0: the first value up to the first time, the last after the last time."""
    times, values = params[0::2], params[1::2]
    if times[0] >= 0.0:
        return values[0]
    if times[-1] < 0.0:
        return values[-1]
    k = next(k for k, t in enumerate(times) if t >= 0.0)
    return values[k - 1] + (0.0 - times[k - 1]) / (times[k] - times[k - 1]) \
        * (values[k] - values[k - 1])


class TransientCards:
    """Parsers of the cards that only a transient uses; the reader provides ``error``,
    ``_node``, ``_number``, ``_params``, ``_name``, ``analyses``, ``analysis_lines`` and
    ``initial``."""

    def _storage(self, card: list[_Tok]) -> Capacitor | Inductor:
        """``Cname n1 n2 value`` / ``Lname n1 n2 value`` (``m=`` multiplier allowed)."""
        name = card[0].text
        n1, n2 = self._node(card, 1, "node 1"), self._node(card, 2, "node 2")
        capacitor = name[0].upper() == "C"
        for tok, nxt in zip(card[3:], card[4:]):
            if tok.text.lower() == "ic" and nxt.text == "=":
                raise self.error(tok, f"{name}: an element's initial condition (IC=) is not "
                                 "supported", "remove it and set node voltages on a "
                                 "'.ic v(node)=value' card" + ("" if capacitor else
                                 " (an inductor's initial current cannot be set)"))
        positional, params = self._params(card[3:], {"m"})
        if len(positional) != 1:
            raise self.error(card[-1], f"{name}: expected one value after the nodes",
                             f"write '{name} n1 n2 value' (an initial value goes on a .ic card)")
        value = self._number(positional[0], f"{name} value")
        if "m" in params:
            m = self._number(params["m"], f"{name} multiplier m")
            if m == 0.0:
                parts = "capacitors" if capacitor else "inductors"
                raise self.error(params["m"], f"{name}: multiplier m must be non-zero",
                                 f"give the number of {parts} in parallel, e.g. m=2")
            value = value * m if capacitor else value / m
        if not (value > 0 and value < float("inf")):
            raise self.error(positional[0], f"{name}: value must be positive and finite")
        return (Capacitor if capacitor else Inductor)(name, n1, n2, value)

    def _waveform(self, name: str, rest: list[_Tok], i: int) -> tuple[Waveform, int]:
        """``KIND(p1 p2 ...)`` or ``KIND p1 p2 ...`` starting at ``rest[i]``."""
        kind, end = rest[i].text.upper(), _skip_function(rest, i + 1)
        values = [self._number(t, f"{name} {kind} parameter") for t in rest[i + 1:end]
                  if t.text not in "()"]
        problem = check_wave_params(kind, tuple(values))
        if problem is not None:
            raise self.error(rest[i], f"{name}: {problem}", f"see ngspice's manual for {kind}")
        return Waveform(kind, tuple(values)), end

    def _tran(self, card: list[_Tok]) -> None:
        """``.tran tstep tstop [tstart [tmax]] [uic]``; one per deck (``_tran_times`` rules)."""
        words = [t for t in card[1:] if t.text.lower() != "uic"]
        if not 2 <= len(words) <= 4:
            raise self.error(card[0], ".tran needs tstep tstop [tstart [tmax]]",
                             "write '.tran 1u 1m' (output every 1 us up to 1 ms)")
        first = self.analysis_lines.get(".tran")
        if first is not None:
            raise self.error(card[0], f"a second .tran card (the first is on line {first}): "
                             "one transient per deck is supported",
                             "remove one, or put each in a deck of its own")
        values = [self._number(t, ".tran " + what) for t, what in zip(words, TRAN_VALUES)]
        bad = tran_problem(*values)
        if bad is not None:
            raise self.error(words[bad[0]], f".tran {bad[1]}", bad[2])
        tstart = values[2] if len(values) > 2 else 0.0
        tmax = values[3] if len(values) > 3 else None
        tran = Transient(values[0], values[1], tstart, tmax,
                         any(t.text.lower() == "uic" for t in card[1:]))
        if tran.grid_problem() is not None:
            raise self.error(words[0], f".tran: {tran.grid_problem()}")
        self.analyses.append(tran)

    def _ic(self, card: list[_Tok]) -> None:
        """``.ic v(node)=value ...``."""
        toks, i = card[1:], 0
        while i < len(toks):
            ok = (i + 5 < len(toks) and toks[i].text.lower() == "v" and toks[i + 1].text == "("
                  and toks[i + 3].text == ")" and toks[i + 4].text == "=")
            if not ok:
                raise self.error(toks[i], f".ic: expected v(node)=value, got {toks[i].text!r}",
                                 "write '.ic v(out)=1.5 v(n2)=0'")
            node = self._name(toks[i + 2].text)
            self.initial[node] = self._number(toks[i + 5], f".ic v({node})")
            if not abs(self.initial[node]) < float("inf"):
                raise self.error(toks[i + 5], f".ic v({node}) must be finite")
            i += 6
