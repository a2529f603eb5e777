"""Reader for the SPICE (ngspice) netlist subset that defines a DC or transient problem.

Supported: title line, ``*`` comment lines, ``;`` / ``$`` / ``//`` inline comments, ``+``
continuation lines, case-insensitive element letters and dot-commands, ``R``, ``C``, ``L``,
``D``, ``V``, ``I`` elements (sources with PULSE/SIN/EXP/PWL waveforms), ``.model NAME D(...)``,
``.op``, ``.dc``, ``.tran``, ``.ic``, ``.options``/``.option``/``.opt``,
``.temp``, ``.title``, ``.end``, ``.control``...``.endc`` (skipped; a ``tran`` or ``dc``
command there is a FormatError, as it would run an analysis), output/other-analysis
commands (ignored). Anything else that could change the DC solution is a FormatError.
"""
from __future__ import annotations

import dataclasses
import math

import os

from .._errors import FormatError
from .._source import read_source
from ._netlist import (_TOKEN_OK, GROUND, CurrentSource, DCSweep, Diode, DiodeModel, Netlist,
                       OperatingPoint, VoltageSource)
from ._spice_checks import DeckChecks
from ._spice_elements import ElementCards
from ._spice_transient import TransientCards
from ._spice_numbers import parse_spice_number
from ._spice_tokens import _COMMENT, _SPECIAL, _AnyKey, _as_tokens, _Tok, _tokens, _usage

__all__ = ["read_deck", "read_netlist"]

_IGNORED_DOT = {".save", ".print", ".plot", ".probe", ".width", ".ac", ".noise",
                ".tf", ".sens", ".four", ".meas", ".measure", ".disto", ".pz", ".nodeset",
                ".global", ".csparam", ".echo"}
#: ``.control`` commands that run an analysis (ngspice would run them; the block is skipped).
_CONTROL_ANALYSES = {"tran", "dc"}
_UNSUPPORTED_DOT = {".param", ".func", ".include", ".inc", ".lib", ".subckt", ".ends",
                    ".if", ".elseif", ".else", ".endif", ".step", ".alter", ".endl"}
# Diode parameters with no effect on the DC solution at TEMP = TNOM (kept in DiodeModel.params;
# a model's own TNOM must equal the circuit temperature, see _Reader._check_tnom).
_DIODE_NON_DC = {"TT", "CJO", "CJ0", "CJ", "VJ", "PB", "M", "MJ", "FC", "KF", "AF", "CJP",
                 "CJSW", "PHP", "MJSW", "FCS", "EG", "XTI", "TNOM", "TRS", "TRS1", "TRS2",
                 "TBV", "TBV1", "TBV2", "CTA", "CTP", "TCV", "TPB", "TPHP", "TM1", "TM2",
                 "TTT1", "TTT2", "GAP1", "GAP2", "LEVEL"}
_DIODE_UNSUPPORTED = {"IKF", "IK", "IKR", "ISR", "NR", "JSW", "ISW", "NBV", "IBVL", "NBVL",
                      "BVL", "AREA", "PJ", "DTEMP", "TEMP"}


def _saturation_current(tokens: list[_Tok], values: dict[str, float]) -> float:
    """IS, or its other name JS: as ngspice, the one written last (both leave ``values``)."""
    given = [t.text.upper() for t, nxt in zip(tokens, tokens[1:])
             if nxt.text == "=" and t.text.upper() in ("IS", "JS")]
    value = values[given[-1]] if given else 1e-14
    values.pop("IS", None)
    values.pop("JS", None)
    return value


def read_netlist(path_or_text: str | os.PathLike) -> Netlist:
    """Parse a SPICE netlist file (or its text) into a :class:`Netlist`.

    Raises FormatError (``file:line: problem. what to do``) for anything malformed or unsupported.
    """
    name, text = read_source(path_or_text)
    return _Reader(name).parse(text)


def read_deck(path_or_text: str | os.PathLike) -> tuple[Netlist, str, dict[str, int]]:
    """:func:`read_netlist`, with the deck's name (for errors) and the line of the first
    ``.op``, ``.dc`` and ``.tran`` card it has (``{".tran": 7}``), of each ``.model NAME``
    card, and as ``".temp"`` the line that sets the temperature (``.temp``, else ``.options
    temp=``, else ``.options tnom=``): where ``build_circuit``'s refusals point."""
    name, text = read_source(path_or_text)
    reader = _Reader(name)
    netlist = reader.parse(text)
    lines = dict(reader.analysis_lines)
    lines.update({f".model {model.name}": line for model, line in reader.models.values()})
    where = reader.temperature_lines
    for key in (".temp", "temp", "tnom"):
        if key in where:
            lines[".temp"] = where[key]
            break
    return netlist, name, lines


