"""Checks of the SPICE reader that need a whole card or the whole deck (a mixin of the reader's
class, like :mod:`._spice_elements`): each names the file:line where the deck says it.

``build_circuit`` repeats the model checks for a :class:`Netlist` made in code (no file to
name); here they fail first, with the line.
"""
from __future__ import annotations

from ._netlist import GROUND, SPICE_METHODS, Diode, DiodeModel, Transient
from ._spice_tokens import _Tok

__all__ = ["DeckChecks"]

#: The ``.options`` the solve reads, and what each must hold (a word or a value out of range
#: would otherwise be dropped for the default without a word).
_NUMERIC_OPTIONS = {
    "gmin": (lambda v: v >= 0.0, "a conductance >= 0 in siemens, e.g. gmin=1e-12 (ngspice's "
                                 "default)"),
    "temp": (lambda v: v > -273.15, "a temperature in degrees Celsius above -273.15"),
    "tnom": (lambda v: v > -273.15, "a temperature in degrees Celsius above -273.15"),
    **{key: (lambda v: v > 0.0, "a number > 0") for key in ("reltol", "abstol", "vntol",
                                                           "trtol", "maxord")},
}


class DeckChecks:
    """The reader provides ``error``, ``models``, ``options``, ``method_token``, ``initial``
    and ``initial_tokens``."""

    def _check_option(self, key: str, tok: _Tok, value: float | str | bool) -> None:
        """An option the solve reads holds a usable number (not a word, nor a bare flag)."""
        usable, need = _NUMERIC_OPTIONS.get(key, (None, ""))
        if usable is not None and (isinstance(value, (str, bool)) or not usable(value)):
            shown = key if value is True else f"{key}={tok.text}"  # a flag has no value
            raise self.error(tok, f".options {shown} is not usable", f"give {need}")

    def _check_model(self, name: _Tok, raw: dict[str, _Tok], model: DiodeModel) -> None:
        """The DC parameters of a ``.model`` card are usable (as ``build_circuit`` requires;
        a BV or IBV it cannot use, which a netlist may hold, is refused there: the command
        line names its line)."""
        for key, value, usable, need in (("IS", model.IS, model.IS > 0, "> 0"),
                                         ("N", model.N, model.N > 0, "> 0"),
                                         ("RS", model.RS, model.RS >= 0, ">= 0")):
            if not usable:
                tok = raw.get(key.lower()) or (raw.get("js") if key == "IS" else None) or name
                raise self.error(tok, f".model {model.name}: {key}={value:g} is not usable",
                                 f"give {key} {need}")

    def _check_method(self, analyses: list) -> None:
        """``.options method=`` names an integration method, where a ``.tran`` integrates."""
        tok = self.method_token
        if (tok is not None and any(isinstance(a, Transient) for a in analyses)
                and str(self.options["method"]).lower() not in SPICE_METHODS):
            raise self.error(tok, f".options method={tok.text}: not an integration method",
                             f"use one of {', '.join(sorted(SPICE_METHODS))}")

    def _check_tnom(self, elements: list, temperature: float) -> None:
        """A used model's own TNOM equals the circuit temperature (no temperature scaling)."""
        used = {e.model.lower() for e in elements if isinstance(e, Diode)}
        for key in sorted(used, key=lambda k: self.models[k][1]):  # in file order
            model, line = self.models[key]
            tnom = dict(model.params).get("TNOM")
            if tnom is not None and abs(tnom - temperature) > 1e-12:
                raise self.error(line, f".model {model.name}: TNOM={tnom:g} differs from the "
                                 f"circuit temperature {temperature:g} (.temp, default 27): "
                                 "temperature scaling of diode parameters is not supported",
                                 f"remove TNOM from the model or set '.temp {tnom:g}'")

    def _check_initial(self, elements: list) -> None:
        """Each ``.ic`` node is a node some element connects (ground is always 0 V)."""
        connected = {n for e in elements for n in e.nodes} if self.initial else set()
        for node, tok in self.initial_tokens.items():
            if node == GROUND:
                raise self.error(tok, f".ic sets ground node {tok.text!r}",
                                 "remove it: ground is always 0 V")
            if node not in connected:
                raise self.error(tok, f".ic names node {tok.text!r}, which is not in the "
                                 "netlist (no element connects it)",
                                 "fix the node name or remove it from the .ic card")
