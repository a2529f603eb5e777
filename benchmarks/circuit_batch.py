"""Batched solves of a nonlinear DC circuit against scipy, optimistix, jaxopt and hand-written Newton.

The circuit is ``scenarios.circuits``' diode ladder (``diode_ladder_netlist``): a source ``V1``
drives node 1, series resistors (100 ohm) join nodes k and k+1, a SPICE diode (IS = 1e-14 A,
GMIN = 1e-12 S) goes from every node k >= 2 to ground. Modified nodal analysis: n node
voltages plus the source current, n + 1 unknowns, all starting at 0. Each batch member has
its own source voltage (B values evenly spaced in 0.5 ... 5 V).

* ``simgraph``: ``solvers.solve_batch(circuit, {".vsources['V1'].value": V}, method)`` on
  the domain's own element classes. ``method`` is what ``solve_batch`` picks by itself
  (``solvers.default_method`` for the batch size: the ``Default`` polyalgorithm with a
  dense or sparse LU chosen from the graph, no structure hint), at the circuit domain's
  tolerances (max|F| <= 1e-14 A or a 1e-12 relative step), default chunking. Also
  from a prebuilt ``System`` (the lowering reused).
* ``scipy root``: ``scipy.optimize.root(method="lm")`` with an analytic Jacobian, one
  member at a time in a Python loop (scipy's default ``hybr`` fails from 0 V on most
  members). For large B it solves an evenly spaced sample of the members and extrapolates
  (the table says so).
* ``optimistix``: ``optx.root_find(optx.Newton)`` under ``jax.vmap``, the same residual.
* ``jaxopt``: ``jaxopt.GaussNewton`` under ``jax.vmap``, the same residual.
* ``hand Newton``: a dense Newton in ``lax.while_loop`` with the diodes' ``pnjlim`` step
  limit and simgraph's stopping test, under ``jax.vmap`` (what one would write by hand for
  this circuit: the practical limit for a general dense method).
* ``hand tridiag``: the same Newton on the reduced ladder (V1 eliminated) with a tridiagonal
  solve: a structure-specific reference (issue 4's 10 000 solves/s target).

The JAX peers evaluate exactly the residual of the element classes (``diode_current`` and
``pnjlim`` are imported from ``scenarios.circuits.elements``); every row reports how many
members converged and the largest node-voltage difference from simgraph's answer.
Run: ``python -m benchmarks.circuit_batch [--quick]``.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

from . import _circuit_peers as peers
from ._timing import block

V_RANGE = (0.5, 5.0)
#: The circuit domain's tolerances (``scenarios.circuits.ATOL``/``RTOL``): max|F| <= 1e-14 A or a
#: Newton step below 1e-12 relative. A looser absolute residual test (1e-10 A) leaves far
#: ladder nodes, whose conductance is near GMIN at low source voltage, ~1e-5 V off.
ATOL, RTOL = 1e-14, 1e-12
#: Members per chunk of ``solve_batch`` (None: its default). Memory no longer needs a small
#: chunk: on CPU each chunk runs in cache-sized blocks of members (``solvers.batch._batch``).
CHUNK = None


def measure(fn, repeats: int, budget: float = 20.0, warmup: bool = True):
    """(median wall seconds, median CPU seconds, last result) of ``fn()``; fewer repeats once
    past ``budget`` seconds. CPU time (``time.process_time``) is steadier on a shared machine."""
    if warmup:
        fn()
    samples, cpu, spent, result = [], [], 0.0, None
    for _ in range(max(1, repeats)):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = fn()
        samples.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        spent += samples[-1]
        if spent > budget:
            break
    return float(np.median(samples)), float(np.median(cpu)), result


def simgraph_calls(n: int, volts: np.ndarray):
    """``solve_batch`` from the circuit graph (the ordinary path: lowering included) and from
    a prebuilt ``System``; plus ``answer(solution) -> (v[B, n], converged, iterations)``."""
    import solvers
    from scenarios.circuits import build_circuit, diode_ladder_netlist, source_path

    circuit = build_circuit(diode_ladder_netlist(n, tight=False))
    system = solvers.System.build(circuit)
    path, values = source_path(circuit, "V1"), jnp.asarray(volts)
    names = [str(k) for k in range(1, n + 1)]
    # what solve_batch picks by itself for this batch (no structure hint), at ATOL and RTOL
    method = solvers.default_method(system, batch_size=len(volts), atol=ATOL, rtol=RTOL)

    def solve(graph):
        return lambda: block(solvers.solve_batch(graph, {path: values}, method, progress=False,
                                                 chunk_size=CHUNK))

    def answer(sol):
        graph = sol.system
        v = np.stack([np.asarray(graph.nodes[name].v) for name in names], axis=-1)
        return v, np.asarray(sol.converged), np.asarray(sol.iterations)

    return {"simgraph": solve(circuit), "simgraph, System reused": solve(system)}, answer


def _sample(volts: np.ndarray, size: int) -> np.ndarray:
    if len(volts) <= size:
        return np.arange(len(volts))
    return np.linspace(0, len(volts) - 1, size).round().astype(int)


def _jax_call(solve_one, volts):
    fn = jax.jit(jax.vmap(solve_one))
    values = jnp.asarray(volts)
    return lambda: tuple(np.asarray(a) for a in block(fn(values)))


PEERS = {"optimistix": peers.optimistix_newton, "jaxopt": peers.jaxopt_gauss_newton,
         "hand Newton": peers.hand_newton, "hand tridiag": peers.hand_tridiagonal}
#: Peers ``main --skip`` leaves out.
SKIP: set = set()


def peer_calls(ladder: peers.Ladder, volts: np.ndarray) -> dict:
    """name -> call() returning (v[B, n], converged[B], iterations[B]), or a skip note."""
    calls = {} if "scipy root" in SKIP else {"scipy root": None}  # run() solves a sample only
    for name, make in PEERS.items():
        if name in SKIP:
            continue
        try:
            calls[name] = _jax_call(make(ladder, ATOL, RTOL), volts)
        except ImportError as err:
            calls[name] = f"skipped: {err.name or err} is not installed (pip install .[bench])"
    return calls


def _row(n, batch, name, seconds, count, answer, reference, rate_simgraph, note="", cpu=None):
    v, converged, iterations = answer
    rate = count / seconds
    index = _sample(reference, count) if reference is not None else None
    dv = None if reference is None else float(np.max(np.abs(v - reference[index])))
    return {"nodes": n, "B": batch, "method": name, "solves_per_s": rate, "time_s": batch / rate,
            "solves_per_cpu_s": None if not cpu else count / cpu,
            "simgraph_speedup": rate_simgraph / rate, "converged": f"{int(np.sum(converged))}/{count}",
            "max_iter": int(np.max(iterations)), "max_dv_vs_simgraph": dv, "note": note}


def run_case(n: int, batch: int, repeats: int = 3, scipy_sample: int = 300,
             budget: float = 20.0) -> list[dict]:
    """Rows of every method for one ladder size and batch size (simgraph first)."""
    ladder = peers.Ladder.of(n)
    volts = np.linspace(*V_RANGE, batch)
    ours, answer = simgraph_calls(n, volts)
    seconds, cpu, sol = measure(ours["simgraph"], repeats, budget)
    ref, rate = answer(sol), batch / seconds
    chunks = "" if CHUNK is None or batch <= CHUNK else f", chunks of {CHUNK}"
    rows = [_row(n, batch, "simgraph", seconds, batch, ref, None, rate,
                 f"solve_batch(graph, ...){chunks}", cpu)]
    seconds, cpu, sol = measure(ours["simgraph, System reused"], repeats, budget)
    rows.append(_row(n, batch, "simgraph, System reused", seconds, batch, answer(sol), ref[0], rate,
                     f"solve_batch(System.build(graph), ...){chunks}", cpu))
    for name, call in peer_calls(ladder, volts).items():
        if isinstance(call, str):
            rows.append({"nodes": n, "B": batch, "method": name, "note": call})
            continue
        count, note = batch, ""
        if call is None:  # scipy: a Python loop over an evenly spaced sample
            index = _sample(volts, scipy_sample)
            count = len(index)
            call = lambda sub=volts[index]: peers.scipy_loop(ladder, sub)  # noqa: E731
            note = "" if count == batch else f"{count} of {batch} members solved, time extrapolated"
        seconds, cpu, answer = measure(call, repeats, budget, warmup=name != "scipy root")
        rows.append(_row(n, batch, name, seconds, count, answer, ref[0], rate, note, cpu))
    return rows


def run(nodes=(10, 100), batches=(1, 100, 10_000), repeats: int = 3, scipy_sample: int = 300,
        budget: float = 20.0) -> list[dict]:
    """One row per (nodes, B, method). ``simgraph_speedup``: simgraph's solves/s over the row's."""
    return [row for n in nodes for batch in batches
            for row in run_case(n, batch, repeats, scipy_sample, budget)]


COLUMNS = ("nodes", "B", "method", "solves_per_s", "solves_per_cpu_s", "time_s",
           "simgraph_speedup", "converged",
           "max_iter", "max_dv_vs_simgraph", "note")


def format_rows(rows: list[dict]) -> str:
    def cell(v):
        return "-" if v is None else f"{v:.3g}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cell(r.get(c)) for c in COLUMNS) + " |" for r in rows]
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 nodes, B = 1 and 100")
    parser.add_argument("--nodes", type=int, nargs="+", help="ladder sizes (default 10 100)")
    parser.add_argument("--batches", type=int, nargs="+", help="batch sizes (default 1 100 10000)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip", nargs="+", default=(), choices=sorted(PEERS) + ["scipy root"],
                        help="peers not to run")
    args = parser.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    SKIP.update(args.skip)
    if args.quick:
        rows = run((10,), (1, 100), repeats=1, scipy_sample=20)
    else:
        rows = run(tuple(args.nodes or (10, 100)), tuple(args.batches or (1, 100, 10_000)),
                   repeats=args.repeats)
    print(format_rows(rows))


if __name__ == "__main__":
    main()