class _Reader(ElementCards, TransientCards, DeckChecks):
    def __init__(self, path: str) -> None:
        self.path = path
        self.elements: list = []
        self.element_lines: dict[str, int] = {}
        self.models: dict[str, tuple[DiodeModel, int]] = {}
        self.analyses: list = []
        self.analysis_lines: dict[str, int] = {}  # ".op"/".dc"/".tran" -> its first card's line
        self.options: dict[str, float | str | bool] = {}
        self.temperature: float | None = None
        self.temperature_lines: dict[str, int] = {}  # ".temp", "temp", "tnom" -> first line
        self.initial: dict[str, float] = {}
        self.initial_tokens: dict[str, _Tok] = {}   # .ic node -> where it was named
        self.method_token: _Tok | None = None       # .options method=, checked with a .tran
        self.title = ""
        self.nodes: dict[str, str] = {}
        self.lines_read = 0

    def error(self, where: _Tok | int, problem: str, hint: str = "") -> FormatError:
        line = where.line if isinstance(where, _Tok) else where
        return FormatError(self.path, line, problem, hint)

    def parse(self, text: str) -> Netlist:
        lines = text.splitlines()
        if not lines:
            raise self.error(1, "empty netlist", "the first line is the title, then the elements")
        self.title = lines[0]
        self.lines_read = len(lines)
        for card in self._cards(lines):
            if type(card) is not tuple or not self._plain(*card):
                self._card(_as_tokens(card))
        return self._finish()

    def _cards(self, lines: list[str]):
        """Logical lines as token lists: comments removed, ``+`` lines joined, .control skipped."""
        card: list[_Tok] = []
        control_line = 0
        for number, raw in enumerate(lines[1:], start=2):
            stripped = raw.strip()
            if not control_line and stripped and stripped[0] not in "*+" \
                    and _SPECIAL.search(stripped) is None:  # fast path: a card of plain words
                if card:
                    yield card
                card = (number, stripped.split())  # tokens made only if _plain declines
                head = card[1][0].lower()
                if head == ".control":
                    control_line, card = number, []
                elif head == ".end":
                    return
                continue
            head = stripped.split(None, 1)[0].lower() if stripped else ""
            if control_line:
                control_line = 0 if head == ".endc" else control_line
                if head in _CONTROL_ANALYSES:  # would run in ngspice; skipped here
                    command = _COMMENT.split(stripped, maxsplit=1)[0].strip()
                    raise self.error(number, f"{command!r} in the .control block (line "
                                     f"{control_line}) runs an analysis, but .control blocks are "
                                     "not read here", f"write it as a card before the block: "
                                     f"'.{command}'")
                continue
            if not stripped or stripped.startswith("*"):
                continue
            body = _COMMENT.split(stripped, maxsplit=1)[0].strip()
            if not body:
                continue
            if body.startswith("+"):
                if not card:
                    raise self.error(number, "continuation line '+' with no card before it",
                                     "remove the '+' or join it to an element line")
                card = _as_tokens(card) + _tokens(body[1:], number)
                continue
            if card:
                yield card
            card = _tokens(body, number)
            if head == ".control":
                control_line, card = number, []
            elif head == ".end":
                return
        if control_line:
            raise self.error(control_line, ".control block is never closed",
                             "add a '.endc' line after it")
        if card:
            yield card

    def _card(self, card: list[_Tok]) -> None:
        head = card[0]
        if head.text.startswith("."):
            return self._dot(card)
        handler = {"R": self._resistor, "C": self._storage, "L": self._storage,
                   "D": self._diode, "V": self._source, "I": self._source}.get(head.text[0].upper())
        if handler is None:
            raise self.error(head, f"element {head.text!r}: type '{head.text[0].upper()}' is "
                                   "not supported", "only R, C, L, D, V and I elements are supported")
        self._word(head, "element name")
        key = head.text.lower()
        if key in self.element_lines:
            raise self.error(head, f"duplicate element name {head.text!r} (first defined on "
                                   f"line {self.element_lines[key]})", "rename one of them")
        self.element_lines[key] = head.line
        self.elements.append(handler(card))

    # ----- tokens (for the element cards in _spice_elements and the dot-commands) ---------
    def _name(self, node: str) -> str:
        """The node's first spelling (SPICE node names ignore case); ground is ``"0"``."""
        low = node.lower()
        return GROUND if low in ("0", "gnd") else self.nodes.setdefault(low, node)

    def _node(self, card: list[_Tok], index: int, what: str) -> str:
        if index >= len(card) or card[index].text in "()=":
            tok = card[min(index, len(card) - 1)]
            raise self.error(tok, f"{card[0].text}: missing {what}",
                             f"write it as '{_usage(card[0].text)}'")
        return self._name(self._word(card[index], "node name").text)

    def _word(self, tok: _Tok, what: str) -> _Tok:
        """``tok`` if a Netlist can hold it as a name (``a$b`` is a word to SPICE, not here)."""
        if not _TOKEN_OK.fullmatch(tok.text):
            raise self.error(tok, f"{what} {tok.text!r} may not contain any of ( ) = , ; $",
                             "rename it without those characters")
        return tok

    def _number(self, tok: _Tok, what: str) -> float:
        value = parse_spice_number(tok.text)
        if value is None:
            raise self.error(tok, f"bad number {tok.text!r} for {what}",
                             "use a number such as 4.7k, 1e-3, 10meg or 2.5u")
        if math.isinf(value):
            raise self.error(tok, f"number {tok.text!r} for {what} is out of range (larger than "
                             "1.8e308)", "check the exponent")
        return value

    def _params(self, tokens: list[_Tok], allowed: set[str]):
        """Split ``key = value`` pairs from positional tokens; refuse keys not in ``allowed``."""
        positional, params, i = [], {}, 0
        while i < len(tokens):
            if i + 1 < len(tokens) and tokens[i + 1].text == "=":
                key = tokens[i].text.lower()
                if i + 2 >= len(tokens) or tokens[i + 2].text in "()=":
                    raise self.error(tokens[i + 1], f"missing value after '{tokens[i].text}='")
                if key not in allowed:
                    raise self.error(tokens[i], f"parameter {tokens[i].text!r} is not supported",
                                     "supported: " + ", ".join(sorted(allowed)))
                params[key], i = tokens[i + 2], i + 3
            elif tokens[i].text in "()=":
                raise self.error(tokens[i], f"unexpected {tokens[i].text!r}")
            else:
                positional.append(tokens[i])
                i += 1
        return positional, params

    # ----- dot-commands ---------------------------------------------------------------
    def _dot(self, card: list[_Tok]) -> None:
        head = card[0]
        command = head.text.lower()
        handlers = {".model": self._model, ".op": self._op, ".dc": self._dc,
                    ".options": self._options, ".option": self._options, ".opt": self._options,
                    ".temp": self._temp, ".title": self._title, ".tran": self._tran,
                    ".ic": self._ic_card}
        if command in handlers:
            handlers[command](card)
            if command in (".op", ".dc", ".tran"):
                self.analysis_lines.setdefault(command, head.line)
        elif command in _UNSUPPORTED_DOT:
            raise self.error(head, f"{head.text} is not supported (it can change the DC "
                                   "solution)", "expand it into plain R, D, V, I elements")
        elif command not in _IGNORED_DOT:
            raise self.error(head, f"unknown dot-command {head.text!r}",
                             "supported: .model .op .dc .tran .ic .options .temp .title .end "
                             ".control")

    def _model(self, card: list[_Tok]) -> None:
        if len(card) < 3:
            raise self.error(card[0], ".model needs a name and a type",
                             "write '.model NAME D(IS=1e-14 N=1)'")
        name, kind = card[1], card[2]
        if not _TOKEN_OK.fullmatch(name.text):
            raise self.error(name, f".model name {name.text!r} is not a name",
                             "write '.model NAME D(IS=1e-14 N=1)'")
        if kind.text.upper() != "D":
            raise self.error(kind, f"model type {kind.text!r} of {name.text!r} is not supported",
                             "only diode models (type D) are supported")
        if name.text.lower() in self.models:
            raise self.error(name, f"duplicate .model {name.text!r} (first on line "
                                   f"{self.models[name.text.lower()][1]})", "rename one")
        tokens = [t for t in card[3:] if t.text not in "()"]
        allowed = {"IS", "JS", "N", "RS", "BV", "IBV"} | _DIODE_NON_DC | _DIODE_UNSUPPORTED
        positional, raw = self._params(tokens, {k.lower() for k in allowed})
        if positional:
            raise self.error(positional[0], f"expected NAME=value in .model, got "
                                            f"{positional[0].text!r}")
        values = {k.upper(): self._number(t, f"{name.text} {k.upper()}") for k, t in raw.items()}
        for key in values.keys() & _DIODE_UNSUPPORTED:
            raise self.error(raw[key.lower()], f"diode parameter {key} is not supported",
                             "only IS, N, RS (and BV, IBV) affect the DC model here")
        if values.get("LEVEL", 1.0) != 1.0:
            raise self.error(raw["level"], "only diode LEVEL=1 is supported")
        core = {"IS": _saturation_current(tokens, values), "N": values.pop("N", 1.0),
                "RS": values.pop("RS", 0.0), "BV": values.pop("BV", None),
                "IBV": values.pop("IBV", 1e-3)}
        model = DiodeModel(name.text, params=tuple(values.items()), **core)
        self._check_model(name, raw, model)
        self.models[name.text.lower()] = (model, name.line)

    def _op(self, card: list[_Tok]) -> None:
        self.analyses.append(OperatingPoint())

    def _dc(self, card: list[_Tok]) -> None:
        if len(card) != 5:
            hint = ("nested sweeps (a second source) are not supported" if len(card) > 5
                    else "write '.dc SOURCE start stop step'")
            raise self.error(card[0], f".dc needs a source and 3 numbers, got {len(card) - 1} "
                                      "items", hint)
        start, stop, step = (self._number(t, ".dc value") for t in card[2:5])
        if step == 0.0 or (stop - start) * step < 0.0:
            raise self.error(card[4], f".dc step {card[4].text} does not lead from {card[2].text} "
                                      f"to {card[3].text}", "give a step with the sign of stop - start")
        self.analyses.append((DCSweep(card[1].text, start, stop, step), card[1]))

    def _options(self, card: list[_Tok]) -> None:
        positional, params = self._params(card[1:], _AnyKey())
        for tok in positional:
            self.options[self._word(tok, ".options flag").text.lower()] = True
            self._check_option(tok.text.lower(), tok, True)
        for key, tok in params.items():
            self._word(_Tok(key, tok.line), ".options name")
            is_number = parse_spice_number(tok.text) is not None
            self.options[key] = (self._number(tok, f".options {key}") if is_number
                                 else self._word(tok, f".options {key} value").text)
            if key == "method":
                self.method_token = tok  # checked in `_finish` when the deck has a .tran
            self._check_option(key, tok, self.options[key])
            if key in ("temp", "tnom"):
                self.temperature_lines.setdefault(key, tok.line)

    def _ic_card(self, card: list[_Tok]) -> None:
        """``.ic``, remembering each node's token so :meth:`_finish` can name its line."""
        self._ic(card)
        for tok in card[1:][2::6]:  # v ( NODE ) = value, as _ic checked
            self.initial_tokens[self._name(tok.text)] = tok

    def _temp(self, card: list[_Tok]) -> None:
        if len(card) != 2:
            raise self.error(card[0], ".temp needs exactly one temperature",
                             "write '.temp 27' (degrees Celsius)")
        self.temperature = self._number(card[1], ".temp")
        self.temperature_lines.setdefault(".temp", card[0].line)

    def _title(self, card: list[_Tok]) -> None:
        self.title = " ".join(t.text for t in card[1:])

    # ----- checks across cards --------------------------------------------------------
    def _finish(self) -> Netlist:
        if not self.elements:
            raise self.error(self.lines_read, "the netlist has no elements",
                             "add R, D, V or I lines after the title line")
        elements = [self._model_of(e) if isinstance(e, Diode) else e for e in self.elements]
        by_name = ({e.name.lower(): e for e in elements}
                   if any(isinstance(a, tuple) for a in self.analyses) else {})
        analyses = []
        for analysis in self.analyses:
            if isinstance(analysis, tuple):
                analysis, tok = analysis
                source = by_name.get(analysis.source.lower())
                if not isinstance(source, (VoltageSource, CurrentSource)):
                    raise self.error(tok, f".dc sweeps {tok.text!r}, which is not a V or I "
                                          "source", "sweep an independent source")
                analysis = DCSweep(source.name, analysis.start, analysis.stop, analysis.step)
            analyses.append(analysis)
        temperature = self.temperature
        if temperature is None:
            temp_option = self.options.get("temp", 27.0)
            temperature = temp_option if isinstance(temp_option, float) else 27.0
        models = {m.name: m for m, _ in self.models.values()}
        self._check_initial(elements)
        self._check_method(analyses)
        self._check_tnom(elements, temperature)
        return Netlist(self.title, tuple(elements), models, tuple(analyses), self.options,
                       temperature, self.initial)

    def _model_of(self, diode: Diode) -> Diode:
        """The diode with its model's name as the ``.model`` card spells it."""
        found = self.models.get(diode.model.lower())
        if found is None:
            raise self.error(self.element_lines[diode.name.lower()],
                             f"{diode.name}: diode model {diode.model!r} is not defined",
                             f"add '.model {diode.model} D(IS=... N=...)'")
        if found[0].name == diode.model:
            return diode
        return dataclasses.replace(diode, model=found[0].name)
