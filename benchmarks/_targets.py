"""The issues' speed targets checked against this run's rows: met, missed, or not measured."""

from __future__ import annotations

import math

from ._report import Section


def _status(ok) -> str:
    return "not measured" if ok is None else ("met" if ok else "missed")


def _target(issue: int, target: str, measured: str | None, ok) -> dict:
    return {"issue": issue, "target": target, "measured": measured or "-", "status": _status(ok)}


def dispatch_targets(rows: list[dict]) -> list[dict]:
    big = [r for r in rows if r["N"] >= 100]
    worst = max((r["graph_vs_plain"] for r in big), default=None)
    nnx = [r["nnx_vs_graph"] for r in rows if r.get("nnx_vs_graph")]
    least = min(nnx, default=None)
    return [
        _target(2, "graph dispatch <= 1.2x plain pytree at N >= 100",
                None if worst is None else f"worst {worst:.2f}x", None if worst is None else worst <= 1.2),
        _target(2, "nnx.jit >= 20x slower than the graph",
                None if least is None else f"least {least:.0f}x", None if least is None else least >= 20),
    ]


def _rate(rows, n, batch, method):
    return next((r.get("solves_per_s") for r in rows
                 if (r["nodes"], r["B"], r["method"]) == (n, batch, method)), None)


def circuit_targets(rows: list[dict]) -> list[dict]:
    out = []
    for n in sorted({r["nodes"] for r in rows}):
        batch = max(r["B"] for r in rows if r["nodes"] == n)
        ours = _rate(rows, n, batch, "simgraph")
        at = f"{n} nodes, B = {batch}"
        checks = (("scipy root", 100.0, ">= 100x the scipy loop"),
                  ("hand Newton", 1 / 1.2, "within 1.2x of the hand-written Newton"),
                  ("optimistix", 1.0, "faster than optimistix"),
                  ("jaxopt", 1.0, "faster than jaxopt"))
        for method, factor, text in checks:
            peer = _rate(rows, n, batch, method)
            ratio = None if not (ours and peer) else ours / peer
            full = batch >= 10_000 or method != "scipy root"
            out.append(_target(3, f"{text} ({at})", None if ratio is None else f"{ratio:.3g}x",
                               None if ratio is None or not full else ratio >= factor))
        if n >= 100:
            out.append(_target(4, f">= 10 000 solves/s through solve_batch ({at})",
                               None if ours is None else f"{ours:.3g}/s",
                               None if ours is None or batch < 10_000 else ours >= 10_000))
    return out


def scale_targets(rows: list[dict]) -> list[dict]:
    out = []
    for case in sorted({r["case"] for r in rows}):
        grouped = sorted((r["N"], r["compile_s"]) for r in rows
                         if r["case"] == case and r["evaluation"] == "grouped")
        if not grouped:
            continue
        (n_small, c_small), (n_big, c_big) = grouped[0], grouped[-1]
        measured = f"{c_big:.2g} s at N = {n_big}, {c_small:.2g} s at N = {n_small}"
        big_enough = n_big >= 90_000
        out.append(_target(4, f"{case}: compile < 10 s at N = 10^5 and within 2x of N = 10^3",
                           measured, None if not big_enough else c_big < 10 and c_big <= 2 * c_small))
        out += _solve_targets(case, [r for r in rows if r["case"] == case
                                     and r["evaluation"] == "grouped"], big_enough)
    return out


def _solve_targets(case: str, rows: list[dict], big_enough: bool) -> list[dict]:
    """Warm solve time growth over the last decade of N against N log N, and the speed
    against SciPy's sparse Newton at the largest N."""
    timed = sorted((r["N"], r.get("solve_warm_s")) for r in rows if r.get("solve_warm_s"))
    if len(timed) < 2:
        return []
    (n_a, t_a), (n_b, t_b) = timed[-2], timed[-1]
    limit = (n_b * math.log(n_b)) / (n_a * math.log(n_a))
    growth = t_b / t_a
    speedup = rows[-1].get("lu_speedup") if rows[-1]["N"] == n_b else None
    return [
        _target(4, f"{case}: warm solve grows at most like N log N (N = {n_a} -> {n_b})",
                f"{growth:.3g}x (limit {limit:.3g}x)", None if not big_enough else growth <= limit),
        _target(4, f"{case}: faster than SciPy's sparse Newton at N = 10^5",
                None if speedup is None else f"{speedup:.3g}x",
                None if speedup is None or not big_enough else speedup > 1),
    ]


