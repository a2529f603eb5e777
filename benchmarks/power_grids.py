"""Real power grids: MATPOWER's large cases through the command line and in one process.

The five cases of ``../shared/validation/acpf-large`` (2 000 to 25 000 buses; skipped when that
folder is absent) are solved from the default start (the case file's voltages) by
``python -m scenarios run powerflow --input CASE.m --json OUT`` in a fresh process, and the
answer is compared with the PYPOWER reference. The peers are not run here: their times are
the ones recorded in that folder's README (pandapower 3.5.6 ``runpp``, pandapower with
lightsim2grid, lightsim2grid's KLU Newton alone, and their cold processes), measured on this
machine type at a load average of 2.5 to 6.3; ratios against them are as noisy as the
machine, and a run on a quieter machine than theirs flatters us (up to about 2x).

Run: ``python -m benchmarks.power_grids [--quick]``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
#: ``../shared`` next to the checkout (a worktree one level deeper finds it one level up), or
#: the folder named by ``SIMGRAPH_ACPF_LARGE`` (the benchmark smoke test names none: the
#: large cases take minutes).
SHARED = Path(os.environ["SIMGRAPH_ACPF_LARGE"]) if "SIMGRAPH_ACPF_LARGE" in os.environ else next(
    (p / "shared" / "validation" / "acpf-large" for p in ROOT.parents[:2] if (p / "shared").is_dir()),
    ROOT.parent / "shared" / "validation" / "acpf-large")
CASES = ("case2869pegase", "case_ACTIVSg2000", "case9241pegase", "case_ACTIVSg10k",
         "case_ACTIVSg25k")
#: Seconds recorded in acpf-large/README.md ("Peer timings used by pf_scale_check.py"): one
#: power flow warm in pandapower (``runpp``), in pandapower with lightsim2grid, in
#: lightsim2grid's KLU Newton alone; a cold process of pandapower / of lightsim2grid.
PEERS = {
    "case2869pegase": (0.147, 0.088, 0.013, 10.3, 9.6),
    "case_ACTIVSg2000": (0.128, 0.062, 0.014, 10.8, 10.8),
    "case9241pegase": (0.443, 0.141, 0.037, 9.3, 8.8),
    "case_ACTIVSg10k": (0.337, 0.176, 0.042, 15.6, 10.9),
    "case_ACTIVSg25k": (1.194, 0.347, 0.294, 12.1, 9.3),
}
#: Accuracy the issue asks for, against the reference (p.u., degrees).
VM_TOL, VA_TOL = 1e-6, 1e-4
COLUMNS = ("case", "buses", "unknowns", "start", "iterations", "max_dVm", "max_dVa_deg", "match",
           "cli_s", "cli_cpu_s", "cli_cached_s", "cli_peak_rss_gb", "warm_s", "linear_solver",
           "fill", "fill_mmd", "fill_nd", "pp_cold_vs_cli", "pp_cold_vs_cached", "pp_vs_warm",
           "pp_ls2g_vs_warm", "klu_vs_warm")
SWEEP_COLUMNS = ("case", "scenarios", "linear_solver", "converged", "cli_s", "cli_peak_rss_gb",
                 "warm_s", "warm_cpu_s", "per_scenario_ms", "pandapower_ms", "pp_vs_ours")


def available(names=CASES) -> list[str]:
    """The cases whose ``.m`` file and reference are in ``../shared``."""
    return [c for c in names if (SHARED / "matpower" / f"{c}.m").is_file()
            and (SHARED / "data" / f"{c}.json").is_file()]


#: Runs its arguments as a child and prints the child's peak RSS (KB) and CPU seconds (user +
#: system) last on stderr. A child forked straight from the benchmark would inherit the
#: benchmark's high-water mark (Linux keeps it through fork and exec); one forked from this
#: small process does not.
_LAUNCHER = ("import os, subprocess, sys; child = subprocess.Popen(sys.argv[1:]); "
             "_, status, usage = os.wait4(child.pid, 0); "
             "print(usage.ru_maxrss, usage.ru_utime + usage.ru_stime, file=sys.stderr); "
             "sys.exit(os.waitstatus_to_exitcode(status))")


def cli_run(case: str | Path, args: tuple = (), timeout: float | None = None,
            cache: str | None = None) -> tuple[float, float, dict | None, float]:
    """``(wall s, peak RSS GB, JSON document, CPU s)`` of one fresh ``python -m scenarios``
    process on a shared case (by name) or a file (by path); document None: killed after
    ``timeout`` seconds. ``cache``: the compilation cache directory it uses (default: the
    user's)."""
    source = case if isinstance(case, Path) else SHARED / "matpower" / f"{case}.m"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "pf.json"
        command = [sys.executable, "-c", _LAUNCHER, sys.executable, "-m", "scenarios", "run",
                   "powerflow", "--input", str(source), "--json", str(out), *args]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        if cache is not None:
            env["SIMGRAPH_COMPILATION_CACHE"] = cache
        start = time.perf_counter()
        child = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, start_new_session=True)
        timer = threading.Timer(timeout, os.killpg, (child.pid, 9)) if timeout else None
        if timer:
            timer.start()
        err = child.communicate()[1].decode(errors="replace").strip().splitlines()
        wall = time.perf_counter() - start
        if timer:
            timer.cancel()
        if timeout and wall >= timeout:
            return wall, float("nan"), None, float("nan")
        if child.returncode not in (0, 1):
            raise RuntimeError(f"the CLI failed on {case} ({child.returncode}): {err[-3:]}")
        rss, cpu = err[-1].split()
        return wall, int(rss) / 1e6, json.loads(out.read_text()), float(cpu)


