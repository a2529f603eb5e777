"""Import layering, read from the source (ast): simgraph <- solvers <- scenarios; benchmarks
may import everything; nothing imports scenarios or benchmarks; packages use each other's
public API only; file readers never import JAX."""
from __future__ import annotations

import ast
import collections
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("simgraph", "solvers", "scenarios", "benchmarks")
#: What each package may import of ours (besides itself).
ALLOWED = {"simgraph": set(), "solvers": {"simgraph"}, "scenarios": {"simgraph", "solvers"},
           "benchmarks": {"simgraph", "solvers", "scenarios"}}
#: Packages whose private modules (``pkg._x``) another package may use (benchmarks measure
#: internals, so they may).
PRIVATE_OK = {"benchmarks"}
#: Known private imports still to remove (none: solvers reads simgraph through sg.structure).
KNOWN_PRIVATE: set[tuple[str, str]] = set()
#: File -> frozen JAX-free data: these modules (and what they import of ours) never import JAX.
READERS = (
    "scenarios/circuits/_spice_reader.py", "scenarios/powerflow/_matpower.py",
    "scenarios/powerflow/_case_json.py", "scenarios/water/_inp.py",
    "scenarios/truss/_reader.py", "scenarios/thermal/_reader.py",
    "scenarios/equations/_reader.py",
)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(source: str, module: str, is_package: bool = False) -> list[str]:
    """Absolute names of every module ``source`` imports (relative imports resolved;
    ``from pkg import name`` yields ``pkg.name``, which is a module or an attribute)."""
    base = module.split(".") if is_package else module.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            stem = base[:len(base) - node.level + 1] if node.level else []
            mod = ".".join(stem + ([node.module] if node.module else []))
            found += [mod] + [f"{mod}.{alias.name}" for alias in node.names]
    return found


def violations(source: str, module: str, is_package: bool = False) -> set[tuple[str, str]]:
    """(imported name, what is wrong) for each upward or private cross-package import."""
    own = module.split(".")[0]
    out = set()
    for name in imports(source, module, is_package):
        parts = name.split(".")
        top = parts[0]
        if top not in PACKAGES or top == own:
            continue
        if top not in ALLOWED[own]:
            out.add((name, f"{own} must not import {top}"))
        elif own not in PRIVATE_OK and any(p.startswith("_") for p in parts[1:]):
            first = next(i for i, p in enumerate(parts) if i and p.startswith("_"))
            out.add((".".join(parts[:first + 1]), f"{own} uses {top}'s private module"))
    return out


def package_files():
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))


def test_the_checker_finds_upward_and_private_imports():
    assert violations("import solvers", "simgraph._x") == {("solvers", "simgraph must not import solvers")}
    assert violations("from scenarios import circuits", "solvers._x") == {
        ("scenarios", "solvers must not import scenarios"),
        ("scenarios.circuits", "solvers must not import scenarios")}
    assert ("benchmarks", "scenarios must not import benchmarks") in violations(
        "def f():\n    import benchmarks\n", "scenarios.circuits._run")
    assert violations("from solvers.linear._sparse import SparseLU", "scenarios.water._x") == {
        ("solvers.linear._sparse", "scenarios uses solvers's private module")}
    assert violations("from simgraph import _walk", "solvers._x") == {
        ("simgraph._walk", "solvers uses simgraph's private module")}
    assert not violations("from ..solvers import solve", "scenarios.water._x")  # scenarios.solvers
    assert not violations("from solvers.linear._sparse import SparseLU", "benchmarks.x")
    assert not violations("import solvers\nfrom simgraph import ReffableTreeNode", "scenarios._x")


def test_packages_import_downward_and_publicly_only():
    found = set()
    for path in package_files():
        rel = path.relative_to(ROOT).as_posix()
        for name, why in violations(path.read_text(), module_name(path), path.name == "__init__.py"):
            found.add((rel, name, why))
    known = {(rel, name) for rel, name, why in found if (rel, name) in KNOWN_PRIVATE}
    new = sorted(f"{rel}: imports {name} ({why})" for rel, name, why in found
                 if (rel, name) not in KNOWN_PRIVATE)
    assert not new, "layering violations:\n" + "\n".join(new)
    stale = KNOWN_PRIVATE - known
    assert not stale, f"remove these fixed entries from KNOWN_PRIVATE: {sorted(stale)}"


def _own_imports(rel: str) -> list[str]:
    path = ROOT / rel
    return imports(path.read_text(), module_name(path), path.name == "__init__.py")


def _module_file(name: str) -> Path | None:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py") if path.with_suffix(".py").is_file() else None


@pytest.mark.parametrize("reader", READERS)
def test_readers_do_not_import_jax(reader):
    """The reader and every module of ours it imports (not the package ``__init__``s)."""
    seen, todo = set(), [reader]
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        seen.add(rel)
        for name in _own_imports(rel):
            assert name.split(".")[0] not in ("jax", "jaxlib", "jaxopt", "solvers", "simgraph"), (
                f"{rel} imports {name}: readers turn files into JAX-free data")
            found = _module_file(name)
            if found is not None:
                todo.append(found.relative_to(ROOT).as_posix())
    assert len(seen) >= 1


