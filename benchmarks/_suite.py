"""Every benchmark of ``python -m benchmarks`` as a function ``(quick, out_dir) -> Section``.

Each adapter calls the public ``run(...)`` of one benchmark module with full or quick sizes,
turns its rows into a :class:`Section`, and draws its plot next to the report. Modules that
are missing or lack a ``run`` entry point give a section that says so.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from ._report import Section, line_plot, plotting


def dispatch(quick: bool, out: Path) -> Section:
    from . import graph_dispatch

    sizes, repeats = ((10, 100), 3) if quick else ((10, 100, 1000, 10_000), 7)
    rows = graph_dispatch.run(sizes, repeats)
    section = Section(
        "dispatch", "Graph dispatch: per-call cost into a compiled `jax.jit` function (issue 2)",
        "N equations (3 small arrays each) sharing N/10 gradient providers, passed to an "
        "already-compiled `jax.jit` function; the candidates are timed in alternating batches. "
        "Baseline: a flat dict with the same leaves (`plain_us`). `graph_vs_plain` = graph time "
        "/ plain time (target <= 1.2 at N >= 100); `graph_vs_nested` = graph time / the same "
        "data as nested dicts (one per equation); `python_walk_vs_plain` = the graph with the C "
        "column reads off (pure-Python walk) / plain; `nnx_vs_graph` = Flax NNX's `nnx.jit` on "
        "the same object graph / graph time (target >= 20).",
        rows, ("N", "leaves", "plain_us", "graph_us", "graph_vs_plain", "graph_vs_nested",
               "python_walk_vs_plain", "nnx_us", "nnx_vs_graph"))
    if any(r.get("nnx_us") is None for r in rows):
        section.notes.append("Flax NNX skipped: flax is not installed (`pip install .[bench]`).")
    return section


def circuit(quick: bool, out: Path) -> Section:
    from . import circuit_batch

    if quick:
        rows = circuit_batch.run((10,), (100,), repeats=1, scipy_sample=10, budget=2.0)
    else:
        rows = circuit_batch.run()
    section = Section(
        "circuit", "Batched circuit solves: diode ladder over B source voltages (issue 3)",
        (circuit_batch.__doc__ or "").split("\n\n", 1)[1].split("Run:")[0].strip()
        + "\n\n`solves_per_s` = B / wall time of one batched call; `simgraph_speedup` = simgraph's "
        "solves/s over the row's (> 1: simgraph is faster). Targets: >= 100x the scipy loop at "
        "B = 10 000, within 1.2x of the hand-written Newton, faster than optimistix and jaxopt; "
        "issue 4: >= 10 000 solves/s for the 100-node ladder at B = 10 000.",
        rows, circuit_batch.COLUMNS)
    section.notes += sorted({f"{r['method']}: {r['note']}" for r in rows
                             if str(r.get("note", "")).startswith("skipped")})
    panels = {f"{n}-node diode ladder": _series([r for r in rows if r["nodes"] == n],
                                                 lambda r: r["method"], "B", "solves_per_s")
              for n in sorted({r["nodes"] for r in rows})}
    _figure(section, out, "benchmarks_throughput.png", panels, "batch size B", "solves per second")
    return section


def scale(quick: bool, out: Path) -> Section:
    from . import scale_lowering

    if quick:  # one small N; SciPy's newton_krylov stops after 5 s
        rows = scale_lowering.run((300,), 0, scipy_budget=5.0)
    else:
        rows = scale_lowering.run((1_000, 10_000, 100_000), 1_000)
    section = Section(
        "scale", "Lowering scale: build, trace and compile time against network size (issue 4)",
        "Generated diode grids and pipe networks of N graph nodes lowered to `F(x, params)`: "
        "grouped by element kind (`grouped`) and object by object (`objectwise`, only for small "
        "N: its compile time grows with N). `build_s` = `System.build`, `trace_s` = jaxpr + "
        "lowering, `compile_s` = XLA compile of the residual, `jvp_compile_s` = compile of its "
        "JVP, `run_ms` = one residual evaluation. Each grouped row also solves the network: "
        "`solve_s` = `solvers.solve` with the default method (compile included), `solve_warm_s` "
        "= the median of up to 7 more calls, `scipy_lu_s` / `scipy_lu_ok` = Newton in SciPy "
        "with `spsolve` (SuperLU, COLAMD) on the model's sparse Jacobian, with the same start, step limit and "
        "tolerance, `lu_speedup` = scipy_lu_s / solve_warm_s (neither compiles on the clock), "
        "`scipy_s` / `scipy_ok` = `scipy.optimize.newton_krylov` (no preconditioner) on the same "
        "lowered equations from the same start, `solve_speedup` = scipy_s / solve_s (only when "
        "both converge). Targets: compile under 10 s at N = 10^5 and within 2x of N = 10^3; "
        "solve time growing at most like N log N; faster than the scipy sparse reference at "
        "N = 10^5.",
        rows, scale_lowering.COLUMNS)
    if quick:
        section.notes.append("Quick mode: N = 300 only and no object-by-object rows (their "
                             "compile alone takes tens of seconds); newton_krylov stops after 5 s.")
    label = lambda r: f"{r['case']} ({r['evaluation']})"  # noqa: E731
    panels = {"compile time": _series(rows, label, "N", "compile_s"),
              "residual evaluation": _series(rows, label, "N", "run_ms", 1e-3)}
    _figure(section, out, "benchmarks_scale.png", panels, "network size N (graph nodes)", "seconds")
    return section


def sparse_solve(quick: bool, out: Path) -> Section:
    """Issue 4's sparse linear solvers (``benchmarks.sparse_linear``), if present."""
    section = Section("sparse", "Sparse linear solvers for Newton (issue 4)",
                      "Sparse Newton steps against dense LU and SciPy's SuperLU.")
    try:
        module = importlib.import_module("benchmarks.sparse_linear")
    except ModuleNotFoundError as err:
        if err.name != "benchmarks.sparse_linear":
            raise
        module = None
    if module is None or not callable(getattr(module, "run", None)):
        section.notes.append("Not measured: no `benchmarks/sparse_linear.py` with a `run()` "
                             "entry point exists yet.")
        return section
    tables = module.run(quick=quick)
    section.intro = (module.__doc__ or section.intro).split("Run:")[0].strip()
    columns = {"ladder": "LADDER_COLUMNS", "grid": "GRID_COLUMNS", "compile": "COMPILE_COLUMNS"}
    for name, rows in tables.items():
        section.tables.append((name, rows, tuple(getattr(module, columns.get(name, ""), ()))))
    series = _series(tables.get("ladder", []), lambda r: f"flat Newton + {r['solver']}", "B",
                     "solves_per_s")
    if series:
        _figure(section, out, "benchmarks_sparse_ladder.png", {"flat diode ladder": series},
                "batch size B", "solves per second")
    if quick:
        section.notes.append("Quick mode: small ladders and grids.")
    return section


