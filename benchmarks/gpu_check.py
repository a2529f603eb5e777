"""Checks and timings for a machine with an accelerator (issues 13 and 17), in one run.

* ``host_callbacks``: the default path of a single solve, a batch, a transient and a power
  flow, compiled for the machine's backend; counts host callbacks in the optimized HLO (on an
  accelerator every count must be 0: no crossing to the host per Newton iteration) and
  says which linear solver the default picked.
* ``circuit``: ``circuit_batch`` at B = 10 000 (10- and 100-node ladders) against the hand
  Newtons, optimistix and jaxopt on the same device.
* ``latency``: ``latency.latency_rows`` and ``batch_rows`` (compile counts).
* ``transient``: ``transient.batch_row``: 10 000 half-wave rectifier transients in one call;
  on an accelerator also in CPU-sized chunks of 1024, and 100 000 of them.
* ``grids``: case_ACTIVSg2000 single solve and a 100-member load sweep, when the case is
  found.
* ``large``: one jitted solve of the k = 100 resistor/diode grid (~30 000 unknowns).
* ``wide``: ``solve_batch`` of 100 000 10-node ladders in its default chunks (one pass on
  an accelerator) and in chunks of 16 384, against the hand Newtons vmapped over all.
* ``leaves``: ``jit(solve(graph))`` on the ladders with the graph's Python-float leaves
  (copied to the device at every call), with its leaves on the device
  (``jax.device_put(graph)``), returning ``x`` instead of the graph, and on a ``System``.

Each section's rows go to ``OUT/gpu_check.json`` as soon as they exist, so a run cut short
keeps what it finished. ``--data DIR``: where ``transient/`` (deck and ngspice reference of
``half_wave``) and ``matpower/`` (``case_ACTIVSg2000.m``) are, when ``../shared`` is not.

Run: ``python -m benchmarks.gpu_check --out OUT [--quick] [--only SECTION ...]``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import traceback
from pathlib import Path

import jax
import numpy as np

SECTIONS = ("host_callbacks", "circuit", "latency", "transient", "grids", "large", "wide",
            "leaves")


def _callbacks(fn, *args) -> int:
    """Host callbacks (custom calls whose target names a callback) in the optimized HLO of
    ``jax.jit(fn)(*args)`` for this backend."""
    text = jax.jit(fn).lower(*args).compile().as_text()
    return len(re.findall(r'custom_call_target="[^"]*[Cc]allback[^"]*"', text))


def _linear_name(method) -> str:
    chosen = getattr(method, "linear_solver", None)
    chosen = getattr(chosen, "choice", chosen)
    return type(chosen).__name__ if chosen is not None else type(method).__name__


def host_callbacks(quick: bool, data: Path | None) -> list[dict]:
    import solvers
    from scenarios.circuits import build_circuit, diode_ladder_netlist, grid_netlist, source_path

    rows = []
    for label, netlist in (("diode ladder 100 nodes", diode_ladder_netlist(100, tight=False)),
                           ("diode grid k=10" if quick else "diode grid k=30",
                            grid_netlist(10 if quick else 30))):
        system = solvers.System.build(build_circuit(netlist))
        method = solvers.default_method(system)
        count = _callbacks(lambda s: solvers.solve(s, method).x, system)
        sol = solvers.solve(system, method)
        rows.append({"case": label, "call": "solve", "unknowns": system.n,
                     "linear_solver": _linear_name(method), "callbacks": count,
                     "converged": bool(sol.converged)})
    circuit = build_circuit(diode_ladder_netlist(100, tight=False))
    system = solvers.System.build(circuit)
    batch = 1000
    method = solvers.default_method(system, batch_size=batch)
    volts = jax.numpy.linspace(0.5, 5.0, batch)
    count = _callbacks(jax.vmap(lambda v: solvers.solve(system, method).x), volts)
    sol = solvers.solve_batch(circuit, {source_path(circuit, "V1"): volts}, method,
                              progress=False)
    rows.append({"case": "diode ladder 100 nodes", "call": f"solve_batch B={batch}",
                 "unknowns": system.n, "linear_solver": _linear_name(method),
                 "callbacks": count, "converged": f"{int(np.sum(sol.converged))}/{batch}"})
    rows.append(_transient_callbacks(data))
    return rows


def _transient_callbacks(data: Path | None) -> dict:
    import solvers
    from scenarios.circuits import build_circuit, read_netlist

    from . import transient

    deck, _ = transient._reference("half_wave")
    netlist = read_netlist(deck)
    tran = netlist.analyses[0]
    system = solvers.System.build(build_circuit(netlist, transient=tran))
    grid = np.asarray(tran.times())
    count = _callbacks(lambda s: solvers.simulate(s, grid, t0=0.0).x, system)
    sol = solvers.simulate(system, grid, t0=0.0)
    return {"case": "half_wave.cir", "call": "simulate", "unknowns": system.n,
            "linear_solver": "-", "callbacks": count, "converged": bool(sol.converged)}


def circuit(quick: bool, data: Path | None) -> list[dict]:
    from . import circuit_batch

    return circuit_batch.run(nodes=(10, 100), batches=(100,) if quick else (10_000,),
                             repeats=3, scipy_sample=20 if quick else 100, budget=20.0)


def latency(quick: bool, data: Path | None) -> list[dict]:
    from . import latency as lat

    cases = [("ladder", 10)] if quick else [("pair", 2), ("ladder", 10), ("ladder", 100)]
    rows = [row for case, n in cases for row in lat.latency_rows(case, n, 3 if quick else 7,
                                                           fresh_child=False)]
    return rows + [{"case": "batch_recompiles", **row}
                   for row in lat.batch_rows(200 if quick else 1000)]


def transient(quick: bool, data: Path | None) -> list[dict]:
    from . import transient as tr

    if quick:
        return [tr.batch_row(100, 1)]
    rows = [tr.batch_row(10_000, 2)]
    if jax.default_backend() != "cpu":  # one wide pass (the default there) against CPU's chunks
        rows += [tr.batch_row(10_000, 2, chunk_size=1024), tr.batch_row(100_000, 2)]
    return rows


def grids(quick: bool, data: Path | None) -> list[dict]:
    from . import power_grids as pg

    if not (pg.SHARED / "matpower" / "case_ACTIVSg2000.m").exists():
        return [{"case": "case_ACTIVSg2000", "note": "skipped: case file not found"}]
    from scenarios.powerflow import build_powerflow, read_matpower

    case = "case_ACTIVSg2000"
    model = build_powerflow(read_matpower(pg.SHARED / "matpower" / f"{case}.m"))
    start = time.perf_counter()
    result = model.solve()
    first = time.perf_counter() - start
    dvm, dva = pg.deviations(case, result.to_json())
    rows = [{"case": case, "first_s": first, **pg.in_process(case, 3),
             "max_dVm": dvm, "max_dVa_deg": dva, "start": result.start}]
    # 100 members' dense Jacobians (31 GB) are over SparseDenseLU's share of an H100, and
    # the matrix-free fallback stalls on power-flow Jacobians: 20 members there
    on_cpu = jax.default_backend() == "cpu"
    rows.append(pg.sweep_row(case, 100 if on_cpu and not quick else 20, cli=False))
    return rows


def large(quick: bool, data: Path | None) -> list[dict]:
    """One solve of the k x k resistor/diode grid (k = 100: about 30 000 unknowns)."""
    import solvers
    from scenarios.circuits import build_circuit, grid_netlist

    k = 20 if quick else 100
    system = solvers.System.build(build_circuit(grid_netlist(k)))
    method = solvers.default_method(system)
    solve = jax.jit(lambda s: solvers.solve(s, method))
    start = time.perf_counter()
    sol = jax.block_until_ready(solve(system))
    first = time.perf_counter() - start
    times = []
    for _ in range(3):
        start = time.perf_counter()
        jax.block_until_ready(solve(system))
        times.append(time.perf_counter() - start)
    return [{"case": f"diode grid k={k}", "unknowns": system.n,
             "linear_solver": _linear_name(method), "first_s": first,
             "warm_s": float(np.median(times)), "converged": bool(sol.converged),
             "iterations": int(sol.iterations), "residual": float(sol.residual_norm)}]


def wide(quick: bool, data: Path | None) -> list[dict]:
    """10-node ladders, B = 100 000: chunking against one pass and the hand Newtons."""
    import jax.numpy as jnp
    import solvers
    from scenarios.circuits import build_circuit, diode_ladder_netlist, source_path

    from . import _circuit_peers as peers, circuit_batch as cb
    from ._timing import block, interleaved_medians

    batch = 2_000 if quick else 100_000
    volts = np.linspace(0.5, 5.0, batch)
    circuit = build_circuit(diode_ladder_netlist(10, tight=False))
    system = solvers.System.build(circuit)
    path, values = source_path(circuit, "V1"), jnp.asarray(volts)
    method = solvers.default_method(system, batch_size=batch, atol=cb.ATOL, rtol=cb.RTOL)
    ours = lambda chunk: lambda: block(solvers.solve_batch(  # noqa: E731
        system, {path: values}, method, progress=False, chunk_size=chunk).x)
    ladder = peers.Ladder.of(10)
    fns = {"default chunks": ours(None), "chunks of 16 384": ours(16_384)}
    for name in ("hand Newton", "hand tridiag"):
        fns[name] = cb._jax_call(cb.PEERS[name](ladder, cb.ATOL, cb.RTOL), volts)
    warm = interleaved_medians(fns, repeats=5)
    return [{"case": "10-node ladder", "B": batch, "call": name, "time_s": t,
             "solves_per_s": batch / t, "hand_dense_vs_this": warm["hand Newton"] / t,
             "linear_solver": _linear_name(method)} for name, t in warm.items()]


def leaves(quick: bool, data: Path | None) -> list[dict]:
    """What the graph's leaves cost at the boundary of ``jit(solve(graph))``."""
    import solvers

    from . import _circuit_peers as peers, latency as lat
    from ._timing import block, interleaved_medians

    rows = []
    for n in (10,) if quick else (10, 100):
        c = lat._Case("ladder", n)
        system = solvers.System.build(c.graph)
        method = solvers.default_method(system, atol=lat.ATOL, rtol=lat.RTOL)
        on_device = jax.device_put(c.graph)
        to_graph = jax.jit(lambda g: solvers.solve(g, method).system)
        to_x = jax.jit(lambda g: solvers.solve(g, method).x)
        hand = jax.jit(peers.dense_newton(c.f, lat.ATOL, lat.RTOL, 100, c.limit))
        fns = {"hand Newton (jit)": lambda: hand(c.x0, c.args),
               "graph -> graph, Python-float leaves": lambda: to_graph(c.graph),
               "graph -> graph, leaves on the device": lambda: to_graph(on_device),
               "graph -> x, Python-float leaves": lambda: to_x(c.graph),
               "graph -> x, leaves on the device": lambda: to_x(on_device),
               "System -> x": lambda: to_x(system)}
        warm = interleaved_medians({k: (lambda f=f: block(f())) for k, f in fns.items()},
                                   repeats=5 if quick else 15)
        hand_s = warm["hand Newton (jit)"]
        rows += [{"case": c.label, "leaves": len(jax.tree_util.tree_leaves(c.graph)),
                  "call": name, "warm_us": t * 1e6, "vs_hand": t / hand_s}
                 for name, t in warm.items()]
    return rows


