"""Transients (issue 17): the CLI on a ``.tran`` deck against ngspice's recorded run, a batch
of half-wave rectifiers with different loads, and compile time against the DC solve.

* ``deck`` rows: ``python -m scenarios run circuit --input DECK --json OUT`` in a fresh
  process (start-up, parsing, lowering and compilation included) on the shared
  ``rc_grid_k30`` reference (``../shared/validation/transient``; the small ``rc_step`` deck
  in quick mode), compared on the reference grid with ngspice-39's waveforms; ngspice's
  wall time on the deck (its tight tolerances) is measured in this run where ngspice is on
  PATH, else the one recorded in the reference JSON; ``speedup`` = ngspice_s / ours_s.
* ``batch`` rows: ``solvers.simulate_batch`` over B load resistances of the ``half_wave``
  deck at ngspice's default tolerances (reltol 1e-3, vntol 1e-6, tmax 20 us), one compiled
  call; ``solves_per_s`` = B / warm wall time; against ngspice once per member
  (``ngspice_s`` = B x one process's time on this deck at its default tolerances: the
  median of 7 processes in this run where ngspice is on PATH, else the recorded time).
* ``diffrax`` row: the same rectifier written as a one-unknown ODE (node ``a`` eliminated,
  ``_transient_peers``), diffrax's ``Kvaerno5`` vmapped over B loads in one jit, at the
  same tolerances and step cap; ``max_dV`` compares its V(out) with ours.
* ``compile`` rows: first-call minus warm time of ``simulate`` and of the jitted ``solve``
  (the DC operating point's whole Newton, compiled as the transient compiles it) on the
  ``grid_netlist(k)`` resistor-diode grid with a capacitor per node; the note adds the
  eager DC solve's, which steps Newton from the host and compiles one step only.
* ``rc_grid k=100``: the CLI on a 100 x 100 deck of the ``rc_grid_k30`` construction
  (``_rc_grid_deck``, about 30 800 elements) at ngspice's default tolerances. Where ngspice
  is on PATH it runs the same deck in this run and ``max_dV`` compares the two at ngspice's
  own time points; else against ngspice's recorded 174 s on its own deck of the
  construction, with ``max_dV`` against our run at reltol 1e-6. The issue's bound is 5e-2 V
  of ngspice.

Run: ``python -m benchmarks.transient [--quick]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from .ngspice_grid import run_child, run_ngspice

ROOT = Path(__file__).resolve().parents[1]
SHARED = next((p / "shared" / "validation" / "transient" for p in ROOT.parents
               if (p / "shared" / "validation" / "transient").is_dir()), ROOT / "missing")
TESTS = ROOT / "tests" / "data" / "transient"
COLUMNS = ("case", "what", "B", "ours_s", "ngspice_s", "speedup", "solves_per_s", "max_dV",
           "atol_V", "steps", "note")


def _reference(name: str) -> tuple[Path, dict] | None:
    for folder, data in ((SHARED / "netlists", SHARED / "data"), (TESTS, TESTS)):
        deck, ref = folder / f"{name}.cir", data / f"{name}.json"
        if deck.exists() and ref.exists():
            return deck, json.loads(ref.read_text())
    return None


def _cli_waveforms(deck: Path, tmp: Path, name: str) -> tuple[dict, dict]:
    """``(run_child stats, JSON document or {} if it failed)`` of the CLI on ``deck``, in a
    fresh process writing into ``tmp``."""
    out = tmp / f"{name}.json"
    stats = run_child([sys.executable, "-m", "scenarios", "run", "circuit", "--input",
                       str(deck), "--json", str(out)], tmp / f"{name}.log", cwd=ROOT)
    return stats, (json.loads(out.read_text()) if out.exists() else {})


def deck_row(name: str) -> dict:
    """The CLI on one deck in a fresh process, against the ngspice reference."""
    found = _reference(name)
    if found is None:
        return {"case": name, "what": "cli", "note": "skipped: reference not found"}
    deck, ref = found
    with tempfile.TemporaryDirectory() as tmp:
        stats, doc = _cli_waveforms(deck, Path(tmp), "out")
    if stats["status"] != 0 or not doc:
        return {"case": name, "what": "cli", "ours_s": stats["wall_s"], "note": "failed"}
    t, rt = np.asarray(doc["time"]), np.asarray(ref["time"])
    i, j = np.nonzero(np.isclose(rt[:, None], t[None, :], rtol=0, atol=1e-15))
    dv = max(float(np.max(np.abs(np.asarray(doc["node_voltages"][k])[j] - np.asarray(v)[i])))
             for k, v in ref["node_voltages"].items())
    ngspice, note = ref.get("ngspice_wall_s"), "ngspice time recorded in the reference"
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / deck.name
        copy.write_text(deck.read_text())
        ran = run_ngspice(copy, points=True)
    if ran:
        ngspice, note = ran[0]["wall_s"], "ngspice on the deck in this run"
    atol = ref.get("suggested_checker_atol_V", ref.get("accuracy", {}).get("suggested_checker_atol_V"))
    return {"case": name, "what": "cli (fresh process)", "ours_s": stats["wall_s"],
            "ngspice_s": ngspice, "speedup": ngspice / stats["wall_s"] if ngspice else None,
            "max_dV": dv, "atol_V": atol, "steps": doc.get("accepted_steps"),
            "note": note if ngspice else ""}


#: ngspice's recorded time on the 100 x 100 deck of the rc_grid_k30 construction at its
#: default tolerances (../shared/validation/transient/README.md).
NGSPICE_K100_DEFAULT_S = 174.0


def _max_dv_at(deck: Path, vectors: dict) -> float:
    """max |V_ours - V_ngspice| over every node at ngspice's own time points, ours from
    `simulate_circuit` on ``deck`` with its output at those times (our integrator's
    interpolant: interpolating ngspice's points, up to tmax apart, onto our grid instead
    adds errors of its own, 0.07 V on the k = 100 grid where both runs agree within 0.015 V
    at ngspice's points)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    from scenarios.circuits import simulate_circuit

    ours = simulate_circuit(deck, times=vectors["time"]).node_voltages
    return max(float(np.max(np.abs(np.asarray(v) - vectors[f"v({n.lower()})"])))
               for n, v in ours.items())


def large_grid_row(k: int = 100, seed: int = 8100) -> dict:
    """The CLI on a k x k deck of the rc_grid_k30 construction (`_rc_grid_deck`) at ngspice's
    default tolerances, in a fresh process, against ngspice on the same deck in this run
    where ngspice is on PATH (else its recorded time on its own deck of the construction,
    and the accuracy against our own run at reltol 1e-6). The issue asks for the answer
    within 5e-2 V of ngspice's default run."""
    from ._rc_grid_deck import rc_grid_deck

    tight_options = "reltol=1e-6 abstol=1e-12 vntol=1e-9 chgtol=1e-16"
    with tempfile.TemporaryDirectory() as tmp:
        decks = {"default": rc_grid_deck(k, seed), "tight": rc_grid_deck(k, seed, tight_options)}
        for name, text in decks.items():
            (Path(tmp) / f"{name}.cir").write_text(text)
        stats, doc = _cli_waveforms(Path(tmp) / "default.cir", Path(tmp), "default")
        ran = run_ngspice(Path(tmp) / "default.cir", points=True) if doc else None
        tight, dv = None, None
        if ran:
            dv = _max_dv_at(Path(tmp) / "default.cir", ran[1])
        elif doc:
            _, tight = _cli_waveforms(Path(tmp) / "tight.cir", Path(tmp), "tight")
    if not doc or not (tight or ran):
        return {"case": f"rc_grid k={k}", "what": "cli (fresh process)", "note": "failed"}
    row = {"case": f"rc_grid k={k}", "what": "cli (fresh process), default tolerances",
           "ours_s": stats["wall_s"], "atol_V": 5e-2, "steps": doc.get("accepted_steps")}
    if ran:
        timing, vectors = ran
        return {**row, "ngspice_s": timing["wall_s"], "speedup": timing["wall_s"] / stats["wall_s"],
                "max_dV": dv,
                "note": f"seed {seed}; ngspice on the same deck in this run; max_dV against it "
                        f"at its {len(vectors['time'])} time points"}
    dv = max(float(np.max(np.abs(np.asarray(doc["node_voltages"][n]) - np.asarray(v))))
             for n, v in tight["node_voltages"].items())
    ngspice = NGSPICE_K100_DEFAULT_S if k == 100 else None
    return {**row, "ngspice_s": ngspice, "speedup": ngspice / stats["wall_s"] if ngspice else None,
            "max_dV": dv,
            "note": f"seed {seed}, our own deck of the construction; max_dV against our run at "
                    "reltol 1e-6; ngspice: its recorded time on its own deck of this construction"
                    if ngspice else f"seed {seed}; max_dV against our run at reltol 1e-6"}


def batch_row(size: int, repeats: int, chunk_size: int | None = None) -> dict:
    """``size`` half-wave rectifiers (loads 500-2000 ohm) in one ``simulate_batch`` call
    (``chunk_size``: its members per pass; None: its default)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    import solvers

    _, ref = _reference("half_wave")
    netlist, system, cfg = _half_wave_setup()
    tran = netlist.analyses[0]
    loads = {".resistors['RL'].r": np.linspace(500.0, 2000.0, size)}
    grid = tran.times()
    call = lambda: solvers.simulate_batch(system, loads, grid, t0=0.0, integrator=cfg,  # noqa: E731
                                          chunk_size=chunk_size)
    sol = call()
    np.asarray(sol.x)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        np.asarray(call().x)
        times.append(time.perf_counter() - start)
    warm = statistics.median(times)
    per_member, source = _ngspice_member_s(_reference("half_wave")[0], ref)
    loop = per_member * size if per_member else None
    ok = int(np.sum(np.asarray(sol.converged)))
    what = "simulate_batch" + (f" chunk_size={chunk_size}" if chunk_size else "")
    return {"case": "half_wave", "what": what, "B": size, "ours_s": warm,
            "ngspice_s": loop, "speedup": loop / warm if loop else None,
            "solves_per_s": size / warm, "steps": int(np.median(np.asarray(sol.n_steps))),
            "note": f"{ok}/{size} reached tstop; ngspice loop = B x {per_member:.4g} s, "
                    f"{source} (default tolerances)" if per_member else
                    f"{ok}/{size} reached tstop; no ngspice time"}


def _ngspice_member_s(deck: Path, ref: dict, runs: int = 7) -> tuple[float | None, str]:
    """Seconds of one ngspice process on the half-wave deck at its default tolerances:
    the median of ``runs`` in this run where ngspice is on PATH, else the reference's
    recorded time."""
    recorded = ref.get("default_tolerance_run", {})
    if shutil.which("ngspice") is None:
        return recorded.get("wall_s"), "its recorded time"
    defaults = {"reltol": 1e-3, "abstol": 1e-12, "vntol": 1e-6, "chgtol": 1e-14, "gmin": 1e-12}
    options = " ".join(f"{k}={v:g}" for k, v in recorded.get("options", defaults).items())
    text = "\n".join(f".options {options}" if line.lower().startswith(".options") else line
                     for line in deck.read_text().splitlines()) + "\n"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "half_wave.cir"
        path.write_text(text)
        times = [run_ngspice(path, points=True)[0]["wall_s"] for _ in range(runs)]
    return statistics.median(times), f"the median of {runs} processes in this run"


def _half_wave_setup():
    """The half_wave deck at ngspice's default tolerances: (netlist, System, Integrator)."""
    import solvers
    from scenarios.circuits import build_circuit, integrator_for, read_netlist

    deck, _ = _reference("half_wave")
    netlist = read_netlist(deck)
    loose = {**netlist.options, "reltol": 1e-3, "vntol": 1e-6, "abstol": 1e-12}
    netlist = type(netlist)(netlist.title, netlist.elements, netlist.models, netlist.analyses,
                            loose, netlist.temperature)
    tran = netlist.analyses[0]
    system = solvers.System.build(build_circuit(netlist, transient=tran))
    return netlist, system, integrator_for(netlist, system, tran, max_steps=20000)


def diffrax_row(size: int, repeats: int) -> dict:
    """diffrax's Kvaerno5 on the half-wave rectifier as an ODE (`_transient_peers`), vmapped
    over ``size`` loads in one jit, at the same tolerances and step cap (``dtmax`` = the
    deck's tmax, which sets ngspice's and our steps). ``max_dV`` is V(out) against
    ``simulate_batch`` at every load."""
    import jax

    jax.config.update("jax_enable_x64", True)
    if importlib.util.find_spec("diffrax") is None:
        return {"case": "half_wave", "what": "diffrax Kvaerno5 (vmap)", "B": size,
                "note": "skipped: diffrax is not installed (pip install .[bench])"}
    import solvers

    from ._transient_peers import HalfWave, diffrax_batch

    netlist, system, cfg = _half_wave_setup()
    tran = netlist.analyses[0]
    grid, loads = np.asarray(tran.times()), np.linspace(500.0, 2000.0, size)
    peer = diffrax_batch(HalfWave.from_netlist(netlist), loads, grid, cfg.rtol, 1e-6,
                         tran.tmax, repeats)
    # every load: the batch of `batch_row` when the sizes agree (quick mode), its program reused
    ours = solvers.simulate_batch(system, {".resistors['RL'].r": loads}, grid, t0=0.0,
                                  integrator=cfg)
    out = system.locate(".nodes['out']")
    dv = float(np.max(np.abs(np.asarray(ours.x)[:, :, out].reshape(size, -1) - peer["ys"])))
    return {"case": "half_wave", "what": "diffrax Kvaerno5 (vmap)", "B": size,
            "solves_per_s": size / peer["seconds"], "max_dV": dv,
            "steps": int(np.median(peer["steps"])),
            "note": f"diffrax {peer['seconds']:.3g} s for B (warm); "
                    f"{int(peer['ok'].sum())}/{size} succeeded; the same ODE, rtol "
                    f"{cfg.rtol:g}, atol 1e-6 V, dtmax {tran.tmax:g} s; max_dV: V(out) "
                    "against simulate_batch"}


def compile_row(k: int) -> dict:
    """Compile time of a transient and of the DC solve on a k x k grid with capacitors."""
    import jax

    jax.config.update("jax_enable_x64", True)
    import solvers
    from scenarios.circuits import Capacitor, Transient, build_circuit, grid_netlist

    base = grid_netlist(k)
    caps = tuple(Capacitor(f"C{n}", n, "0", 1e-12) for n in base.nodes)
    tran = Transient(1e-9, 1e-7)
    netlist = type(base)(base.title, base.elements + caps, base.models, (tran,), base.options,
                         base.temperature)
    graph = build_circuit(netlist, transient=tran)
    system = solvers.System.build(graph)

    def twice(fn):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        first = time.perf_counter() - start
        start = time.perf_counter()
        jax.block_until_ready(fn())
        return first - (time.perf_counter() - start)

    newton = solvers.Newton(linear_solver=solvers.default_method(system).linear_solver)
    # the whole Newton compiled, as the transient compiles it inside its time loop (an eager
    # solve on the host LU compiles only one step's F and J: `_host_newton`)
    compiled = jax.jit(lambda s: solvers.solve(s, newton).x)
    dc = twice(lambda: compiled(system))
    eager = twice(lambda: solvers.solve(system, newton).x)
    cfg = solvers.Integrator(hmax=1e-9, max_steps=500, save_steps=False)
    tr = twice(lambda: solvers.simulate(system, np.linspace(0.0, 1e-7, 11), integrator=cfg).x)
    return {"case": f"grid k={k}", "what": "compile: transient / DC", "ours_s": tr,
            "ngspice_s": None, "speedup": tr / dc, "steps": None,
            "note": f"compiled DC Newton {dc:.2f} s (the eager, host-stepped DC solve "
                    f"{eager:.2f} s); ratio target <= 2"}


def run(quick: bool = False) -> list[dict]:
    rows = [deck_row("rc_step" if quick else "rc_grid_k30")]
    rows.append(batch_row(10 if quick else 10_000, 1 if quick else 3))
    rows.append(diffrax_row(10 if quick else 1000, 1 if quick else 3))
    rows.append(compile_row(10 if quick else 100))
    rows.append(large_grid_row(10 if quick else 100))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    for row in run(parser.parse_args().quick):
        print(row)


if __name__ == "__main__":
    main()