def robustness_targets(rows: list[dict]) -> list[dict]:
    standard = next((r for r in rows if str(r.get("problem", "")).startswith("standard start")), None)
    value = None if standard is None else standard.get("Default")
    total = sum(1 for r in rows if r.get("#") is not None)
    return [_target(3, "default method solves every problem from its standard start",
                    None if value is None else f"{value}/{total}",
                    None if value is None or total < 23 else value == total)]


def sparse_targets(tables: list) -> list[dict]:
    ladder = next((rows for caption, rows, _ in tables if caption == "ladder"), [])
    best = [r for r in ladder if r.get("solver") == "SparseLU"]
    if not best:
        return []
    top = max(best, key=lambda r: r["B"])
    return [_target(4, f"flat Newton + SparseLU on the diode ladder >= 10 000 solves/s "
                       f"(B = {top['B']})", f"{top['solves_per_s']:.3g}/s",
                    None if top["B"] < 10_000 else top["solves_per_s"] >= 10_000)]


def latency_targets(tables: list) -> list[dict]:
    table = {caption: rows for caption, rows, _ in tables}
    out = []
    for case in dict.fromkeys(r["case"] for r in table.get("latency", [])):
        rows = {r["method"]: r for r in table["latency"] if r["case"] == case}
        scipy = rows.get("scipy.optimize.root", {}).get("warm_us")
        for method, limit in (("simgraph jit(solve(graph))", 2.0), ("simgraph solve(graph)", 3.0)):
            ratio = rows.get(method, {}).get("vs_hand")
            out.append(_target(13, f"{method} <= {limit:g}x the hand Newton ({case})",
                               None if ratio is None else f"{ratio:.2f}x",
                               None if ratio is None else ratio <= limit))
        eager = rows.get("simgraph solve(graph)", {})
        ok = None if scipy is None or not eager else eager["warm_us"] < scipy
        out.append(_target(13, f"solve(graph) faster than scipy.optimize.root ({case})",
                           None if ok is None else f"{scipy / eager['warm_us']:.2f}x", ok))
        if case.startswith("10-node"):
            first = eager.get("first_s")
            out.append(_target(13, "first call of solve on the 10-node ladder <= 1.5 s",
                               None if first is None else f"{first:.2f} s",
                               None if first is None else first <= 1.5))
    for r in table.get("large", []):
        if r["n"] >= 2000:
            out += [_target(13, f"ladder n = {r['n']}: solve(graph) <= 1.5x solve(System)",
                            f"{r['graph_vs_system']:.2f}x", r["graph_vs_system"] <= 1.5),
                    _target(13, f"ladder n = {r['n']}: solve(graph) faster than SciPy's sparse "
                                "Newton", f"{r['scipy_vs_graph']:.2f}x", r["scipy_vs_graph"] > 1)]
    for r in table.get("cli", []):
        if r.get("k") == 100:
            ratio = r.get("ngspice_vs_cli")
            cache = "an empty" if r["cache"] == "off" else "a filled (its second run on)"
            out.append(_target(13, f"CLI on the k = 100 grid, {cache} compilation cache, "
                                   ">= 5x faster than ngspice's .op",
                               None if ratio is None else
                               f"{ratio:.2f}x ({r['cli_wall_s']:.2f} s vs {r['ngspice_op_s']:.2f} s)",
                               None if ratio is None else ratio >= 5))
    again = [r["compilations"] for r in table.get("batch_recompiles", [])[1:]]
    out.append(_target(13, "repeated solve_batch with new values: 0 compilations",
                       f"{sum(again)} in {len(again)} calls" if again else None,
                       None if not again else sum(again) == 0))
    return out