def _point_data(data: Path | None) -> None:
    """Point the transient and grid benchmarks at ``data`` where ``../shared`` is missing."""
    if data is None:
        return
    from . import power_grids, transient as tr

    if (data / "transient").is_dir():
        tr.SHARED = data / "transient"
    if (data / "matpower").is_dir():
        power_grids.SHARED = data


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", nargs="+", choices=SECTIONS, default=SECTIONS)
    args = parser.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    _point_data(args.data)
    args.out.mkdir(parents=True, exist_ok=True)
    report = {"backend": jax.default_backend(), "devices": [str(d) for d in jax.devices()],
              "jax": jax.__version__, "sections": {}}
    failed = False
    for name in args.only:
        start = time.perf_counter()
        print(f"[gpu_check] {name} ...", flush=True)
        try:
            rows = globals()[name](args.quick, args.data)
        except Exception:  # noqa: BLE001 - report it, run the other sections
            rows, failed = [{"error": traceback.format_exc()[-2000:]}], True
        report["sections"][name] = {"seconds": time.perf_counter() - start, "rows": rows}
        (args.out / "gpu_check.json").write_text(json.dumps(report, indent=1, default=str))
        for row in rows:
            print({k: (round(v, 5) if isinstance(v, float) else v) for k, v in row.items()},
                  flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
