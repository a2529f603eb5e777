"""Per-call latency of one solve: warm, eager, first call, repeated batches and the CLI (issue 13).

Problems: ``scenarios.circuits``' diode ladder (10 and 100 nodes, 0 V start, SPICE junction
limiting, circuit tolerances; see ``circuit_batch``) and the 2-equation linear system of the
getting-started guide (two ``m * x = c`` sharing one slope). Peers, each solving exactly
the same equations: a hand-written dense Newton in ``jax.jit`` with the same step limiting
(``_circuit_peers.dense_newton``), ``optimistix.root_find(optx.Newton)`` in ``jax.jit``, and
``scipy.optimize.root`` (``lm`` with the analytic Jacobian on the ladders, ``hybr`` on the
pair).

* ``latency`` rows: ``warm_us`` = median of repeated warm calls; ``first_s`` = the first call
  in this process (trace + compile + run; for simgraph ``solve(graph)``'s first call in a
  fresh process, compilation cache off; ``cached_first_s`` with JAX's persistent cache
  filled by an earlier process). ``vs_hand`` = warm time / the hand Newton's. The
  ``jit(solve(System...))`` rows split the ``jit(solve(graph))`` row: the graph's leaves
  going in and out (graph against System), and ``Default``'s fallback stages: on CPU the
  program holds Newton and calls back to the host for a fallback only when needed
  (``Default`` against ``Newton``, its first stage alone); "every stage compiled" is
  ``Default(traced_fallbacks="compiled")`` (as under ``vmap`` or on GPU), whose untaken
  stages cost at every call.
* ``large``: the 2000-node ladder solved once, eager ``solve(graph)`` against
  ``solve(System)`` (``graph_vs_system``) and against a SciPy sparse Newton
  (``scipy_vs_graph`` > 1: we are faster; ``_scale_peers.solve_scipy_lu``).
* ``batch_recompiles``: ``solve_batch`` on ``x**2 = p`` (B = 1000) called again with new
  values whose number of members without a root changes; XLA compilations counted with
  ``jax.monitoring``.
* ``cli``: ``python -m scenarios run circuit --json`` on the k x k resistor/diode grid,
  phase by phase in a child process (interpreter start is ``python -c pass``), without and
  with a compilation cache filled by an earlier process: ``compiling_s`` = XLA compilation
  (``jax.monitoring``), ``solving_s`` = a second, warm solve, ``tracing_s`` = the rest of
  the first solve (tracing, lowering to XLA, dispatch); ``cli_wall_s`` = the real command;
  ``ngspice_op_s``: ngspice's ``.op`` on the same deck in this run, where it is on PATH.
  The solve steps Newton from the host (the host LU between compiled F/J evaluations), so
  a filled cache holds its programs and ``compiling_s`` falls to reading them.

Run: ``python -m benchmarks.latency [--quick]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize

from . import _circuit_peers as peers
from ._timing import block, interleaved_medians

ROOT = Path(__file__).resolve().parents[1]
LATENCY_COLUMNS = ("case", "n", "method", "warm_us", "vs_hand", "first_s", "cached_first_s",
                   "converged")
BATCH_COLUMNS = ("call", "failing", "compilations", "time_s")
CLI_COLUMNS = ("k", "unknowns", "cache", "interpreter_s", "imports_s", "parsing_s",
               "building_s", "lowering_s", "tracing_s", "compiling_s", "solving_s", "writing_s",
               "total_s", "cli_wall_s", "ngspice_op_s", "ngspice_vs_cli")
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
ATOL, RTOL = 1e-14, 1e-12


def _child(code: str, *args: str, env: dict | None = None) -> dict:
    """Run ``code`` in a fresh interpreter at the repository root; its last stdout line is JSON."""
    full = dict(os.environ, **(env or {}))
    full["PYTHONPATH"] = os.pathsep.join([str(ROOT), full.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    out = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=full,
                         capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"child process failed: {out.stderr[-1500:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- the problems -------------------------------------------------------------------------

_PAIR_CODE = """
import jax, jax.numpy as jnp
import simgraph as sg

class GradientProvider(sg.ReffableTreeNode):
    value: jax.Array

class Equation(sg.ReffableTreeNode):
    constant: jax.Array
    gradient: GradientProvider
    x: jax.Array = sg.unknown(default=0.0)

    def residual(self):
        return self.gradient.value * self.x - self.constant

def make_graph():
    slope = GradientProvider(jnp.asarray(2.0))
    return sg.Bundle(Equation(jnp.asarray(1.0), slope), Equation(jnp.asarray(3.0), slope))