def robustness(quick: bool, out: Path) -> Section:
    from . import robustness as rb

    names = ["Default", "scipy hybr"] if quick else [*rb.METHODS, "scipy hybr", "scipy lm"]
    # quick: one problem Default's first stage solves from every start (its fallbacks'
    # compilation is tests/test_solvers_problems.py's, on every problem)
    chosen = ([p for p in rb.problems.PROBLEMS if p.name == "dennis_schnabel"] if quick
              else rb.problems.PROBLEMS)
    results = rb.run(names, chosen)
    rows = [{"#": p.number, "problem": p.name, "n": len(p.x0),
             **{name: rb.cell(results[name][p.name]) for name in names}} for p in chosen]
    total = lambda name, k=None: sum(ok for runs in results[name].values()  # noqa: E731
                                     for i, (ok, _) in enumerate(runs) if k is None or i == k)
    rows.append({"problem": f"**solved (of {3 * len(chosen)})**",
                 **{name: total(name) for name in names}})
    rows.append({"problem": f"standard start (of {len(chosen)})", **{n: total(n, 0) for n in names}})
    rows.append({"problem": "claimed success wrongly", **{n: sum(
        c and not ok for runs in results[n].values() for ok, c in runs) for n in names}})
    section = Section(
        "robustness", "Robustness on the standard nonlinear-equation problems (issue 3)",
        "Every method on the 23 Moré-Garbow-Hillstrom / `test_nonlin` problems from 1x, 10x "
        "and 100x the standard start: ✓ when the returned x has max|F| <= 1e-8. "
        "Full table with its notes: `python -m benchmarks.robustness` (docs/solver_robustness.md).",
        rows, ("#", "problem", "n", *names))
    if quick:
        section.notes.append("Quick mode: one problem, the default method and scipy hybr only.")
    return section


