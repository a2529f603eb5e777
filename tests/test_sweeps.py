"""Sweeps in one process: results directories (resume, fingerprint refusal), per-process
results, progress meters, the jax.distributed helper's checks and the member split."""

import functools
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import simgraph as sg
import solvers

FIELDS = ("x", "result", "converged", "iterations", "num_fev", "num_jev", "residual_norm")


class Cubic(sg.ReffableTreeNode):
    c: float
    x: float = sg.unknown(default=1.0)

    def residual(self):
        return self.x ** 3 - self.c


def graph():
    return sg.Bundle(Cubic(jnp.asarray(2.0)), Cubic(jnp.asarray(3.0)))


VALUES = np.linspace(-8.0, 27.0, 11)
VALUES[4] = np.nan
NEWTON = solvers.Newton(max_steps=30)


class Meter:
    def __init__(self):
        self.counts = []

    def update(self, n):
        self.counts.append(n)


def sweep(path, values=VALUES, solver=NEWTON, chunk=3, **kw):
    return solvers.solve_batch(graph(), {"items[0].c": values}, solver, chunk_size=chunk,
                               results_dir=path, **kw)


def same(a, b):
    for f in FIELDS:
        np.testing.assert_array_equal(np.asarray(getattr(a.flat, f)),
                                      np.asarray(getattr(b.flat, f)), err_msg=f)


def test_results_directory_holds_chunks_and_a_restart_skips_them(tmp_path, caplog):
    plain = solvers.solve_batch(graph(), {"items[0].c": VALUES}, NEWTON, chunk_size=3)
    meter = Meter()
    first = sweep(tmp_path, progress=meter)
    same(first, plain)
    assert sum(meter.counts) == len(VALUES)
    assert int(first.result[4]) == int(solvers.RESULTS.nonfinite_input)
    assert bool(first.converged[np.arange(11) != 4].all())
    chunks = sorted(tmp_path.glob("chunk-*.npz"))
    assert len(chunks) == 4
    with np.load(chunks[1]) as saved:
        np.testing.assert_array_equal(saved["result"], np.asarray(plain.result[3:6]))
        np.testing.assert_array_equal(saved["iterations"], np.asarray(plain.iterations[3:6]))
        assert np.isnan(saved["param_0"][1]) and saved["param_0"][0] == VALUES[3]
    chunks[2].unlink()  # as if the sweep was killed while solving this chunk
    with caplog.at_level(logging.INFO, logger="solvers.sweep"):
        again = sweep(tmp_path)
    same(again, plain)
    assert "skipped 3 finished chunk(s) of 4" in caplog.text and "(chunks 0, 1, 3)" in caplog.text
    np.testing.assert_array_equal(again.params["Cubic"]["c"][:, 0], VALUES)


