"""Files and state written earlier, read back: a sweep's results directory (chunks of another
sweep, damaged chunks, a manifest written meanwhile or nested too deep, a chunk path that is a
directory), the JSON inputs of the scenarios (nesting and integers Python refuses to read),
and sg.load of a path that cannot be opened. Each is read correctly or refused with the
project's own error."""

import copy
import json
import shutil
import socket
import zipfile
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import simgraph as sg
import solvers
from scenarios._errors import FormatError
from scenarios.equations import read_equations_data
from scenarios.powerflow import read_case_json
from scenarios.thermal import read_thermal_data
from scenarios.truss import read_truss_data
from solvers.batch._sweep_store import SweepStore
from graph_models import Shared
from test_graph_file_safety import _paths as _json_paths  # every key path of a JSON value
from test_sweeps import FIELDS, NEWTON, VALUES, same, sweep

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished sweep's results directory and its solution."""
    path = tmp_path_factory.mktemp("finished")
    return path, sweep(path)


def _copy(finished, tmp_path) -> Path:
    shutil.copytree(finished[0], tmp_path / "run")
    return tmp_path / "run"


def _chunks(path: Path) -> list:
    return sorted(path.glob("chunk-*.npz"))


@pytest.mark.parametrize("other", [dict(values=VALUES + 1.0),
                                   dict(solver=solvers.Newton(max_steps=2))])
def test_chunks_of_another_sweep_are_refused_not_mixed_in(finished, tmp_path, other):
    """A chunk copied from another sweep (or left by one that shared the directory) was read
    as this sweep's: the other sweep's solution came back silently."""
    run = _copy(finished, tmp_path)
    sweep(tmp_path / "other", **other)
    foreign = _chunks(tmp_path / "other")[1]
    shutil.copy(foreign, run / foreign.name)
    with pytest.raises(solvers.SweepMismatchError, match=rf"{foreign.name}.*another sweep"):
        sweep(run)


def _edit_field(name, value):
    def edit(arrays):
        arrays[name] = value
    return edit


def _huge_header(path: Path, shape: str = "(100000000000000, 1)") -> None:
    """Rewrite the chunk with x's .npy header declaring ``shape`` (364 TiB)."""
    with zipfile.ZipFile(path) as z:
        entries = {n: z.read(n) for n in z.namelist()}
    raw = entries["x.npy"]
    header = raw[10:raw.index(b"\n") + 1].decode("latin1")
    start, stop = header.index("'shape': ") + 9, header.index("), ") + 1
    edited = (header[:start] + shape + header[stop:-1]).ljust(len(header) - 1)
    entries["x.npy"] = raw[:10] + (edited + "\n").encode("latin1") + raw[10 + len(header):]
    with zipfile.ZipFile(path, "w") as z:
        for n, data in entries.items():
            z.writestr(n, data)


def test_a_chunk_another_process_refused_stops_this_one_too(finished, tmp_path, monkeypatch):
    """A foreign chunk is seen by the process that owns it only: that process raised and the
    others waited for it in their next collective until the runtime gave up (30 s, then an
    unrelated Gloo error). Now the processes agree first, and all raise our error."""
    from solvers.batch import _sweep

    monkeypatch.setattr(_sweep, "all_counts", lambda value: np.asarray([value, 1]))
    with pytest.raises(solvers.SweepMismatchError, match="another process of this sweep "
                       "refused a chunk in .*run.*its error names the file"):
        sweep(_copy(finished, tmp_path))


@pytest.mark.parametrize("damage", [
    _edit_field("x", np.float64(1.0)),              # TypeError: len() of unsized object
    _edit_field("x", np.zeros((3, 5))),             # ValueError from np.concatenate
    _edit_field("result", np.array(["a", "b", "c"])),  # TypeError from JAX
    _edit_field("converged", np.zeros(3, np.float32)),  # silently another dtype
    _edit_field("iterations", np.arange(4)),        # one member too many
    "huge",                                         # MemoryError
    "(100000000000000000000, 1)",                   # OverflowError: beyond a C long
], ids=["0-d", "columns", "text", "dtype", "length", "huge-header", "overflow-header"])
def test_a_damaged_chunk_is_solved_again(finished, tmp_path, damage):
    run = _copy(finished, tmp_path)
    chunk = _chunks(run)[1]
    if isinstance(damage, str):
        _huge_header(chunk, *([] if damage == "huge" else [damage]))
    else:
        with np.load(chunk) as saved:
            arrays = {k: saved[k] for k in saved.files}
        damage(arrays)
        np.savez(chunk, **arrays)
    again = sweep(run)
    same(again, finished[1])
    with np.load(chunk) as saved:  # written again, whole
        for f in FIELDS:
            np.testing.assert_array_equal(saved[f], np.asarray(getattr(finished[1].flat, f))[3:6])


