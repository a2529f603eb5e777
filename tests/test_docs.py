"""Every ```python block in README.md and docs/*.md runs, so the docs cannot rot.

Blocks of one file run in order in one fresh interpreter (later blocks may use earlier
definitions), with JAX's default configuration, as a reader would run them. Use a ```text
or ```console fence for anything that is not meant to run. Tables that mirror code (the
result codes) are checked against it too.
"""

import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```", re.S | re.M)
# The blocks only have to run: XLA's CPU backend compiles them without LLVM's optimization
# passes (the same programs, less optimized machine code): about 13% less CPU time for these
# compile-bound scripts (guide-solving.md 27%). The rest of the suite compiles as users do.
FAST_COMPILE = "--xla_backend_optimization_level=0"


def python_blocks(path: pathlib.Path) -> list[str]:
    return FENCE.findall(path.read_text())


@pytest.mark.parametrize("path", [p for p in DOCS if python_blocks(p)], ids=lambda p: p.name)
def test_doc_code_blocks_run(path, tmp_path):
    blocks = python_blocks(path)
    script = "\n\n".join(f"# --- block {i + 1} of {path.name}\n{b}" for i, b in enumerate(blocks))
    (tmp_path / "doc_script.py").write_text(script)
    proc = subprocess.run(
        [sys.executable, str(tmp_path / "doc_script.py")],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "MPLBACKEND": "Agg",
             "JAX_PLATFORMS": "cpu", "HOME": str(tmp_path), "XLA_FLAGS": FAST_COMPILE},
    )
    assert proc.returncode == 0, f"{path.name} code blocks failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


def test_failure_table_of_the_solving_guide_has_a_row_for_every_result_code():
    from solvers import RESULTS

    text = (ROOT / "docs" / "guide-solving.md").read_text()
    section = text.split("## When a solve fails", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \((\d+)\) \|[^|\n]+\|[^|\n]+\|", section, re.M)
    assert sorted(rows) == sorted((m.name, str(int(m))) for m in RESULTS), (
        "docs/guide-solving.md 'When a solve fails' must have one row per solvers.RESULTS "
        "member, as '| `name` (code) | cause | what to do |'")
