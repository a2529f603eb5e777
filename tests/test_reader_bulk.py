"""The MATPOWER reader's bulk path (whole blocks of plain matrix lines through numpy) gives
what the line-by-line path gives: the same rows, lines and values, and the same errors; and
``json_text`` writes what ``json.dumps(indent=2)`` writes."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from scenarios._errors import FormatError
from scenarios._json_text import json_text
from scenarios.powerflow import _mfile
from scenarios.powerflow._mfile import parse_mfile

NUMBERS = st.one_of(
    st.integers(-10**6, 10**6).map(str),
    st.floats(allow_nan=False, allow_infinity=False, width=64).map(repr),
    st.tuples(st.floats(-1e6, 1e6), st.sampled_from("eEdD")).map(
        lambda t: f"{t[0]:.4e}".replace("e", t[1])),
    st.sampled_from(["Inf", "-Inf", "inf", "NaN", "nan", "+1", "-.5", "5.", "1d3", "2D-2",
                     "1E+05", "0", "-0"]))
#: Values the reader refuses (both paths must name the same one, on the same line).
BAD = st.sampled_from(["1.2.3", "1e400", "-1e999", "Nan", "INf", "e5", "1-2", "+", ".", "1e",
                       "nan1", "Infa", "0x1", "1_0", "١"])


@st.composite
def matrix_texts(draw) -> str:
    """A matrix's lines: rows of numbers split by blanks, tabs or commas, ended by ';' or a
    line end, sometimes several rows on a line and blank lines between."""
    width = draw(st.integers(1, 6))
    lines = []
    for _ in range(draw(st.integers(0, 30))):
        rows = draw(st.integers(0, 3))
        parts = []
        for _ in range(rows):
            values = draw(st.lists(NUMBERS, min_size=width, max_size=width))
            if draw(st.integers(0, 40)) == 0:
                values[draw(st.integers(0, width - 1))] = draw(BAD)
            parts.append(draw(st.sampled_from([" ", "\t", ", ", ","])).join(values))
        end = draw(st.sampled_from(["", ";", " ;", ";  "]))
        lines.append("  " + "; ".join(parts) + (end if parts else ""))
    return "\n".join(lines)


def _parse(text: str, bulk: bool):
    """``text`` parsed with the bulk path, or line by line only (an error: its text)."""
    with pytest.MonkeyPatch.context() as patch:
        if not bulk:
            patch.setattr(_mfile, "read_block", lambda lines, first: None)
        try:
            return parse_mfile("<string>", text)
        except FormatError as err:
            return str(err)


def _same(a, b) -> None:
    if isinstance(a, str) or isinstance(b, str):
        assert a == b
        return
    assert a.scalars == b.scalars and a.function == b.function and a.last_line == b.last_line
    assert set(a.matrices) == set(b.matrices)
    for name, m in a.matrices.items():
        n = b.matrices[name]
        assert (m.line, m.lines.tolist(), m.lengths.tolist()) == (
            n.line, n.lines.tolist(), n.lengths.tolist())
        assert (m.data is None) == (n.data is None)
        if m.data is not None:
            assert m.data.shape == n.data.shape
            assert np.array_equal(m.data, n.data, equal_nan=True)


@settings(max_examples=150, deadline=None)
@given(body=matrix_texts(), tail=st.sampled_from(["];", "  ];  % done", "1 2];", "]; mpc.x = 1;"]))
def test_bulk_rows_equal_line_by_line_rows(body: str, tail: str) -> None:
    text = f"function mpc = c\nmpc.baseMVA = 100;\nmpc.bus = [\n{body}\n{tail}\nmpc.y = 2;\n"
    _same(_parse(text, True), _parse(text, False))


def _big_matrix(rows: int, width: int = 13) -> list[str]:
    return [" ".join(f"{r + 1}" if c == 0 else f"{(r * width + c) * 0.001:.4f}"
                     for c in range(width)) + ";" for r in range(rows)]


@pytest.mark.parametrize("bad, words", [("1.2.3", "bad number '1.2.3'"),
                                        ("1e400", "out of range"), ("0x10", "bad number")])
def test_bad_value_in_a_big_matrix_names_its_line(bad: str, words: str) -> None:
    rows = _big_matrix(9000)
    words_of_row = rows[6543].split()
    rows[6543] = " ".join(words_of_row[:5] + [bad] + words_of_row[6:])
    text = "mpc.baseMVA = 100;\nmpc.bus = [\n" + "\n".join(rows) + "\n];\n"
    with pytest.raises(FormatError) as info:
        parse_mfile("big.m", text)
    assert info.value.line == 6543 + 3 and words in str(info.value)


def test_comments_and_brackets_in_comments_inside_a_big_matrix() -> None:
    rows = _big_matrix(9000, width=4)
    rows[10] += "  % a comment with ] and 'quotes'"
    rows[5000] = "% ] not the end"
    rows[7000] = rows[7000].rstrip(";") + " ..."     # continued on the next line
    text = "mpc.baseMVA = 100;\nmpc.bus = [\n" + "\n".join(rows) + "\n];\n"
    bulk = _parse(text, True)
    _same(bulk, _parse(text, False))
    m = bulk.matrices["bus"]
    assert m.data is None and len(m.lines) == 8998   # one comment row, one row joined
    assert m.lines[10] == 13 and m.lines[-1] == 9002


def test_cell_arrays_are_skipped_up_to_their_closing_brace() -> None:
    names = "\n".join(f"\t'bus {k}';" for k in range(5000))
    text = ("mpc.baseMVA = 100;\nmpc.bus_name = {\n" + names + "\n\t'}';\n};\n"
            "mpc.gen = [1 2 3];\n")
    m = parse_mfile("<string>", text).matrices["gen"]
    assert m.data.tolist() == [[1.0, 2.0, 3.0]] and m.lines.tolist() == [5005]


_KEYS = st.text(max_size=4) | st.integers(-3, 3) | st.booleans() | st.none() | st.floats(
    allow_nan=False, allow_infinity=False)  # json writes these keys as text too
JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5),
              st.floats(allow_nan=True, allow_infinity=True)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(_KEYS, inner, max_size=4),
        st.dictionaries(st.text(max_size=6), st.floats(), min_size=30, max_size=60),
        st.lists(st.floats(), min_size=1, max_size=40)),  # waveforms (NaN, inf included)
    max_leaves=200)


def _nulled(value):
    """``value`` with every NaN and infinity as None: what strict JSON holds."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list):
        return [_nulled(v) for v in value]
    if isinstance(value, dict):
        return {k: _nulled(v) for k, v in value.items()}
    return value