def deviations(case: str, doc: dict) -> tuple[float, float]:
    """Max |dVm| (p.u.) and |dVa| (deg) of a CLI document against the PYPOWER reference."""
    ref = json.loads((SHARED / "data" / f"{case}.json").read_text())
    ids = [str(i) for i in ref["buses"]["id"]]
    vm = np.asarray([doc["vm"][i] for i in ids]) - ref["solution"]["Vm"]
    va = np.asarray([doc["va_deg"][i] for i in ids]) - ref["solution"]["Va_deg"]
    return float(np.max(np.abs(vm))), float(np.max(np.abs(va)))


def in_process(case: str, repeats: int) -> dict:
    """Warm ``model.solve()`` (median of ``repeats`` after a first call) and the fill of the
    default method's sparse LU at the solution."""
    from scenarios.powerflow import build_powerflow, read_matpower

    from ._timing import median_time

    model = build_powerflow(read_matpower(SHARED / "matpower" / f"{case}.m"))
    result = model.solve()
    warm = median_time(model.solve, repeats=repeats, number=1)
    solver, fill, fill_mmd, fill_nd = factor_fill(model, result)
    return {"warm_s": warm, "linear_solver": solver, "fill": fill, "fill_mmd": fill_mmd,
            "fill_nd": fill_nd, "unknowns": int(result.solved.system.n)}


def factor_fill(model, result) -> tuple[str, float | None, float | None, float | None]:
    """The default method's linear solver and, for a host LU, nnz(L + U) / nnz(J) of the
    Jacobian at the solution with that solver's ordering, with SuperLU's minimum degree on
    A^T + A (the reference for "a good fill-reducing ordering") and with our nested
    dissection (what was chosen before the choice compared the two)."""
    import scipy.sparse as sp

    import solvers
    from solvers.linear._host_lu import factor
    from solvers.linear._sparsity import sparse_jacobian

    system = result.solved.system
    linear = getattr(solvers.default_method(system), "linear_solver", None)
    name = type(linear).__name__
    if not isinstance(linear, solvers.SparseHostLU):
        return name, None, None, None
    pattern = system.sparsity_pattern()
    _, values = sparse_jacobian(system.residual, result.solved.solution.x, system.params,
                                pattern)
    jac = sp.csc_matrix((np.asarray(values), (pattern.rows, pattern.cols)), shape=pattern.shape)
    jac.sort_indices()
    klu = linear.factorization == "klu"
    thresh = 0.1 if klu else linear.diag_pivot_thresh  # host_solver's with symmetric orders
    fills = [factor(jac, pattern, spec, thresh).fill / pattern.nnz
             for spec in (linear.permc_spec, "MMD_AT_PLUS_A", "ND")]
    if klu:
        from solvers.linear._host_lu import klu_factor
        fill = klu_factor(pattern, np.asarray(values)).fill / pattern.nnz
        return f"{name}(KLU)", fill, *fills[1:]
    return f"{name}({linear.permc_spec})", *fills


def case_row(case: str, repeats: int) -> dict:
    """The CLI with an empty compilation cache (its answer is checked), then again with the
    cache that run filled; the warm solve and the fill in this process."""
    with tempfile.TemporaryDirectory() as cache:
        cli_s, rss, doc, cpu = cli_run(case, cache=cache)
        cached_s = cli_run(case, cache=cache)[0]
    dvm, dva = deviations(case, doc)
    row = {"case": case, "buses": len(doc["vm"]), "start": doc["start"],
           "iterations": doc["iterations"], "max_dVm": dvm, "max_dVa_deg": dva,
           "match": bool(doc["converged"] and dvm <= VM_TOL and dva <= VA_TOL),
           "cli_s": cli_s, "cli_cpu_s": cpu, "cli_cached_s": cached_s, "cli_peak_rss_gb": rss,
           **in_process(case, repeats)}
    pp, pp_ls, klu, pp_cold, _ = PEERS[case]
    row.update(pp_cold_vs_cli=pp_cold / cli_s, pp_cold_vs_cached=pp_cold / cached_s,
               pp_vs_warm=pp / row["warm_s"], pp_ls2g_vs_warm=pp_ls / row["warm_s"],
               klu_vs_warm=klu / row["warm_s"])
    return row