def latency(quick: bool, out: Path) -> Section:
    from . import latency as lat

    tables = lat.run(quick)
    section = Section(
        "latency", "Per-call latency: one solve, first call, repeated batches, the CLI (issue 13)",
        (lat.__doc__ or "").split("\n\n", 1)[1].split("Run:")[0].strip()
        + "\n\nTargets: warm `jax.jit(solve)` <= 2x the hand Newton, eager `solve(graph)` <= 3x, "
        "faster than `scipy.optimize.root`; first call of `solve` on the 10-node ladder <= 1.5 s; "
        "ladder n = 2000: `solve(graph)` <= 1.5x `solve(System)` and faster than SciPy's sparse "
        "Newton; "
        "0 compilations on repeated `solve_batch` calls whatever the members' outcomes.")
    columns = {"latency": lat.LATENCY_COLUMNS, "large": lat.LARGE_COLUMNS,
               "batch_recompiles": lat.BATCH_COLUMNS,
               "cli": lat.CLI_COLUMNS}
    for name, rows in tables.items():
        section.tables.append((name, rows, columns[name]))
    if not any("optimistix" in r["method"] for r in tables["latency"]):
        section.notes.append("optimistix skipped: not installed (`pip install .[bench]`).")
    if quick:
        section.notes.append("Quick mode: the 10-node ladder only (without the every-stage-"
                             "compiled row), B = 200 and 3 calls, CLI on the 5 x 5 grid "
                             "without a compilation cache.")
    return section


def grids(quick: bool, out: Path) -> Section:
    from . import power_grids as pg

    rows, sweeps = pg.run(quick)
    section = Section(
        "grids", "Real power grids: large MATPOWER cases through the CLI (issue 14)",
        (pg.__doc__ or "").split("\n\n", 1)[1].split("Run:")[0].strip()
        + "\n\n`cli_s` = one fresh `python -m scenarios run powerflow --input CASE.m --json` "
        "process with an empty compilation cache (import, parse, build, lower, compile, solve, "
        "write JSON), `cli_cpu_s` its CPU seconds (steadier than wall time on a shared "
        "machine), `cli_cached_s` the same command again (the compiled F and J read from the "
        "cache the first run filled), `cli_peak_rss_gb` "
        "its peak resident memory; `max_dVm`/`max_dVa_deg` its answer against the reference "
        f"(`match`: converged, <= {pg.VM_TOL:g} p.u. and <= {pg.VA_TOL:g} deg); `warm_s` = "
        "`model.solve()` in one process after the first call (median); `linear_solver` = what "
        "`solvers.default_method` chose (`KLU`: KLU, from the optional klujax package), `fill` = "
        "nnz(L+U)/nnz(J) of its factorization at the "
        "solution, `fill_mmd` the same with SuperLU's minimum degree on A^T+A, `fill_nd` "
        "with our nested dissection. Ratios are "
        "peer time / ours (> 1: we are faster): `pp_cold_vs_cli` and `pp_cold_vs_cached` "
        "against pandapower's cold process, `pp_vs_warm` against pandapower's `runpp`, "
        "`pp_ls2g_vs_warm` against pandapower in lightsim2grid mode, `klu_vs_warm` against "
        "lightsim2grid's KLU Newton alone. Targets: `match` everywhere, CLI faster than "
        "pandapower's cold process, warm faster than `runpp` and within 2x of lightsim2grid "
        "mode (ratio >= 0.5), load sweep >= 10x faster per scenario than `runpp` in a loop.",
        rows, pg.COLUMNS)
    if sweeps:
        section.tables.append(("load sweep (`load_scale` = 0.8..1.2, one batched solve)",
                               sweeps, pg.SWEEP_COLUMNS))
        section.notes.append("pandapower is not installed here: the sweep's baseline is its "
                             "recorded warm `runpp` time, once per scenario. The sweep's "
                             "`linear_solver` is what `solvers.default_method` picks for that "
                             "batch size; `cli_s` is the fresh `--sweep` process (compile "
                             "included), `warm_s` (`warm_cpu_s`: CPU seconds) the same sweep "
                             "in one process after a first call (median of 3); "
                             "`per_scenario_ms` uses `warm_s`. Batches of large systems are "
                             "factored on the host, several members at once (one thread a "
                             "core), with KLU refactorizations (shared pivot orders) where "
                             "KLU is installed.")
    if not quick and "case_ACTIVSg25k" in pg.available():
        section.tables.append(("70 000-bus class: 3 tied copies of case_ACTIVSg25k "
                               "(`benchmarks/_tiled_grid.py`), one fresh CLI process",
                               [pg.tiled_row()], pg.TILED_COLUMNS))
        section.notes.append("The largest public ACTIVSg case (70 000 buses) is not in "
                             "../shared. Three copies of case_ACTIVSg25k joined by tie lines "
                             "stand in for it. Every copy is checked against the 25k "
                             "reference, with angles relative to the copy's own slack bus.")
    if not rows:
        section.notes.append(f"Not measured: {pg.SHARED} is absent.")
    if quick:
        section.notes.append("Quick mode: case_ACTIVSg2000 only, 10 sweep scenarios in one "
                             "process (no CLI sweep).")
    return section