def _refuse(constant):
    raise ValueError(f"not JSON: {constant}")


def _strict_json_dumps(value) -> str:
    """json's own text of ``value``, with NaN and infinities written as null."""
    return json.dumps(_nulled(value), indent=2, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(value=JSON_VALUES)
def test_json_text_is_json_dumps_indent_2_with_null_for_nan(value) -> None:
    # --json wrote NaN and Infinity literals, which jq, JavaScript and most parsers refuse
    text = json_text(value)
    assert text == _strict_json_dumps(value)
    assert json.loads(text, parse_constant=_refuse) == json.loads(_strict_json_dumps(value))


def test_json_text_of_a_result_document() -> None:
    doc = {"vm": {str(k): 1.0 + k * 1e-9 for k in range(100)}, "converged": True,
           "va_deg": {str(k): -math.pi * k for k in range(100)}, "attempts": [{"a": 1}],
           "empty": {}, "none": [], "odd": {1: 2.0}, "bad": {str(k): math.inf for k in range(40)}}
    assert json_text(doc) == _strict_json_dumps(doc)


def test_json_text_of_a_transient_document() -> None:
    # waveforms take the one-join path; a waveform with a NaN and a list of ints do not
    doc = {"time": [k * 1e-9 for k in range(200)],
           "node_voltages": {f"n{k}": [math.sin(k * t) for t in range(50)] for k in range(40)},
           "odd": [[0.5, math.nan, 1.5], [1, 2], [1.0, 2], [-0.0, 1e300, 5e-324]]}
    assert json_text(doc) == _strict_json_dumps(doc)
    assert '"odd": [\n    [\n      0.5,\n      null,' in json_text(doc)
