"""Throughput of a sweep over several local JAX processes (``jax.distributed``, gloo).

The 10-node diode ladder of the ``circuit`` section (``diode_ladder_netlist(10)``), swept
over M source voltages (0.5 ... 5 V) with ``solvers.solve_batch`` at its defaults (method,
chunks of at most 16 384 members, equal so that no chunk is padded), results gathered on
every process. Each process is
pinned to one core (``os.sched_setaffinity``; round robin when there are more processes
than cores), so the 1-process row is the single-process single-thread baseline. Every
configuration is started fresh (one command per process on 127.0.0.1, as on several hosts),
compiles on a first sweep of one chunk per process, then times the full sweep (median of
repeats, from a barrier to the gathered result). ``solves_per_s`` = M / wall time;
``speedup`` = over the 1-process row; ``efficiency`` = speedup / min(processes, cores).
``results`` = ``gathered`` (every member on every process, ``solve_batch``'s default) or
``per process`` (``gather=False``: each process keeps its own members, as a resumable sweep
writing results files would). ``cpu_s`` = CPU seconds of all processes in the timed sweep
(median of repeats, summed);
``cpu_efficiency`` = the 1-process row's cpu_s / this row's: the share of the work that is
the solve itself (1: no cost for splitting, communication and gathering). On a machine shared
with other jobs the wall-clock columns depend on how much of the cores the processes get;
the CPU columns do not (with N free cores the speed-up is about N x cpu_efficiency).
Run: ``python -m benchmarks.distributed_sweep [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ("members", "processes", "cores", "results", "wall_s", "solves_per_s", "speedup",
           "efficiency", "cpu_s", "cpu_efficiency", "converged")
NODES = 10
CHUNK = 16384  # solve_batch's default members per chunk
KEY = ".vsources['V1'].value"


def run(members: int = 1_000_000, processes=(1, 2, 4), repeats: int = 3,
        timeout: float = 1800.0, per_process=(2,)) -> list[dict]:
    """One row per process count with results gathered, and one more per count in
    ``per_process`` with results kept per process; the first row is the baseline."""
    cores = len(os.sched_getaffinity(0))
    configs = [(count, True) for count in processes]
    configs += [(count, False) for count in per_process if count in processes and count > 1]
    rows = []
    for count, gather in configs:
        result = _launch(count, members, repeats, timeout, gather)
        rows.append({"members": members, "processes": count, "cores": min(count, cores),
                     "results": "gathered" if gather else "per process", **result})
    base, base_cpu = rows[0]["solves_per_s"], rows[0]["cpu_s"]
    for row in rows:
        row["speedup"] = row["solves_per_s"] / base
        row["efficiency"] = row["speedup"] / row["cores"]
        row["cpu_efficiency"] = base_cpu / row["cpu_s"]
    return rows


def _launch(count: int, members: int, repeats: int, timeout: float, gather: bool) -> dict:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for pid in range(count):
        env = dict(os.environ, SIMGRAPH_COORDINATOR=f"127.0.0.1:{port}",
                   SIMGRAPH_NUM_PROCESSES=str(count), SIMGRAPH_PROCESS_ID=str(pid),
                   PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "benchmarks.distributed_sweep", "--worker", str(members),
             str(repeats), str(int(gather))], cwd=ROOT, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True))
    deadline = time.monotonic() + timeout
    try:
        outs = [p.communicate(timeout=max(1.0, deadline - time.monotonic())) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    if any(p.returncode for p in procs):
        raise RuntimeError(f"a sweep process failed: {outs[0][1][-2000:]}")
    return json.loads(outs[0][0].strip().splitlines()[-1])


def worker(members: int, repeats: int, gather: int = 1) -> None:
    """One process of a configuration: pin, join, compile, time; process 0 prints JSON."""
    pid, count = int(os.environ["SIMGRAPH_PROCESS_ID"]), int(os.environ["SIMGRAPH_NUM_PROCESSES"])
    cores = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cores[pid % len(cores)]})
    import jax
    import numpy as np
    jax.config.update("jax_enable_x64", True)
    import solvers
    from jax.experimental import multihost_utils
    from scenarios.circuits import build_circuit, diode_ladder_netlist
    if count > 1:
        solvers.initialize_distributed()
    system = solvers.System.build(build_circuit(diode_ladder_netlist(NODES, tight=False)))
    volts = np.linspace(0.5, 5.0, members)
    steps = -(-members // (count * CHUNK))
    chunk = -(-members // (count * steps))  # equal chunks: no padded last chunk
    solvers.solve_batch(system, {KEY: volts[: chunk * count]}, chunk_size=chunk, progress=False,
                        gather=bool(gather))
    times, cpu = [], []
    for _ in range(repeats):
        if count > 1:
            multihost_utils.sync_global_devices("sweep")
        start, start_cpu = time.perf_counter(), time.process_time()
        sol = solvers.solve_batch(system, {KEY: volts}, chunk_size=chunk, progress=False,
                                  gather=bool(gather))
        jax.block_until_ready(sol.flat)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    cpu_all = np.asarray(multihost_utils.process_allgather(np.asarray([statistics.median(cpu)]))
                         if count > 1 else [statistics.median(cpu)])
    wall = statistics.median(times)
    converged = _converged(sol, count, gather)  # a collective: every process calls it
    if pid == 0:
        print(json.dumps({"wall_s": wall, "solves_per_s": members / wall,
                          "cpu_s": float(cpu_all.sum()),
                          "converged": converged}), flush=True)


def _converged(sol, count: int, gather: int) -> int:
    """Converged members of the whole sweep (summed over processes when kept per process)."""
    import numpy as np
    from jax.experimental import multihost_utils
    mine = int(np.sum(np.asarray(sol.converged)))
    if gather or count == 1:
        return mine
    return int(np.sum(multihost_utils.process_allgather(np.asarray([mine]))))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--worker", nargs=3, type=int, metavar=("MEMBERS", "REPEATS", "GATHER"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(*args.worker)
    rows = run(10_000, (1, 2), repeats=2) if args.quick else run()
    for row in rows:
        print(row)


if __name__ == "__main__":
    main()