def grids_targets(section: Section) -> list[dict]:
    out = []
    for r in section.rows:
        case = r["case"]
        out += [
            _target(14, f"{case}: matches the reference from the default start (CLI)",
                    f"{r['max_dVm']:.1e} p.u. / {r['max_dVa_deg']:.1e} deg", r["match"]),
            _target(14, f"{case}: CLI faster than pandapower's cold process",
                    f"{r['pp_cold_vs_cli']:.3g}x", r["pp_cold_vs_cli"] > 1),
            _target(14, f"{case}: warm solve faster than pandapower runpp",
                    f"{r['pp_vs_warm']:.3g}x", r["pp_vs_warm"] > 1),
            _target(14, f"{case}: warm solve within 2x of pandapower + lightsim2grid",
                    f"{r['pp_ls2g_vs_warm']:.3g}x", r["pp_ls2g_vs_warm"] >= 0.5),
        ]
    for _, rows, columns in section.tables:
        if "scenarios" not in columns:
            out += [target for r in rows for target in _tiled_targets(r)]
            continue
        for r in rows:
            ratio = r.get("pp_vs_ours")
            full = r["scenarios"] >= 100
            out.append(_target(14, f"{r['case']} load sweep >= 10x faster per scenario than "
                                   f"pandapower runpp in a loop ({r['scenarios']} scenarios)",
                               None if ratio is None else f"{ratio:.3g}x",
                               (ratio is not None and ratio >= 10) if full else None))
    return out


def _tiled_targets(r: dict) -> list[dict]:
    return [
        _target(14, f"{r['buses']}-bus class ({r['case']}): every copy matches the reference "
                    "(CLI)", f"{r['max_dVm']:.1e} p.u. / {r['max_dVa_deg']:.1e} deg", r["match"]),
        _target(14, f"{r['buses']}-bus class ({r['case']}): CLI peak memory under 4 GB",
                f"{r['cli_peak_rss_gb']:.2f} GB in {r['cli_s']:.1f} s",
                r["cli_peak_rss_gb"] < 4),
    ]


def distributed_targets(rows: list[dict]) -> list[dict]:
    two = next((r for r in rows if r["processes"] == 2 and r["cores"] == 2), None)
    return [_target(18, "2 processes on 2 cores >= 1.8x the single-thread sweep (10^6 members)",
                    None if two is None else f"{two['speedup']:.3g}x",
                    None if two is None or two["members"] < 10**6 else two["speedup"] >= 1.8)]


def transient_targets(rows: list[dict]) -> list[dict]:
    out = []
    for r in rows:
        what, speedup, dv = r.get("what", ""), r.get("speedup"), r.get("max_dV")
        if r["case"] == "rc_grid_k30":
            out.append(_target(17, "rc_grid_k30 through the CLI matches ngspice within its "
                                   "tolerance", None if dv is None else
                               f"{dv:.2g} V (atol {r['atol_V']:.2g} V)",
                               None if dv is None else dv <= r["atol_V"]))
        elif what == "simulate_batch" and r.get("B", 0) >= 10_000:
            out.append(_target(17, f"{r['B']} half-wave transients >= 100x the ngspice loop",
                               None if speedup is None else f"{speedup:.3g}x",
                               None if speedup is None else speedup >= 100))
        elif what.startswith("compile") and r["case"] == "grid k=100":
            out.append(_target(17, "transient compile within 2x of the DC solve's (k = 100)",
                               f"{speedup:.3g}x", speedup <= 2))
        elif r["case"] == "rc_grid k=100" and speedup is not None:
            out.append(_target(17, "k = 100 CLI at default tolerances faster than ngspice, "
                                   "within 5e-2 V", f"{speedup:.3g}x, {dv:.2g} V",
                               speedup > 1 and dv <= 5e-2))
    return out


CHECKS = {"dispatch": dispatch_targets, "circuit": circuit_targets, "scale": scale_targets,
          "robustness": robustness_targets, "sparse": sparse_targets, "latency": latency_targets,
          "grids": grids_targets, "distributed": distributed_targets,
          "transient": transient_targets}


def summary(sections: list[Section]) -> list[dict]:
    """One row per target whose benchmark ran (quick runs mostly give ``not measured``)."""
    out = []
    for section in sections:
        check = CHECKS.get(section.name)
        data = {"sparse": section.tables, "latency": section.tables, "grids": section}.get(
            section.name, section.rows)
        if check is not None and data and not section.failed:
            try:
                out += check(data)
            except (KeyError, TypeError, ValueError) as err:  # a benchmark changed its columns
                out.append(_target(0, f"{section.name}: targets not checked ({err!r})", None, None))
    return out
