"""Sweeps over several JAX processes (jax.distributed on 127.0.0.1, gloo collectives) and
resumable sweeps: results equal the single-process run member for member."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import solvers
from distributed_worker import CHUNK, FIELDS, FLAT_PARAMS, cases

ROOT = Path(__file__).resolve().parents[1]
WORKER = Path(__file__).resolve().parent / "distributed_worker.py"
TIMEOUT = 480  # seconds for one multi-process run (each process imports JAX and compiles)


@pytest.fixture(scope="module")
def references():
    """Every case solved by plain single-process ``solve_batch``."""
    out = {}
    for name, (system, values, solver) in cases(("circuit", "powerflow")).items():
        sol = solvers.solve_batch(system, values, solver, chunk_size=CHUNK)
        out[name] = {f: np.asarray(getattr(sol.flat, f)) for f in FIELDS}
    return out


@pytest.fixture(scope="module")
def compile_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("jax-cache")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(n, job, out, cache, results_dir=None):
    args = [str(WORKER), job, str(out)] + ([str(results_dir)] if results_dir else [])
    return _start(n, args, out, cache)


def _start(n, args, out, cache):
    """``n`` processes of ``python ARGS`` joined on a free port; output in out/log-PID.txt."""
    port = _free_port()
    procs = []
    for pid in range(n):
        env = dict(os.environ, SIMGRAPH_COORDINATOR=f"127.0.0.1:{port}",
                   SIMGRAPH_NUM_PROCESSES=str(n), SIMGRAPH_PROCESS_ID=str(pid),
                   PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu",
                   JAX_COMPILATION_CACHE_DIR=str(cache),
                   JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
        with open(Path(out) / f"log-{pid}.txt", "a") as log:
            procs.append(subprocess.Popen([sys.executable] + args, cwd=ROOT, env=env,
                                          stdout=log, stderr=subprocess.STDOUT))
    return procs


def _finish(procs, out, timeout=TIMEOUT):
    deadline = time.monotonic() + timeout
    try:
        codes = [p.wait(timeout=max(1.0, deadline - time.monotonic())) for p in procs]
    finally:
        _kill(procs)
    logs = [(Path(out) / f"log-{pid}.txt").read_text() for pid in range(len(procs))]
    assert codes == [0] * len(procs), "\n".join(logs)[-4000:]
    return logs


def _kill(procs):
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            p.wait()


def _assert_same(got, ref):
    """Member for member: codes, counts and flags exactly, unknowns to roundoff."""
    for f in FIELDS:
        if f in ("x", "residual_norm"):
            np.testing.assert_allclose(got[f], ref[f], rtol=1e-12, atol=1e-15, equal_nan=True)
        else:
            np.testing.assert_array_equal(got[f], ref[f], err_msg=f)


def _pause_and_kill(tmp_path, cache, results):
    """Start the chunked circuit sweep, kill both processes once 10 members are done."""
    procs = _launch(2, "pause", tmp_path, cache, results)
    log0 = tmp_path / "log-0.txt"
    deadline = time.monotonic() + TIMEOUT
    try:
        while "PAUSED" not in log0.read_text():
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs), \
                log0.read_text()[-3000:]
            time.sleep(0.2)
    finally:
        _kill(procs)


def test_two_processes_resume_a_killed_sweep_and_equal_one_process(tmp_path, references,
                                                                    compile_cache):
    """A chunked circuit sweep killed mid-way resumes (skipping its finished chunks); the
    circuit (a NaN member flagged, a failed member's code, Default's staged fallback in one
    process only) and a power flow equal one process's, gathered on both processes and
    kept per process; so does solve_flat_batch."""
    results = tmp_path / "results"
    _pause_and_kill(tmp_path, compile_cache, results)
    n_chunks = -(-len(references["circuit"]["result"]) // CHUNK)
    assert 0 < len(list(results.glob("chunk-*.npz"))) < n_chunks
    logs = _finish(_launch(2, "all", tmp_path, compile_cache, results), tmp_path)
    # process 0 paused after its second chunk; process 1, which waits for nobody between
    # chunks, may have saved its third before the kill
    assert "skipped 2 finished chunk(s)" in logs[0]
    assert re.search(r"skipped [23] finished chunk\(s\)", logs[1]), logs[1][-2000:]
    assert len(list(results.glob("chunk-*.npz"))) == n_chunks
    for name, ref in references.items():
        assert (ref["result"] != 0).any() and (ref["result"] == 0).any()
        for pid in range(2):
            _assert_same(np.load(tmp_path / f"{name}-{pid}.npz"), ref)
        local = [np.load(tmp_path / f"{name}-local-{pid}.npz") for pid in range(2)]
        members = np.concatenate([part["members"] for part in local])
        np.testing.assert_array_equal(members, np.arange(len(ref["result"])))
        assert 0 < len(local[0]["members"]) < len(members)
        for part in local:  # messages name members by their numbers in the batch
            _assert_numbered_globally(part)
        _assert_same({f: np.concatenate([part[f] for part in local]) for f in FIELDS}, ref)
    flat = solvers.solve_flat_batch(lambda x, p: x ** 2 - p, np.ones(1), FLAT_PARAMS,
                                    solver=solvers.Newton(), chunk_size=CHUNK)
    for pid in range(2):
        _assert_same(np.load(tmp_path / f"flat-{pid}.npz"),
                     {f: np.asarray(getattr(flat, f)) for f in FIELDS})
    assert list(np.asarray(flat.converged)) == [True, True, False, False, True, True, True]
    assert references["circuit"]["result"][5] == int(solvers.RESULTS.nonfinite_input)
    assert references["powerflow"]["result"][7] == int(solvers.RESULTS.nonfinite_input)


def _assert_numbered_globally(part):
    """A process's gather=False summary names its members by their numbers in the batch."""
    first, last = int(part["members"][0]), int(part["members"][-1])
    summary, failed = str(part["summary"]), part["result"] != 0
    assert f"(members {first} to {last} of the batch)" in summary, summary  # process 0 too
    if failed.any():
        norms = np.where(np.isfinite(part["residual_norm"]), part["residual_norm"], np.inf)
        row = int(np.argmax(np.where(failed, norms, -1.0)))
        assert f"worst: member {first + row} (row {row} here): " in summary, summary


def test_four_processes_equal_one_process(tmp_path, references, compile_cache):
    _finish(_launch(4, "circuit", tmp_path, compile_cache), tmp_path)
    for pid in range(4):
        _assert_same(np.load(tmp_path / f"circuit-{pid}.npz"), references["circuit"])


def test_cli_sweep_over_two_processes_prints_once_and_equals_one_process(tmp_path,
                                                                         compile_cache):
    from scenarios._cli import main
    sweep = ["run", "circuit", "--sweep", "V1=0:9.157:46"]
    assert main(sweep + ["--json", str(tmp_path / "one.json")]) == 0
    logs = _finish(_start(2, ["-m", "scenarios"] + sweep + [
        "--distributed", "--json", str(tmp_path / "two.json")], tmp_path, compile_cache),
        tmp_path)
    assert "wrote" in logs[0] and "wrote" not in logs[1] and "converged" not in logs[1]
    one, two = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("one", "two"))
    assert len(one["sweep"]) == 46
    _assert_close_documents(one, two)


def _assert_close_documents(a, b, where=""):
    """Equal JSON documents, floats to roundoff (other chunk shapes vectorize differently)."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            _assert_close_documents(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_close_documents(x, y, f"{where}[{i}]")
    elif isinstance(a, float):
        assert np.isclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True), (where, a, b)
    else:
        assert a == b, (where, a, b)