def distributed(quick: bool, out: Path) -> Section:
    from . import distributed_sweep

    rows = (distributed_sweep.run(500, (1, 2), repeats=1, per_process=()) if quick
            else distributed_sweep.run())
    section = Section(
        "distributed", "Sweeps over several processes: jax.distributed on one machine (issue 18)",
        (distributed_sweep.__doc__ or "").split("\n\n", 1)[1].split("Run:")[0].strip()
        + " Target: 2 processes on 2 cores approach 2x the single-thread run.",
        rows, distributed_sweep.COLUMNS)
    if quick:
        section.notes.append("Quick mode: 500 members, 1 and 2 processes, one run each.")
    return section


def _series(rows: list[dict], label, x: str, y: str, factor: float = 1.0) -> dict:
    """``{label(row): ([x], [y * factor])}`` over the rows that have a value for ``y``."""
    series: dict = {}
    for r in rows:
        if r.get(y) is not None:
            xs, ys = series.setdefault(label(r), ([], []))
            xs.append(r[x])
            ys.append(r[y] * factor)
    return series


def _figure(section: Section, out: Path, name: str, panels: dict, xlabel: str, ylabel: str) -> None:
    if plotting() is None:
        section.notes.append("No plot: matplotlib is not installed (`pip install .[plot]`).")
    elif line_plot(out / name, panels, xlabel=xlabel, ylabel=ylabel):
        section.figures.append(name)


def transient(quick: bool, out: Path) -> Section:
    from . import transient as tr

    rows = tr.run(quick)
    section = Section(
        "transient", "Transients: .tran decks, batched rectifiers, compile time (issue 17)",
        (tr.__doc__ or "").split("\n\n", 1)[1].split("Run:")[0].strip()
        + "\n\nTargets: the CLI matches the k = 30 reference within its tolerance "
        "(`max_dV <= atol_V`); the batch >= 100x the ngspice loop; compile within 2x of DC; "
        "at k = 100 the CLI faster than ngspice's default-tolerance run, within 5e-2 V.",
        rows, tr.COLUMNS)
    if quick:
        section.notes.append("Quick mode: the rc_step deck, B = 10, 10 x 10 grids.")
    return section


BENCHMARKS = {"dispatch": dispatch, "circuit": circuit, "scale": scale, "sparse": sparse_solve,
              "robustness": robustness, "transient": transient, "latency": latency,
              "grids": grids, "distributed": distributed}