def test_a_chunk_path_that_is_a_directory_is_named_before_solving(finished, tmp_path):
    """Such a chunk was solved, then its write failed with IsADirectoryError."""
    run = _copy(finished, tmp_path)
    chunk = _chunks(run)[1]
    chunk.unlink()
    chunk.mkdir()
    with pytest.raises(solvers.SweepMismatchError, match=rf"{chunk.name} is not a file.*remove"):
        sweep(run)


def test_a_manifest_nested_too_deep_is_refused(tmp_path):
    """json raised RecursionError."""
    (tmp_path / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(solvers.SweepMismatchError, match="not a readable sweep manifest"):
        sweep(tmp_path)


def test_a_manifest_written_meanwhile_is_checked_not_replaced(tmp_path, monkeypatch):
    """Two sweeps started together in one directory: both saw no manifest and the second
    replaced the first's, so their chunks mixed under one manifest."""
    prints = lambda part: {"solver": part}
    SweepStore(tmp_path, 6, 3, prints("a")).open()
    exists = Path.exists
    monkeypatch.setattr(Path, "exists", lambda p: p.name != "manifest.json" and exists(p))
    with pytest.raises(solvers.SweepMismatchError, match="solver differs"):
        SweepStore(tmp_path, 6, 3, prints("b")).open()
    SweepStore(tmp_path, 6, 3, prints("a")).open()  # the same sweep still resumes
    assert json.loads((tmp_path / "manifest.json").read_text())["fingerprint"] == prints("a")


_THERMAL = {"nodes": {"a": {"T0": 300.0}}}


@pytest.mark.parametrize("text, problem", [
    ("[" * 100_000 + "]" * 100_000, "nested"),                       # RecursionError
    ('{"base_mva": ' + "9" * 5000 + "}", "digits"),                  # ValueError
])
@pytest.mark.parametrize("reader", ["case", "thermal"])
def test_json_inputs_python_cannot_read_are_format_errors(tmp_path, text, problem, reader):
    path = tmp_path / "input.json"
    path.write_text(text + "\n")
    read = read_case_json if reader == "case" else read_thermal_data
    with pytest.raises(FormatError, match=rf"^{path}.*{problem}"):
        read(path)


@pytest.mark.parametrize("value", ["false", 0, None, [1]])
def test_a_case_branch_flag_that_is_not_true_or_false_is_refused(tmp_path, value):
    """"is_transformer": "false" was read as True (bool of a non-empty string)."""
    case = json.loads((DATA / "acpf" / "case9.json").read_text())
    case["branches"][2]["is_transformer"] = value
    path = tmp_path / "case.json"
    path.write_text(json.dumps(case))
    with pytest.raises(FormatError, match=r"\.branches\[2\]\.is_transformer: expected true or "
                                          "false"):
        read_case_json(path)


def test_load_of_a_path_that_cannot_be_opened_is_a_graph_file_error(tmp_path):
    """A path that exists but cannot be opened (here a socket) raised a bare OSError."""
    path = tmp_path / "g.npz"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        with pytest.raises(sg.GraphFileError, match=rf"^{path}: cannot be read"):
            sg.load(path)
    finally:
        server.close()
    path.unlink()
    sg.save(path, Shared(jnp.asarray(1.0)))
    assert float(sg.load(path).v) == 1.0


class _Cubic(sg.ReffableTreeNode):
    c: jnp.ndarray
    x: jnp.ndarray = sg.unknown(default=1.0)

    def residual(self):
        return self.x ** 3 - self.c


def test_a_resumed_sweep_with_the_default_method_of_a_sparse_sized_system(tmp_path):
    """Reading chunks back traced the whole Default method, which fails for a system big
    enough for its sparse LU (32 unknowns here): every sweep with a results directory
    crashed. It traces the stage that solves (Newton), and only once a chunk is found."""
    graph = sg.Bundle(*[_Cubic(jnp.asarray(2.0 + i)) for i in range(32)])
    values = {"items[0].c": np.asarray([1.0, 8.0, 27.0])}
    first = solvers.solve_batch(graph, values, chunk_size=2, results_dir=tmp_path)
    again = solvers.solve_batch(graph, values, chunk_size=2, results_dir=tmp_path)
    np.testing.assert_allclose(np.asarray(first.x)[:, 0], [1.0, 2.0, 3.0], rtol=1e-10)
    np.testing.assert_array_equal(np.asarray(again.x), np.asarray(first.x))


@pytest.mark.parametrize("where", ["", "missing/g.npz"])
def test_save_to_a_path_that_cannot_be_written_is_a_graph_file_error(tmp_path, where):
    """A directory (or a file in a missing directory) raised a bare IsADirectoryError or
    FileNotFoundError."""
    path = tmp_path / where
    with pytest.raises(sg.GraphFileError, match=rf"^{path}: cannot be written .*writable"):
        sg.save(path, Shared(jnp.asarray(1.0)))


_FUZZ = settings(max_examples=100, deadline=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture])


