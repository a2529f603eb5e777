"""One process of a multi-process sweep for tests/test_distributed.py.

Run as ``python tests/distributed_worker.py JOB OUT [RESULTS_DIR]`` (JOB: ``all``, the
circuit and the power flow, gathered and per process; ``circuit``; ``pause``, the circuit
stopped after 10 members) with
``SIMGRAPH_COORDINATOR``, ``SIMGRAPH_NUM_PROCESSES`` and ``SIMGRAPH_PROCESS_ID`` set: it
joins the run with ``solvers.initialize_distributed()``, sweeps the cases of JOB and writes
what it got to OUT/<case>-<process>.npz. `cases` also gives the test its references.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent / "data"
FIELDS = ("x", "result", "converged", "iterations", "num_fev", "num_jev", "residual_norm")
CHUNK = 4
#: solve_flat_batch's parameters: x**2 = p, a NaN member and a negative one (no real root).
FLAT_PARAMS = np.array([[4.0], [9.0], [np.nan], [-1.0], [16.0], [2.0], [25.0]])


def cases(names):
    """``{name: (system, values, solver)}``: a shipped circuit swept over its source with a
    NaN member and one Newton cannot solve (a 2-stage Default retries it, in one process's
    chunk only), and the 9-bus power flow over its load scale with a NaN member."""
    import solvers
    from scenarios import circuits, powerflow
    out = {}
    if "circuit" in names:
        netlist = circuits.read_netlist(DATA / "circuits" / "ladder_rd_5.cir")
        circuit = circuits.build_circuit(netlist)
        volts = np.linspace(0.0, 10.0, 22)
        volts[5], volts[17] = np.nan, 1e300
        newton = solvers.Newton(max_steps=40)
        method = solvers.Default(methods=(newton, solvers.Newton(max_steps=60)))
        out["circuit"] = (solvers.System.build(circuit),
                          {circuits.source_path(circuit, "V1"): volts}, method)
    if "powerflow" in names:
        model = powerflow.build_powerflow(powerflow.read_matpower(DATA / "acpf" / "case9.m"))
        scale = np.linspace(0.6, 1.4, 10)
        scale[7] = np.nan
        system = solvers.System.build(model.graph)
        out["powerflow"] = (system, {".loading.scale": scale},
                            powerflow.DEFAULT_METHOD(system))
    return out


class PauseAt:
    """A progress meter that stops the sweep (sleeps) once ``members`` are done."""

    def __init__(self, members: int):
        self.members, self.done = members, 0

    def update(self, n: int) -> None:
        self.done += n
        if self.done >= self.members:
            print(f"PAUSED at {self.done}", flush=True)
            time.sleep(600)


def main(job: str, out: str, results_dir: str | None = None) -> None:
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    import solvers
    pid, count = solvers.initialize_distributed()
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    names = ("circuit", "powerflow") if job == "all" else ("circuit",)
    for name, (system, values, solver) in cases(names).items():
        progress = PauseAt(10) if job == "pause" else False
        sol = solvers.solve_batch(system, values, solver, chunk_size=CHUNK, progress=progress,
                                  results_dir=results_dir if name == "circuit" else None)
        np.savez(Path(out) / f"{name}-{pid}.npz", **{f: getattr(sol.flat, f) for f in FIELDS})
        if job == "all":
            mine = solvers.solve_batch(system, values, solver, chunk_size=CHUNK, gather=False)
            members = solvers.process_members(len(next(iter(values.values()))), CHUNK)
            np.savez(Path(out) / f"{name}-local-{pid}.npz", members=np.asarray(members),
                     summary=np.asarray(mine.summary()),
                     **{f: getattr(mine.flat, f) for f in FIELDS})
    if job == "all":
        flat = solvers.solve_flat_batch(lambda x, p: x ** 2 - p, jnp.ones(1), FLAT_PARAMS,
                                        solver=solvers.Newton(), chunk_size=CHUNK)
        np.savez(Path(out) / f"flat-{pid}.npz", **{f: getattr(flat, f) for f in FIELDS})
    print(f"process {pid} of {count} done", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