def sweep_row(case: str, count: int, timeout: float = 240.0, cli: bool = True) -> dict:
    """``--sweep load_scale=0.8:1.2:COUNT`` through a fresh CLI process (one batched solve,
    compile included; killed after ``timeout`` s) and the same sweep in one process after a
    first call (warm: the median of three; wall and CPU seconds). Per scenario (warm, else the CLI's) against
    pandapower's recorded warm ``runpp``."""
    import solvers
    from scenarios.powerflow import DEFAULT_METHOD, build_powerflow, read_matpower

    model = build_powerflow(read_matpower(SHARED / "matpower" / f"{case}.m"))
    linear = DEFAULT_METHOD(solvers.System.build(model.graph), count).linear_solver
    wall, rss, doc, _ = (cli_run(case, ("--sweep", f"load_scale=0.8:1.2:{count}"), timeout)
                         if cli else (None, None, None, None))
    values = np.linspace(0.8, 1.2, count)
    model.sweep(values)
    timings = []
    for _ in range(3):
        start, cpu = time.perf_counter(), time.process_time()
        converged = int(model.sweep(values).converged.sum())
        timings.append((time.perf_counter() - start, time.process_time() - cpu))
    warm, cpu = sorted(timings)[1]  # the median run's wall and CPU seconds
    per = (warm if warm is not None else wall) / count
    done = doc is not None
    return {"case": case, "scenarios": count,
            "linear_solver": type(getattr(linear, "choice", linear)).__name__,
            "converged": sum(m["converged"] for m in doc["sweep"]) if done else converged,
            "cli_s": wall if done or not cli else f"> {timeout:.0f} (killed)",
            "cli_peak_rss_gb": rss,
            "warm_s": warm, "warm_cpu_s": cpu,
            "per_scenario_ms": 1e3 * per if done or warm else None,
            "pandapower_ms": 1e3 * PEERS[case][0],
            "pp_vs_ours": PEERS[case][0] / per if done or warm else None}


TILED_COLUMNS = ("case", "buses", "start", "converged", "iterations", "max_dVm",
                 "max_dVa_deg", "match", "cli_s", "cli_cpu_s", "cli_peak_rss_gb")


def tiled_row(case: str = "case_ACTIVSg25k", copies: int = 3) -> dict:
    """The 70 000-bus class: ``copies`` tied copies of ``case`` (see `_tiled_grid`) through a
    fresh CLI process. Every copy is checked against the original case's reference; angles
    are taken relative to the copy's own slack bus."""
    from . import _tiled_grid

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{case}_x{copies}.m"
        tiled = _tiled_grid.tile(SHARED / "matpower" / f"{case}.m", copies, path)
        with tempfile.TemporaryDirectory() as cache:
            wall, rss, doc, cpu = cli_run(path, cache=cache)
    reference = json.loads((SHARED / "data" / f"{case}.json").read_text())
    dvm, dva = _tiled_grid.copy_deviations(doc, reference, tiled.offset, tiled.slack, copies)
    return {"case": f"{copies} x {case}", "buses": tiled.buses,
            "start": doc["start"], "converged": doc["converged"],
            "iterations": doc["iterations"], "max_dVm": dvm, "max_dVa_deg": dva,
            "match": bool(doc["converged"] and dvm <= VM_TOL and dva <= VA_TOL),
            "cli_s": wall, "cli_cpu_s": cpu, "cli_peak_rss_gb": rss}


def run(quick: bool = False) -> tuple[list[dict], list[dict]]:
    """Rows per case and the load-sweep row (empty without ``../shared``)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    cases = available(("case_ACTIVSg2000",) if quick else CASES)
    rows = [case_row(c, 1 if quick else 3) for c in cases]
    counts = (10,) if quick else (10, 100)
    sweeps = [sweep_row("case_ACTIVSg2000", n, cli=not quick) for n in counts] \
        if "case_ACTIVSg2000" in cases else []
    return rows, sweeps


if __name__ == "__main__":
    from ._report import markdown_table

    case_rows, sweep_rows = run("--quick" in sys.argv)
    print(markdown_table(case_rows, COLUMNS))
    print(markdown_table(sweep_rows, SWEEP_COLUMNS))
