"""The benchmark's 70 000-bus stand-in: tied copies of a MATPOWER case solve to the original's
answer in every copy (relative to the copy's own slack bus), through our reader."""

import pathlib

import pytest

from benchmarks import _tiled_grid
from scenarios.powerflow import build_powerflow, read_matpower

DATA = pathlib.Path(__file__).parent / "data" / "acpf"


@pytest.mark.parametrize("name", ["case9", "case30"])
def test_every_tied_copy_has_the_original_solution(name, tmp_path):
    source = DATA / f"{name}.m"
    tiled_info = _tiled_grid.tile(source, 3, tmp_path / "tiled.m")
    single_case, tiled_case = read_matpower(source), read_matpower(tmp_path / "tiled.m")
    assert tiled_info.buses == 3 * len(single_case.buses) == len(tiled_case.buses)
    assert sum(b.type == "slack" for b in tiled_case.buses) == 1  # copies' slacks are PV
    single, tiled = build_powerflow(single_case).solve(), build_powerflow(tiled_case).solve()
    assert single.converged and tiled.converged
    offset, slack = tiled_info.offset, tiled_info.slack
    for c in range(3):
        shift = tiled.bus(slack + c * offset).va_deg - single.bus(slack).va_deg
        for b in single_case.buses:
            copy = tiled.bus(b.id + c * offset)
            assert copy.vm == pytest.approx(single.bus(b.id).vm, abs=1e-9)
            assert copy.va_deg - shift == pytest.approx(single.bus(b.id).va_deg, abs=1e-7)
