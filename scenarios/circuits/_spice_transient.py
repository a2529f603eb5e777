"""The transient cards of the SPICE reader: ``C``/``L`` elements, source waveforms, ``.tran``
and ``.ic`` (a mixin of the reader's class; errors name file:line like the rest)."""
from __future__ import annotations

from ._netlist import Capacitor, Inductor, Transient, Waveform, check_wave_params
from ._spice_tokens import _skip_function, _Tok

__all__ = ["TransientCards"]


class TransientCards:
    """Parsers of the cards that only a transient uses; the reader provides ``error``,
    ``_node``, ``_number``, ``_params``, ``_name``, ``analyses`` and ``initial``."""

    def _storage(self, card: list[_Tok]) -> Capacitor | Inductor:
        """``Cname n1 n2 value`` / ``Lname n1 n2 value`` (``m=`` multiplier allowed)."""
        name = card[0].text
        n1, n2 = self._node(card, 1, "node 1"), self._node(card, 2, "node 2")
        positional, params = self._params(card[3:], {"m"})
        if len(positional) != 1:
            raise self.error(card[-1], f"{name}: expected one value after the nodes",
                             f"write '{name} n1 n2 value' (an initial value goes on a .ic card)")
        value = self._number(positional[0], f"{name} value")
        capacitor = name[0].upper() == "C"
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
        words = [t for t in card[1:] if t.text.lower() != "uic"]
        if not 2 <= len(words) <= 4:
            raise self.error(card[0], ".tran needs tstep tstop [tstart [tmax]]",
                             "write '.tran 1u 1m' (output every 1 us up to 1 ms)")
        values = [self._number(t, ".tran " + what) for t, what in
                  zip(words, ("tstep", "tstop", "tstart", "tmax"))]
        tstep, tstop = values[0], values[1]
        tstart = values[2] if len(values) > 2 else 0.0
        if not (tstep > 0 and 0 <= tstart < tstop):
            raise self.error(card[0], f".tran {tstep:g} {tstop:g}: need tstep > 0 and "
                                      "0 <= tstart < tstop", "fix the times")
        tmax = values[3] if len(values) > 3 else None
        self.analyses.append(Transient(tstep, tstop, tstart, tmax,
                                       any(t.text.lower() == "uic" for t in card[1:])))

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