@pytest.mark.parametrize("change, part", [
    (dict(values=VALUES + 1.0), "swept parameters"),
    (dict(solver=solvers.Newton(max_steps=31)), "solver"),
    (dict(chunk=4), "chunk_size"),
    (dict(values=VALUES[:10]), "size"),
])
def test_a_results_directory_of_another_sweep_is_refused(tmp_path, change, part):
    sweep(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(solvers.SweepMismatchError) as err:
        sweep(tmp_path, **change)
    assert part in str(err.value) and str(tmp_path) in str(err.value)
    assert "new (or empty) results directory" in str(err.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


class Scaled(sg.ReffableTreeNode):
    c: float
    other: Cubic
    mode: str = sg.static(default="plain")
    x: float = sg.unknown(default=1.0)

    def residual(self):
        scale = 2.0 if self.mode == "double" else 1.0
        return self.x - scale * self.c - self.other.x


@pytest.mark.parametrize("change", ["static", "reference"])
def test_a_sweep_of_another_model_structure_is_refused(tmp_path, change):
    # A static field or a reference changes the model but none of the node paths: the
    # second sweep returned the first one's results from the directory.
    def model(mode="plain", swap=False):
        a, b = Cubic(jnp.asarray(1.0)), Cubic(jnp.asarray(8.0))
        return sg.Bundle(a, b, Scaled(jnp.asarray(1.0), b if swap else a, mode=mode))

    run = lambda g: solvers.solve_batch(g, {"items[2].c": VALUES[:4]}, NEWTON,  # noqa: E731
                                        chunk_size=2, results_dir=tmp_path)
    run(model())
    with pytest.raises(solvers.SweepMismatchError, match="structure differs"):
        run(model(mode="double") if change == "static" else model(swap=True))


class Lawful(sg.ReffableTreeNode):
    c: float
    law: object = sg.static(default=None)
    x: float = sg.unknown(default=1.0)

    def residual(self):
        return self.x - self.law(self.c)


def _run_in(tmp_path, g):
    return solvers.solve_batch(g, {".c": VALUES[:4]}, NEWTON, chunk_size=2, results_dir=tmp_path)


def test_a_static_function_that_computes_otherwise_is_another_model(tmp_path):
    # Two lambdas had one fingerprint (their reprs differ only by address): the second
    # sweep returned the first one's x = c instead of x = 2 c.
    first = _run_in(tmp_path, Lawful(jnp.asarray(1.0), law=lambda c: c))
    np.testing.assert_allclose(first.x[:, 0], VALUES[:4])
    with pytest.raises(solvers.SweepMismatchError, match="structure differs"):
        _run_in(tmp_path, Lawful(jnp.asarray(1.0), law=lambda c: 2.0 * c))
    k = 3.0
    again = _run_in(tmp_path, Lawful(jnp.asarray(1.0), law=lambda c: c))  # same code: resumes
    np.testing.assert_allclose(again.x[:, 0], VALUES[:4])
    with pytest.raises(solvers.SweepMismatchError, match="structure differs"):
        _run_in(tmp_path, Lawful(jnp.asarray(1.0), law=lambda c: k * c))  # another closure


def _scaled(c, k):
    return k * c


def test_statics_read_by_value_partials_arrays_and_objects(tmp_path):
    """A partial's keywords, an array's middle, an object's attributes are part of the
    fingerprint (they all read alike: 'functools.partial(dict())', an 8-digit repr, an
    address); what cannot be read counts by its identity, so it never resumes elsewhere."""
    from solvers.lowering._canonical import canonical

    _run_in(tmp_path, Lawful(jnp.asarray(1.0), law=functools.partial(_scaled, k=1.0)))
    with pytest.raises(solvers.SweepMismatchError, match="structure differs"):
        _run_in(tmp_path, Lawful(jnp.asarray(1.0), law=functools.partial(_scaled, k=2.0)))
    table = np.linspace(0.0, 1.0, 5000)
    nudged = table.copy()
    nudged[2500] += 1e-12
    assert canonical(table) != canonical(nudged) and canonical(table) == canonical(table.copy())

    class Holder:
        def __init__(self, k):
            self.k = k

    assert canonical(Holder(1.0)) == canonical(Holder(1.0)) != canonical(Holder(2.0))
    assert "in process" in canonical([].append)  # a built-in method: its identity


def _element(scale: float):
    """An element class named alike each time, whose residual's code depends on ``scale``."""
    if scale == 1.0:
        def residual(self):
            return self.x - self.c
    else:
        def residual(self):
            return self.x - 2.0 * self.c
    return type("Edited", (sg.ReffableTreeNode,), {
        "__annotations__": {"c": float, "x": float}, "x": sg.unknown(default=1.0),
        "residual": residual, "__module__": __name__, "__qualname__": "Edited"})


def test_an_element_whose_method_was_edited_is_another_model(tmp_path):
    # Only the class's name and fields entered the fingerprint: an edited residual resumed
    # from the old results.
    _run_in(tmp_path, _element(1.0)(jnp.asarray(1.0)))
    with pytest.raises(solvers.SweepMismatchError, match="element code differs"):
        _run_in(tmp_path, _element(2.0)(jnp.asarray(1.0)))


def test_a_truncated_chunk_is_solved_again(tmp_path):
    first = sweep(tmp_path)
    chunks = sorted(tmp_path.glob("chunk-*.npz"))
    chunks[1].write_bytes(chunks[1].read_bytes()[:50])  # zipfile.BadZipFile on resume
    chunks[2].write_bytes(b"")  # EOFError
    same(sweep(tmp_path), first)


_RESUME = """
import sys, jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
import simgraph as sg, solvers

class Tagged(sg.ReffableTreeNode):
    c: jax.Array
    tags: frozenset = sg.static(default=frozenset())
    x: jax.Array = sg.unknown(default=1.0)

    def residual(self):
        return self.x - self.c

graph = Tagged(jnp.asarray(1.0), tags=frozenset({"alpha", "beta", "gamma", "delta"}))
solvers.solve_batch(graph, {".c": jnp.arange(4.0)}, chunk_size=2, results_dir=sys.argv[1])
"""


def test_a_sweep_resumes_in_a_process_with_another_hash_seed(tmp_path):
    # A frozenset static's repr follows the hash seed: the fingerprint must not.
    root = Path(__file__).resolve().parents[1]
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(root), JAX_PLATFORMS="cpu")
        done = subprocess.run([sys.executable, "-c", _RESUME, str(tmp_path)], cwd=root, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]


def test_unreadable_manifest_is_refused(tmp_path):
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(solvers.SweepMismatchError, match="manifest"):
        sweep(tmp_path)
    file = tmp_path / "file"
    file.write_text("")
    with pytest.raises(solvers.SweepMismatchError, match="is a file"):
        sweep(file)


def test_manifest_says_what_the_sweep_is(tmp_path):
    sweep(tmp_path)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["size"] == 11 and manifest["chunk_size"] == 3
    assert set(manifest["fingerprint"]) == {"structure", "element code", "base parameters",
                                            "swept parameters", "start", "solver"}
    assert manifest["about"] == {"parameters": ["items[0].c"]}


def test_per_process_results_in_one_process_are_all_members():
    mine = solvers.solve_batch(graph(), {"items[0].c": VALUES}, NEWTON, chunk_size=3,
                               gather=False)
    assert solvers.process_members(11, 3) == range(11)
    ok = np.arange(11) != 4
    np.testing.assert_allclose(np.asarray(mine.x[ok, 0]), np.cbrt(VALUES[ok]), rtol=1e-10)
    assert int(mine.result[4]) == int(solvers.RESULTS.nonfinite_input)


@settings(max_examples=60, deadline=None)
@given(size=st.integers(1, 500), chunk=st.integers(1, 64), processes=st.integers(1, 9))
def test_processes_own_contiguous_runs_of_chunks_covering_the_batch(size, chunk, processes):
    ranges = [solvers.process_members(size, chunk, p, processes) for p in range(processes)]
    assert [i for r in ranges for i in r] == list(range(size))
    starts = [r.start for r in ranges if r]
    assert all(s % min(chunk, size) == 0 for s in starts)
    counts = [len(r) for r in ranges]
    assert max(counts) - min(counts) <= min(chunk, size)


@pytest.mark.parametrize("env, message", [
    ({"SIMGRAPH_COORDINATOR": "localhost"}, "must be HOST:PORT"),
    ({"SIMGRAPH_COORDINATOR": "127.0.0.1:1234"}, "needs the process count"),
    ({"SIMGRAPH_COORDINATOR": "127.0.0.1:1234", "SIMGRAPH_NUM_PROCESSES": "two",
      "SIMGRAPH_PROCESS_ID": "0"}, "SIMGRAPH_NUM_PROCESSES"),
    ({"SIMGRAPH_COORDINATOR": "127.0.0.1:1234", "SIMGRAPH_NUM_PROCESSES": "2",
      "SIMGRAPH_PROCESS_ID": "2"}, "outside 0..1"),
])
def test_initialize_distributed_checks_its_settings_first(monkeypatch, env, message):
    """Bad settings raise naming the variable, before jax.distributed is started."""
    for name in ("SIMGRAPH_COORDINATOR", "SIMGRAPH_NUM_PROCESSES", "SIMGRAPH_PROCESS_ID"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=message):
        solvers.initialize_distributed()


def test_sweep_options_inside_a_transform_are_refused(tmp_path):
    import jax

    def swept(values):
        return solvers.solve_batch(graph(), {"items[0].c": values}, NEWTON,
                                   results_dir=tmp_path).x

    with pytest.raises(ValueError, match="outside jit"):
        jax.jit(swept)(jnp.asarray(VALUES))
    assert not any(tmp_path.iterdir())


class Bowl(sg.ReffableTreeNode):
    """x^2 + c = 0: no root for c > 0, where Newton fails and Default's fallbacks run."""

    c: float
    x: float = sg.unknown(default=1.0)

    def residual(self):
        return self.x ** 2 + self.c


def test_chunks_are_solved_without_a_collective_unless_a_meter_counts(tmp_path, monkeypatch):
    """Each process solves its chunks on its own devices: without a progress meter no chunk
    (Default's fallback stages for failing members included) waits for another process."""
    from solvers.batch import _sweep, _sweep_step

    calls, stages = [], []
    real, solve = _sweep.all_counts, _sweep_step.ChunkSolver._solve
    monkeypatch.setattr(_sweep, "all_counts", lambda value: (calls.append(value), real(value))[1])
    monkeypatch.setattr(_sweep_step.ChunkSolver, "_solve", lambda self, method, *a: (
        stages.append(type(method).__name__), solve(self, method, *a))[1])
    bowl, values = Bowl(jnp.asarray(0.0)), {"c": np.asarray([-4.0, 2.0, -9.0, -1.0, 3.0])}
    quiet = solvers.solve_batch(bowl, values, chunk_size=3, progress=False,
                                results_dir=tmp_path / "quiet")
    np.testing.assert_allclose(np.abs(quiet.x[[0, 2, 3], 0]), [2.0, 3.0, 1.0], rtol=1e-10)
    assert list(np.asarray(quiet.converged)) == [True, False, True, True, False]
    # one collective before any chunk (every process agrees that none refused a chunk), none
    # while solving
    assert calls == [0] and stages.count("Newton") == 2 and len(stages) == 4  # two fallbacks
    counted = solvers.solve_batch(bowl, values, chunk_size=3, progress=Meter(),
                                  results_dir=tmp_path / "counted")
    same(counted, quiet)
    # the quiet sweep's one; then the agreement, the count before the steps, the step
    # count, one a chunk
    assert calls == [0] + [0, 0, 2, 3, 5]


def test_a_short_last_chunk_compiles_no_program_of_its_own(tmp_path, caplog):
    """Every chunk of a sweep is padded to the chunk size, as in one process: the short last
    chunk runs on the program the full chunks compiled."""
    import jax

    jax.clear_caches()
    with jax.log_compiles(), caplog.at_level(logging.WARNING):
        short = sweep(tmp_path, values=np.linspace(2.0, 9.0, 7))  # chunks 3, 3, 1
    solves = [m for m in caplog.messages if m.startswith("Compiling jit(_solve_batched)")]
    assert len(solves) == 1, solves
    np.testing.assert_allclose(short.system[0].x, np.cbrt(np.linspace(2.0, 9.0, 7)), rtol=1e-10)


def test_processes_agree_whether_to_count_progress(monkeypatch):
    """Counting is a collective at every step: a process with progress=False (its stderr
    not a terminal, in a CLI run) counts along with one that shows a meter, never alone."""
    from solvers.batch import _sweep

    monkeypatch.setattr(_sweep.jax, "process_count", lambda: 2)
    for others, mine, counts in ((1, False, True), (0, False, False), (0, Meter(), True)):
        monkeypatch.setattr(_sweep, "all_counts", lambda v, o=others: np.asarray([v, o]))
        assert _sweep._counting(mine) is counts


def test_a_process_part_of_a_sweep_names_members_by_their_number_in_the_batch(monkeypatch):
    """gather=False on process 1 of 2 keeps members 6 to 10: its messages said "member 2"
    for member 8 of the batch; they name member 8 (and its row here), indices stay rows."""
    import jax
    from solvers.batch import _sweep

    monkeypatch.setattr(jax, "process_count", lambda: 2)
    monkeypatch.setattr(jax, "process_index", lambda: 1)
    monkeypatch.setattr(_sweep, "all_counts", lambda v: np.asarray([v, v]))
    values = np.linspace(1.0, 11.0, 11)
    values[8] = np.nan
    mine = solvers.solve_batch(graph(), {"items[0].c": values}, NEWTON, chunk_size=3,
                               gather=False, progress=False)
    assert solvers.process_members(11, 3) == range(6, 11) and mine.first_member == 6
    np.testing.assert_allclose(np.asarray(mine.x[[0, 1, 3, 4], 0]), np.cbrt(values[[6, 7, 9, 10]]))
    assert mine.worst_index() == 2 and mine.flat.first_member == 6
    assert mine.message(2).startswith("member 8 (row 2 here): nonfinite_input")
    assert "5 member(s) (members 6 to 10 of the batch)" in mine.summary()
    with pytest.raises(solvers.SolveError, match=r"1 of 5 members \(members 6 to 10 of the "
                       r"batch\) failed; member 8 \(row 2 here\)") as err:
        solvers.solve_batch(graph(), {"items[0].c": values}, NEWTON, chunk_size=3,
                            gather=False, progress=False, throw=True)
    assert err.value.index == 2
    again = jax.tree_util.tree_map(lambda a: a, mine)  # a pytree keeps the numbering
    assert again.first_member == 6 and "member 8 (row 2 here)" in again.summary()
    pytest.importorskip("pandas")
    assert list(mine.to_frame().columns) == ["owner", 6, 7, 8, 9, 10]
    assert sorted(set(mine.to_frame(long=True)["member"])) == [6, 7, 8, 9, 10]
    monkeypatch.setattr(jax, "process_index", lambda: 0)  # process 0's part: a part too
    first = solvers.solve_batch(graph(), {"items[0].c": values}, NEWTON, chunk_size=3,
                                gather=False, progress=False)
    assert first.first_member == 0 and "(members 0 to 5 of the batch)" in first.summary()
    monkeypatch.undo()  # one process: a whole solution
    whole = solvers.solve_batch(graph(), {"items[0].c": values}, NEWTON, progress=False)
    assert whole.first_member is None and "of the batch" not in whole.summary()