@pytest.mark.parametrize("domain, reader, data_file", [
    ("truss", "read_truss_data", "truss/von_mises.json"),
    ("thermal", "read_thermal_data", "thermal/shielded_plates.json"),
    ("equations", "read_equations_data", "equations/shared_slopes.json"),
])
def test_readers_give_frozen_plain_data(domain, reader, data_file):
    import dataclasses
    import importlib

    module = importlib.import_module(f"scenarios.{domain}")
    data = getattr(module, reader)(ROOT / "scenarios" / "data" / data_file)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(data, dataclasses.fields(data)[0].name, ())
    hash(data)  # tuples of plain numbers and names all the way down
    read = getattr(module, f"read_{domain}")(ROOT / "scenarios" / "data" / data_file)
    entries = data.entries()
    built = getattr(module, f"build_{domain}")(*([entries.pop("nodes")] if domain == "thermal"
                                                  else []), **entries)
    import jax

    same = jax.tree_util.tree_map(lambda a, b: bool(np.all(a == b)), read, built)
    assert jax.tree_util.tree_structure(read) == jax.tree_util.tree_structure(built)
    assert all(jax.tree_util.tree_leaves(same))


#: Where JAX's tracer type may be named: solvers asks "is this concrete?" in one place, and
#: simgraph's walk registers the types it reads as arrays (tracers are not jax.Array subclasses).
TRACER_USERS = {"solvers/_concrete.py", "simgraph/_walk.py"}


def test_no_jax_internals_and_tracer_checks_in_one_place():
    private, tracer = [], []
    for path in package_files():
        rel = path.relative_to(ROOT).as_posix()
        source = path.read_text()
        if any(name.startswith("jax._src") for name in imports(source, module_name(path))):
            private.append(rel)
        names = {node.attr for node in ast.walk(ast.parse(source))
                 if isinstance(node, ast.Attribute)}
        if "Tracer" in names and rel not in TRACER_USERS:
            tracer.append(rel)
    assert not private, f"these import JAX internals (jax._src): {private}"
    assert not tracer, f"ask solvers._concrete (or catch jax.errors) instead: {tracer}"


#: The pipeline inside solvers, lowest first: a module may import its own stage and the
#: stages below it, never one beside or above it. Base modules are the shared vocabulary
#: (result codes, the concrete-or-traced question); the entry modules tie the stages together
#: (``simulate`` starts from ``solve``'s operating point).
SOLVER_STAGES = {
    "solvers._result": 0, "solvers._concrete": 0, "solvers._compile_cache": 0,
    "solvers._inputs": 0,
    "solvers.linear": 1,
    "solvers.roots": 2, "solvers.lowering": 2,
    "solvers.transient": 3, "solvers.batch": 3,
    "solvers._graph": 4, "solvers._simulate": 5, "solvers": 6,
}


def solver_stage(name: str) -> str | None:
    """The stage a solvers module belongs to (its longest prefix in ``SOLVER_STAGES``)."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        if ".".join(parts[:cut]) in SOLVER_STAGES:
            return ".".join(parts[:cut])
    return None


def pipeline_violations(source: str, module: str, is_package: bool = False) -> set[str]:
    own = solver_stage(module)
    out = set()
    for name in imports(source, module, is_package):
        other = solver_stage(name) if name.startswith("solvers.") else None
        if other is None or other == own or own is None:
            continue
        if SOLVER_STAGES[other] >= SOLVER_STAGES[own]:
            out.add(f"{module} imports {name}: {other} is not below {own}")
    return out


def test_the_pipeline_checker_finds_sideways_and_upward_imports():
    assert pipeline_violations("from ..lowering._system import System", "solvers.roots._x")
    assert pipeline_violations("from .. import _graph", "solvers.linear._x")
    assert pipeline_violations("from ..roots._method import FlatProblem", "solvers.linear._x")
    assert not pipeline_violations("from ..linear._dense import DenseLU", "solvers.roots._x")
    assert not pipeline_violations("from .._result import RESULTS", "solvers.linear._x")
    assert not pipeline_violations("from ._newton import Newton", "solvers.roots._x")


def test_solvers_stages_import_downward_only():
    found = set()
    for path in sorted((ROOT / "solvers").rglob("*.py")):
        found |= pipeline_violations(path.read_text(), module_name(path),
                                     path.name == "__init__.py")
    assert solver_stage("solvers.lowering._system") == "solvers.lowering"
    assert not found, "solvers pipeline violations:\n" + "\n".join(sorted(found))


def test_architecture_doc_names_every_module_of_simgraph_and_solvers():
    """A newcomer reads the architecture from the tree and docs/architecture.md: a module
    added without a line there is a part of the pipeline nobody can find. Each is named as
    ``_name.py``; a name that several packages use, with its folder (``roots/_solution.py``)."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    modules = [p for package in ("simgraph", "solvers") for p in (ROOT / package).rglob("*.py")
               if p.stem not in ("__init__", "__main__")]
    assert len(modules) > 50
    names = collections.Counter(p.name for p in modules)

    def named(p: Path) -> bool:
        name = p.name if names[p.name] == 1 else f"{p.parent.name}/{p.name}"
        return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text) is not None

    missing = [str(p.relative_to(ROOT)) for p in modules if not named(p)]
    assert not missing, f"docs/architecture.md does not name: {missing}"
