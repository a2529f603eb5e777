"""``python -m benchmarks --quick`` runs and produces every table (its timings are not checked).

It writes to a temporary directory (``--out``), never to docs/benchmarks.md.
"""

import importlib.util
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SECTIONS = ("dispatch", "circuit", "scale", "sparse", "robustness", "transient", "latency",
            "grids", "distributed")
OPTIONAL = {"sparse", "grids"}  # "Not measured" without its module or without ../shared


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    docs_file = ROOT / "docs" / "benchmarks.md"
    before = docs_file.stat().st_mtime_ns if docs_file.exists() else None
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "MPLBACKEND": "Agg",
             "JAX_PLATFORMS": "cpu", "HOME": str(out),
             "SIMGRAPH_ACPF_LARGE": str(out / "no-large-cases")},
    )
    assert proc.returncode == 0, f"benchmarks --quick failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    after = docs_file.stat().st_mtime_ns if docs_file.exists() else None
    assert before == after, "--out must leave docs/benchmarks.md alone"
    return out, (out / "benchmarks.md").read_text(), proc.stdout


def _sections(text: str) -> dict:
    """name -> body of each benchmark section (found by its ``_(name: N s, measured ...)_`` footer)."""
    parts = re.split(r"^## ", text, flags=re.M)[1:]
    found = {}
    for part in parts:
        match = re.search(r"_\((\w+): \d+ s, measured [\d :-]+\)_", part)
        if match:
            found[match.group(1)] = part
    return found


def test_every_benchmark_has_a_table(report):
    _, text, stdout = report
    sections = _sections(text)
    assert set(sections) == set(SECTIONS)
    for name, body in sections.items():
        assert "FAILED" not in body.splitlines()[0], body[:2000]
        if name in OPTIONAL and "Not measured" in body:
            continue
        assert re.search(r"^\|---\|", body, flags=re.M), f"section {name} has no table:\n{body[:1000]}"
    assert "Targets at a glance" in text and "Targets at a glance" in stdout


def test_report_names_machine_and_versions(report):
    _, text, _ = report
    for needle in ("**Machine:** CPU:", "cores:", "memory:", "python 3.", "jax ", "jaxlib ",
                   "numpy ", "scipy ", "jaxopt ", "optimistix ", "flax "):
        assert needle in text


def test_circuit_table_has_every_method(report):
    _, text, _ = report
    body = _sections(text)["circuit"]
    for method in ("simgraph", "scipy root", "optimistix", "jaxopt", "hand Newton"):
        assert f"| {method} |" in body


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="matplotlib not installed")
def test_plots_are_written_and_linked(report):
    out, text, _ = report
    for name in ("benchmarks_throughput.png", "benchmarks_scale.png"):
        assert (out / name).stat().st_size > 1000
        assert f"]({name})" in text
