"""docs/api.md documents every public name of simgraph and solvers, and is current."""

import pathlib
import subprocess
import sys

import simgraph
import solvers

ROOT = pathlib.Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api.md"


def _public(module):
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, v in vars(module).items()
                 if not n.startswith("_") and type(v).__name__ != "module"]
    return names


def test_every_public_name_has_an_entry():
    text = API.read_text()
    missing = [f"{m.__name__}.{n}" for m in (simgraph, solvers) for n in _public(m)
               if f"### `{m.__name__}.{n}`" not in text]
    assert not missing, f"docs/api.md lacks {missing}: run python docs/_gen_api.py"


def test_api_reference_is_current():
    proc = subprocess.run([sys.executable, str(ROOT / "docs" / "_gen_api.py"), "--check"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "JAX_PLATFORMS": "cpu"})
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_docs_are_linked_from_the_readme():
    readme = (ROOT / "README.md").read_text()
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert f"docs/{page.name}" in readme, f"README.md does not link docs/{page.name}"