"""

_LADDER_CODE = """
from scenarios.circuits import build_circuit, diode_ladder_netlist

def make_graph():
    return build_circuit(diode_ladder_netlist({n}, tight=False))
"""


def _graph_code(case: str, n: int) -> str:
    return _PAIR_CODE if case == "pair" else _LADDER_CODE.format(n=n)


def _make_graph(case: str, n: int):
    scope: dict = {}
    exec(_graph_code(case, n), scope)  # noqa: S102 (our own fixed source, above)
    return scope["make_graph"]()


def _pair_residual(x, args):
    slope, constants = args
    return slope * x - constants


class _Case:
    """One problem: the graph, the flat residual, its start, args and step limit for peers."""

    def __init__(self, case: str, n: int):
        self.case, self.graph = case, _make_graph(case, n)
        if case == "pair":
            self.f, self.args, self.limit = _pair_residual, (2.0, jnp.asarray([1.0, 3.0])), None
            self.x0, self.n = jnp.zeros(2), 2
            self.scipy = lambda: scipy.optimize.root(
                lambda x: np.asarray(_pair_residual(x, (2.0, np.asarray([1.0, 3.0])))),
                np.zeros(2), method="hybr")
        else:
            ladder = peers.Ladder.of(n)
            self.f, self.args, self.limit = ladder.residual, 5.0, ladder.step_fraction
            self.x0, self.n = jnp.zeros(n + 1), n + 1
            self.scipy = lambda: scipy.optimize.root(
                ladder.np_residual, np.zeros(n + 1), args=(5.0,), jac=ladder.np_jacobian,
                method="lm", options={"xtol": 1e-12})
        self.label = "2 equations" if case == "pair" else f"{n}-node diode ladder"


def _first_call(fn, *args) -> float:
    start = time.perf_counter()
    block(fn(*args))
    return time.perf_counter() - start


def _peer_fns(c: _Case) -> dict:
    """name -> (jitted fn of no arguments' inputs, converged(result))."""
    hand = jax.jit(peers.dense_newton(c.f, ATOL, RTOL, 100, c.limit))
    fns = {"hand Newton (jit)": (lambda: hand(c.x0, c.args), lambda r: bool(r[1]))}
    try:
        import optimistix as optx
    except ImportError:
        return fns
    solver = optx.Newton(rtol=RTOL, atol=ATOL)
    optimistix = jax.jit(lambda x0, args: optx.root_find(c.f, solver, x0, args, max_steps=256,
                                                         throw=False))
    fns["optimistix Newton (jit)"] = (lambda: optimistix(c.x0, c.args),
                                      lambda r: bool(r.result == optx.RESULTS.successful))
    return fns


def _first_solve_in_child(case: str, n: int, cache: str | None) -> float:
    code = _graph_code(case, n) + (
        "\nimport json, sys, time\nimport jax\njax.config.update('jax_enable_x64', True)\n"
        "import solvers\n"
        "if sys.argv[1]: solvers.enable_compilation_cache(sys.argv[1])\n"
        "graph = make_graph()\nstart = time.perf_counter()\n"
        "jax.block_until_ready(solvers.solve(graph).x)\n"
        "print(json.dumps(time.perf_counter() - start))\n")
    return _child(code, cache or "")


def latency_rows(case: str, n: int, repeats: int = 7, fresh_child: bool = True,
                 every_stage: bool = True) -> list[dict]:
    """The ``latency`` table's rows of one problem; ``every_stage=False`` (quick mode) leaves
    out the row of ``Default(traced_fallbacks="compiled")``, whose compile is most of the
    section's time (tests/test_host_fallbacks.py covers that setting)."""
    import solvers

    c = _Case(case, n)
    method = solvers.default_method(solvers.System.build(c.graph), atol=ATOL, rtol=RTOL)
    system = solvers.System.build(c.graph)
    jitted = jax.jit(lambda g: solvers.solve(g, method).system)
    on_system = jax.jit(lambda s, m: solvers.solve(s, m).x, static_argnums=1)
    newton = method.plan(system.m, system.n)[0]  # Default's first stage alone
    every_stage_method = dataclasses.replace(method, traced_fallbacks="compiled")
    ours = {"simgraph jit(solve(graph))": (lambda: jitted(c.graph), None),
            "simgraph jit(solve(System))": (lambda: on_system(system, method), None),
            "simgraph jit(solve(System)), every stage compiled": (
                lambda: on_system(system, every_stage_method), None),
            "simgraph jit(solve(System, Newton))": (lambda: on_system(system, newton), None),
            "simgraph solve(graph)": (lambda: solvers.solve(c.graph, method).x, None),
            "simgraph solve(System)": (lambda: solvers.solve(system, method).x, None)}
    if not every_stage:
        del ours["simgraph jit(solve(System)), every stage compiled"]
    calls = {**_peer_fns(c), **ours}
    first = {name: _first_call(fn) for name, (fn, _) in calls.items()}
    warm = interleaved_medians({name: (lambda fn=fn: block(fn())) for name, (fn, _) in calls.items()},
                               repeats=repeats)
    warm["scipy.optimize.root"] = interleaved_medians({"s": c.scipy}, repeats=repeats)["s"]
    hand = warm["hand Newton (jit)"]
    converged = {name: ok(calls[name][0]()) for name, (_, ok) in calls.items() if ok}
    converged["simgraph solve(graph)"] = bool(solvers.solve(c.graph, method).converged)
    converged["scipy.optimize.root"] = bool(c.scipy().success)
    with tempfile.TemporaryDirectory() as tmp:  # quick: the cache's first fill stands in
        fill = _first_solve_in_child(case, n, tmp)
        fresh = _first_solve_in_child(case, n, None) if fresh_child else fill
        cached = _first_solve_in_child(case, n, tmp)
    rows = []
    for name, seconds in warm.items():
        row = {"case": c.label, "n": c.n, "method": name, "warm_us": seconds * 1e6,
               "vs_hand": seconds / hand, "first_s": first.get(name),
               "converged": converged.get(name, converged["simgraph solve(graph)"])}
        if name == "simgraph solve(graph)":
            row.update(first_s=fresh, cached_first_s=cached)
        rows.append(row)
    return rows


# -- repeated batches ---------------------------------------------------------------------

def batch_rows(size: int = 1000, fractions=(0.0, 0.1, 0.3, 0.05, 0.5)) -> list[dict]:
    """``solve_batch`` on ``x**2 = p`` with a changing number of members without a root."""
    import simgraph as sg
    import solvers
    from jax import monitoring

    class Square(sg.ReffableTreeNode):
        p: jax.Array
        x: jax.Array = sg.unknown(default=1.0)

        def residual(self):
            return self.x ** 2 - self.p

    count = [0]

    def listen(event, duration, **kwargs):
        count[0] += event == COMPILE_EVENT

    graph, rng = Square(jnp.asarray(2.0)), np.random.default_rng(0)
    monitoring.register_event_duration_secs_listener(listen)
    rows = []
    try:
        for call, fraction in enumerate((1.0, *fractions), 1):
            p = rng.uniform(0.5, 4.0, size)
            p[: int(fraction * size)] *= -1
            count[0], start = 0, time.perf_counter()
            sol = solvers.solve_batch(graph, {"p": jnp.asarray(p)})
            block(sol.flat)
            rows.append({"call": call, "failing": int((~np.asarray(sol.converged)).sum()),
                         "compilations": count[0], "time_s": time.perf_counter() - start})
    finally:
        monitoring.unregister_event_duration_listener(listen)
    return rows


# -- one large solve -----------------------------------------------------------------------

LARGE_COLUMNS = ("n", "unknowns", "graph_ms", "system_ms", "graph_vs_system", "scipy_lu_ms",
                 "scipy_vs_graph", "converged")


def large_rows(n: int = 2000, repeats: int = 7) -> list[dict]:
    """The n-node ladder solved once: eager ``solve(graph)`` and ``solve(System)`` (warm
    medians, interleaved), against the SciPy sparse Newton of ``_scale_peers`` (``spsolve``
    steps, the same step limit, compiled residual and Jacobian before the clock)."""
    import solvers

    from . import _scale_peers

    graph = _make_graph("ladder", n)
    system = solvers.System.build(graph)
    method = solvers.default_method(system, atol=ATOL, rtol=RTOL)
    warm = interleaved_medians({
        "graph": lambda: block(solvers.solve(graph, method).x),
        "system": lambda: block(solvers.solve(system, method).x)}, repeats=repeats)
    scipy = _scale_peers.solve_scipy_lu(system)
    ok = bool(solvers.solve(graph, method).converged) and scipy["scipy_lu_ok"] == "yes"
    return [{"n": n, "unknowns": system.n, "graph_ms": 1e3 * warm["graph"],
             "system_ms": 1e3 * warm["system"], "graph_vs_system": warm["graph"] / warm["system"],
             "scipy_lu_ms": 1e3 * scipy["scipy_lu_s"],
             "scipy_vs_graph": scipy["scipy_lu_s"] / warm["graph"],
             "converged": "yes" if ok else f"no (scipy: {scipy['scipy_lu_ok']})"}]


# -- the command line, phase by phase -----------------------------------------------------

_CLI_PHASES = """
import json, sys, time
t0 = time.perf_counter()
import jax
jax.config.update("jax_enable_x64", True)
from jax import monitoring
import solvers
from scenarios.circuits import CircuitResult, build_circuit, default_solver, read_netlist
t1 = time.perf_counter()
if sys.argv[2]:
    solvers.enable_compilation_cache(sys.argv[2])
compiling = [0.0]
monitoring.register_event_duration_secs_listener(
    lambda e, d, **k: compiling.__setitem__(0, compiling[0] + d) if e == {event!r} else None)
netlist = read_netlist(sys.argv[1]); t2 = time.perf_counter()
circuit = build_circuit(netlist); t3 = time.perf_counter()
system = solvers.System.build(circuit); t4 = time.perf_counter()
method = default_solver(system)
solution = solvers.solve(system, method); jax.block_until_ready(solution.x)
t5 = time.perf_counter()
with open(sys.argv[1] + ".json", "w") as out:
    json.dump(CircuitResult(solution.system, solution, circuit).to_json(), out, indent=2)
t6 = time.perf_counter()
jax.block_until_ready(solvers.solve(system, method).x)
solving = time.perf_counter() - t6
print(json.dumps(dict(unknowns=system.n, imports_s=t1 - t0, parsing_s=t2 - t1,
                      building_s=t3 - t2, lowering_s=t4 - t3, tracing_s=t5 - t4 - compiling[0] - solving,
                      compiling_s=compiling[0], solving_s=solving, writing_s=t6 - t5)))
"""


def cli_rows(k: int, caches=("off", "filled")) -> list[dict]:
    """Phases of ``python -m scenarios run circuit --json`` on the k x k grid (fresh process),
    without and with a filled compilation cache (``caches``); ``cli_wall_s`` runs the real
    command."""
    from . import ngspice_grid

    code = _CLI_PHASES.replace("{event!r}", repr(COMPILE_EVENT))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        deck = ngspice_grid.write_deck(k, Path(tmp))
        start = time.perf_counter()
        _child("print(1)")
        interpreter = time.perf_counter() - start
        cache = str(Path(tmp) / "cache")
        for label, where in [(c, cache if c == "filled" else "") for c in caches]:
            if where:
                _child(code, str(deck), where)  # fills it
            phases = _child(code, str(deck), where)
            argv = [sys.executable, "-m", "scenarios"] + (["--no-compile-cache"] if not where else [])
            env = dict(os.environ, SIMGRAPH_COMPILATION_CACHE=where or "0",
                       PYTHONPATH=str(ROOT))
            start = time.perf_counter()
            subprocess.run(argv + ["run", "circuit", "--input", str(deck), "--json",
                                   str(deck) + ".cli.json"], cwd=ROOT, env=env,
                           capture_output=True, timeout=900)
            wall = time.perf_counter() - start
            total = interpreter + sum(v for key, v in phases.items() if key.endswith("_s"))
            rows.append({"k": k, "cache": label, "interpreter_s": interpreter, **phases,
                         "total_s": total, "cli_wall_s": wall})
        _add_ngspice(rows, deck)
    return rows


def _add_ngspice(rows: list[dict], deck: Path) -> None:
    """ngspice's ``.op`` on the same deck, in this run, when it is on PATH: its wall time
    and its ratio to each row's ``cli_wall_s``."""
    from . import ngspice_grid

    found = ngspice_grid.run_ngspice(deck, reuse=False)
    if found is None:
        return
    timing, _ = found
    for row in rows:
        row.update(ngspice_op_s=timing["wall_s"],
                   ngspice_vs_cli=timing["wall_s"] / row["cli_wall_s"])


def run(quick: bool = False) -> dict:
    cases = [("ladder", 10)] if quick else [("pair", 2), ("ladder", 10), ("ladder", 100)]
    repeats = 3 if quick else 7
    return {"latency": [row for case, n in cases
                        for row in latency_rows(case, n, repeats, fresh_child=not quick,
                                                every_stage=not quick)],
            "large": large_rows(200, 3) if quick else large_rows(2000),
            "batch_recompiles": batch_rows(200, (0.0, 0.3)) if quick else batch_rows(1000),
            "cli": cli_rows(5, ("off",)) if quick else cli_rows(100)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    for name, rows in run(args.quick).items():
        print(f"\n## {name}")
        for row in rows:
            print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()})


if __name__ == "__main__":
    main()
