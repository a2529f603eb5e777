"""``python -m scenarios run circuit``: the report of an operating point and of a sweep."""
from __future__ import annotations

import json

import numpy as np
import pytest

from scenarios._cli_report import SweepSpec
from scenarios.circuits import EXAMPLE, diode_ladder_spice, run

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")


def test_run_example_operating_point():
    report = run()
    assert report.converged and report.scenario == "circuit"
    assert report.json["node_voltages"]["2"] == pytest.approx(2.428562111977262, abs=1e-9)
    assert report.json["source_currents"]["V1"] == pytest.approx(-0.06144748251602973, abs=1e-12)
    assert "V(2)" in report.table() and json.loads(json.dumps(report.json)) == report.json
    from matplotlib.figure import Figure
    report.draw(Figure())


def test_run_sweep_and_dc_card(tmp_path):
    report = run(str(EXAMPLE), sweep=SweepSpec("V1", np.linspace(0.0, 9.157, 5)))
    points = report.json["sweep"]
    assert len(points) == 5 and report.converged
    assert points[-1]["node_voltages"]["2"] == pytest.approx(2.428562111977262, abs=1e-9)
    assert points[0]["node_voltages"]["2"] == 0.0
    deck = tmp_path / "ladder.cir"
    deck.write_text(diode_ladder_spice(6, sweep=(0.0, 2.0, 0.5)))
    dc = run(str(deck))
    assert [p["node_voltages"]["1"] for p in dc.json["sweep"]] == [0.0, 0.5, 1.0, 1.5, 2.0]
    from matplotlib.figure import Figure
    dc.draw(Figure())
