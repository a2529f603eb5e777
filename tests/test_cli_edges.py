"""The CLI at its edges: every bad file or argument below exits 2 with one line naming the
file (and line), before any solving, and never a traceback."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from scenarios import _cli

DATA = Path(__file__).resolve().parent.parent / "scenarios" / "data"


def _edited(tmp_path: Path, shipped: str, name: str, old: str, new: str) -> str:
    text = (DATA / shipped).read_text()
    assert old in text
    path = tmp_path / name
    path.write_text(text.replace(old, new, 1))
    return str(path)


def _first_pipe_length_overflows(text: str) -> str:
    lines = text.splitlines()
    start = lines.index("[PIPES]")
    k = next(i for i in range(start + 1, len(lines)) if lines[i].strip() and lines[i][0] != ";")
    parts = lines[k].split()
    parts[3] = "1e400"
    lines[k] = "\t".join(parts)
    return "\n".join(lines)


def _no_reference_bus(text: str) -> str:
    return re.sub(r"(\n\s*1\s+)3(\s)", r"\g<1>2\2", text, count=1)


CASES = {
    "empty .inp": ("water", lambda p: _write(p, "empty.inp", ""), "empty.inp: the file defines no network"),
    "1e400 in .cir": ("circuit", lambda p: _edited(p, "circuits/ladder_rd_5.cir", "big.cir", "109.499", "1e400"),
                      "big.cir:3: number '1e400' for R1 resistance is out of range"),
    "1e400 in .inp": ("water", lambda p: _write(p, "big.inp", _first_pipe_length_overflows(
        (DATA / "water/Net1.inp").read_text())), "big.inp:28: length of pipe '10' 1e400 is out of range"),
    "1e400 in .m": ("powerflow", lambda p: _edited(p, "powerflow/case9.m", "big.m", "345", "1e400"),
                    "big.m:5: number 1e400 is out of range"),
    "[PIPES": ("water", lambda p: _edited(p, "water/Net1.inp", "open.inp", "[PIPES]", "[PIPES"),
               "open.inp:26: section header '[PIPES' has no closing ']'"),
    ".tran 1p 1": ("circuit", lambda p: _write(p, "fine.cir", "* rc\nV1 in 0 DC 1\nR1 in out 1k\n"
                                                  "C1 out 0 1u\n.tran 1p 1\n.end\n"),
                   "fine.cir:5: .tran: output every tstep 1e-12 s from 0 s to 1 s is 1e+12 intervals"),
    "no type 3 bus": ("powerflow", lambda p: _write(p, "noref.m", _no_reference_bus(
        (DATA / "powerflow/case9.m").read_text())), "noref.m:5: mpc.bus has no reference bus (type 3)"),
}


def _write(tmp_path: Path, name: str, text: str) -> str:
    (tmp_path / name).write_text(text)
    return str(tmp_path / name)


def _assert_one_line(code: int, err: str, fragment: str) -> None:
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), err
    assert fragment in lines[0] and "Traceback" not in err, lines[0]


@pytest.mark.parametrize("case", CASES)
def test_bad_files_exit_2_naming_file_and_line(capsys, tmp_path, case):
    scenario, make, fragment = CASES[case]
    code = _cli.main(["run", scenario, "--input", make(tmp_path)])
    _assert_one_line(code, capsys.readouterr().err, fragment)


def test_eps_of_a_file_without_duration_says_what_to_change_on_the_command_line(
        capsys, tmp_path) -> None:
    """It pointed a command-line user at build_water(network).solve() and duration=seconds."""
    path = _edited(tmp_path, "water/Net1.inp", "snap.inp", "24:00", "0:00")
    code = _cli.main(["run", "water", "--input", path, "--eps"])
    err = capsys.readouterr().err
    _assert_one_line(code, err, "has DURATION 0 in [TIMES]")
    assert "without --eps" in err and "build_water" not in err


@pytest.mark.parametrize("argv, fragment", [
    (["--sweep", "V1=0:9:1000000000000"], "COUNT 1000000000000 is more than the 10,000,000 points"),
    (["--json", "{missing}/x.json"], "the folder '{missing}' does not exist"),
    (["--plot", "{tmp}"], "is a folder; give a file name"),
    (["--plot", "{tmp}/x.txt"], "matplotlib cannot write '.txt' files; name the file with one "
                                "of"),
    (["--csv", "{file}"], "a file of that name exists; --csv takes a folder"),
])
def test_bad_arguments_are_refused_before_solving(capsys, monkeypatch, tmp_path, argv, fragment):
    monkeypatch.setattr(_cli, "SCENARIOS", {**_cli.SCENARIOS, "circuit": _NeverRun()})
    names = {"missing": str(tmp_path / "no" / "such"), "tmp": str(tmp_path),
             "file": str(tmp_path / "taken")}
    (tmp_path / "taken").write_text("")
    code = _cli.main(["run", "circuit"] + [a.format(**names) for a in argv])
    _assert_one_line(code, capsys.readouterr().err, fragment.format(**names))


class _NeverRun:
    name = "circuit"

    def run(self, *args, **kwargs):
        raise AssertionError("the scenario ran before its arguments were checked")