@_FUZZ
@given(data=st.data())
def test_fuzz_a_damaged_chunk_reads_back_whole_or_not_at_all(tmp_path, data):
    store = SweepStore(tmp_path, 6, 3, {"solver": "a"}).open()
    arrays = {"x": np.arange(6.0).reshape(3, 2), "result": np.zeros(3, np.int32)}
    store.save(0, 3, arrays)
    path = store.chunk_path(0, 3)
    raw = bytearray(path.read_bytes())
    if data.draw(st.booleans(), label="truncate"):
        raw = raw[: data.draw(st.integers(0, len(raw) - 1), label="cut")]
    else:
        for _ in range(data.draw(st.integers(1, 4), label="flips")):
            raw[data.draw(st.integers(0, len(raw) - 1), label="at")] ^= data.draw(
                st.integers(1, 255), label="mask")
    path.write_bytes(bytes(raw))
    loaded = store.load(0, 3)  # None: solved again; never another sweep's error
    if loaded is not None:
        assert set(loaded) == set(arrays)
        for name, value in arrays.items():
            np.testing.assert_array_equal(loaded[name], value)


_INPUTS = {"scenarios/data/thermal/shielded_plates.json": read_thermal_data,
           "scenarios/data/truss/von_mises.json": read_truss_data,
           "scenarios/data/equations/shared_slopes.json": read_equations_data,
           "tests/data/acpf/case9.json": read_case_json}
_VALUES = st.sampled_from([None, True, False, 0, -1, 2, 1.5, 1e308, 10 ** 400, "x", "PQ", [],
                           {}, [1.0, 2.0], [0.0] * 3, {"a": 1}, [[1]], 1e-320])


@_FUZZ
@given(data=st.data(), which=st.sampled_from(sorted(_INPUTS)))
def test_fuzz_edited_json_inputs_read_or_raise_format_error(tmp_path, data, which):
    doc = json.loads((Path(__file__).resolve().parents[1] / which).read_text())
    for _ in range(data.draw(st.integers(1, 3), label="edits")):
        where = data.draw(st.sampled_from(list(_json_paths(doc))[1:]), label="where")
        parent = doc
        for k in where[:-1]:
            parent = parent[k]
        if isinstance(parent, dict) and data.draw(st.booleans(), label="delete"):
            del parent[where[-1]]
        else:
            parent[where[-1]] = copy.deepcopy(data.draw(_VALUES, label="value"))  # not shared
    path = tmp_path / "input.json"
    path.write_text(json.dumps(doc))
    try:
        assert _INPUTS[which](path) is not None
    except FormatError as err:
        assert str(err).startswith(str(path)), err
