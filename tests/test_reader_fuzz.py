"""Fuzzed EPANET, MATPOWER and SPICE files: a reader either returns its data or raises
FormatError naming the file, never another exception."""
from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from scenarios.circuits import read_netlist
from scenarios.powerflow import read_matpower
from scenarios.water import read_inp
from scenarios._errors import FormatError

DATA = Path(__file__).resolve().parent.parent / "scenarios" / "data"
READERS = {
    "water/Net1.inp": read_inp,
    "powerflow/case9.m": read_matpower,
    "circuits/ladder_rd_5.cir": read_netlist,
}
TOKENS = st.sampled_from(['"', "1e400", "-1e400", "nan", "inf", "0", "-1", "[", "]", "[PIPES",
                          "[END]", ";", "%", "'", "(", ")", "=", "mpc.bus = [", "];", "x", "",
                          "1e-400", "9" * 400, "D(IS=", ".model", ".end", "\t"])


def _mutate(text: str, data) -> str:
    lines = text.splitlines()
    for _ in range(data.draw(st.integers(1, 4), label="edits")):
        k = data.draw(st.integers(0, len(lines) - 1), label="line")
        words = lines[k].split()
        action = data.draw(st.sampled_from(["replace", "insert", "drop", "duplicate"]), label="do")
        if action == "drop":
            del lines[k]
        elif action == "duplicate":
            lines.insert(k, lines[k])
        elif action == "insert" or not words:
            lines.insert(k, data.draw(TOKENS, label="new line"))
        else:
            words[data.draw(st.integers(0, len(words) - 1), label="word")] = data.draw(TOKENS)
            lines[k] = " ".join(words)
        if not lines:
            break
    return "\n".join(lines) + "\n"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), which=st.sampled_from(sorted(READERS)))
def test_fuzzed_files_parse_or_raise_format_error(tmp_path, data, which):
    path = tmp_path / Path(which).name
    path.write_text(_mutate((DATA / which).read_text(), data))
    try:
        parsed = READERS[which](path)
    except FormatError as err:
        assert str(err).startswith(str(path)), err
        return
    assert parsed is not None


INP_TOKENS = st.sampled_from(["1e308", "-1e308", "AT", "TIME", "CLOCKTIME", "IF", "NODE", "ABOVE",
                              "BELOW", "OPEN", "CLOSED", "CV", "HEAD", "POWER", "SPEED", "PATTERN",
                              "AM", "PM", "12:00", "1:2:3:4", "DAYS", "[TIMES]", "[CONTROLS]",
                              "[CURVES]", "[STATUS]", "Duration", "Pressure", "PSI", "Units", "SI",
                              "10", "11", "9", "1", "0", "-1", "x", "nan"])


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_fuzzed_inp_keywords_parse_or_raise_format_error(data):
    """EPANET keywords and numbers in odd places (a [TIMES] or control time of 1e308 hours
    overflowed int(), a pump curve at 1e308 its fit, with OverflowError)."""
    lines = (DATA / "water/Net1.inp").read_text().splitlines()
    sections = ("[PUMPS]", "[STATUS]", "[CURVES]", "[CONTROLS]", "[TIMES]", "[OPTIONS]")
    where = []
    for i, line in enumerate(lines):  # the lines of the sections that take keywords
        keep = line.startswith(sections) or (where and where[-1] == i - 1 and line[:1] != "[")
        where += [i] if keep else []
    for _ in range(data.draw(st.integers(1, 4), label="edits")):
        k = data.draw(st.sampled_from(where), label="line")
        new = " ".join(data.draw(st.lists(INP_TOKENS, min_size=1, max_size=6), label="words"))
        if data.draw(st.booleans(), label="insert"):
            lines.insert(k, new)
        else:
            lines[k] += " " + new
    try:
        read_inp("\n".join(lines) + "\n")
    except FormatError as err:
        assert str(err).startswith("<string>:"), err
