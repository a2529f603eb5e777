"""Our command line against ngspice's ``.op`` on the k x k resistor grid with a diode per node.

For each k the deck comes from ``scenarios.circuits.grid_spice(k)`` (the validation decks'
tight ``.options``: reltol=1e-12, vntol=1e-15, abstol=1e-18, gmin=1e-12), written once and
given unchanged to both tools:

* ngspice: ``ngspice -b -r grid.raw grid.cir`` (batch mode, node voltages in a raw file);
* ours: ``python -m scenarios run circuit --input grid.cir --json grid.json`` in a fresh
  process, so start-up, parsing, lowering and compilation are all included.

Each runs as a subprocess; wall time from the parent, CPU time and peak RSS of that child
alone from ``os.wait4``. Node voltages are compared by name (max |dV| over all nodes).
ngspice at k = 180 takes minutes: ``--reuse-ngspice`` keeps its result in ``--workdir`` and
reuses it while the deck is unchanged. Without ngspice on PATH only our side runs.

Run: ``python -m benchmarks.ngspice_grid --k 100 180 [--repeat 3] [--workdir DIR]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TIME = Path("/usr/bin/time").exists()
COLUMNS = ("k", "elements", "unknowns", "ngspice_wall_s", "ngspice_cpu_s", "ngspice_rss_mb",
           "ours_wall_s", "ours_cpu_s", "ours_rss_mb", "speedup", "max_dV", "iterations")


def run_child(argv: list[str], log: Path, cwd: Path | None = None, env=None) -> dict:
    """Run ``argv`` to completion: ``{"wall_s", "cpu_s", "rss_mb", "status"}`` of that child.

    CPU and peak RSS come from ``/usr/bin/time`` when present: a child forked from this
    (JAX-importing) process would otherwise count our own pages in its ``ru_maxrss``.
    """
    stats = log.with_suffix(".time")
    timer = ["/usr/bin/time", "-f", "%U %S %M", "-o", str(stats)] if TIME else []
    with open(log, "w") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(timer + argv, stdout=out, stderr=subprocess.STDOUT, cwd=cwd,
                                env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    proc.returncode = code = os.waitstatus_to_exitcode(status)  # already reaped by wait4
    user, system, rss_kb = usage.ru_utime, usage.ru_stime, usage.ru_maxrss
    if TIME:
        user, system, rss_kb = map(float, stats.read_text().split()[-3:])
    return {"wall_s": wall, "cpu_s": user + system, "rss_mb": rss_kb / 1024, "status": code}


def read_raw(path: Path) -> dict[str, float]:
    """The first point of an ngspice raw file: ``{vector name: value}`` (an ``.op``'s one)."""
    return {name: float(v[0]) for name, v in read_raw_points(path).items()}


def read_raw_points(path: Path) -> dict[str, np.ndarray]:
    """Every point of a real ngspice raw file (binary or ASCII): ``{vector name: values}``."""
    data = path.read_bytes()
    binary = data.find(b"Binary:\n")
    end = binary if binary >= 0 else data.index(b"Values:\n")
    lines = data[:end].decode("latin-1").splitlines()
    count = int(next(ln for ln in lines if ln.startswith("No. Variables")).split(":")[1])
    points = int(next(ln for ln in lines if ln.startswith("No. Points")).split(":")[1])
    first = lines.index("Variables:") + 1
    names = [ln.split()[1].lower() for ln in lines[first:first + count]]
    if binary >= 0:
        values = np.frombuffer(data, "<f8", count * points, binary + len(b"Binary:\n"))
    else:  # per point: its index, then the values
        text = data[end + len(b"Values:\n"):].decode("latin-1").split()
        values = np.asarray([float(t) for i, t in enumerate(text) if i % (count + 1)])
    table = values.reshape(points, count)
    return {name: table[:, i].copy() for i, name in enumerate(names)}


def write_deck(k: int, workdir: Path) -> Path:
    from scenarios.circuits import grid_spice

    deck = workdir / f"grid{k}.cir"
    text = grid_spice(k)
    if not deck.exists() or deck.read_text() != text:
        deck.write_text(text)
    return deck


def run_ngspice(deck: Path, reuse: bool = False, points: bool = False
                ) -> tuple[dict, dict] | None:
    """ngspice's timing and vectors for ``deck``, None without ngspice on PATH: the one
    point of an ``.op`` (``{name: value}``) or, with ``points``, every point of a
    ``.tran`` (``{name: values}``); cached next to the deck when ``reuse``. ``ngspice -b``
    exits with 1 after a ``.tran`` without ``.print``; the raw file is complete then."""
    exe = shutil.which("ngspice")
    if exe is None:
        return None
    read = read_raw_points if points else read_raw
    digest = hashlib.sha256(deck.read_bytes()).hexdigest()[:16]
    raw, meta = deck.with_suffix(".raw"), deck.with_suffix(".ngspice.json")
    if reuse and meta.exists() and raw.exists():
        cached = json.loads(meta.read_text())
        if cached.get("deck") == digest:
            return cached["timing"], read(raw)
    timing = run_child([exe, "-b", "-r", str(raw), str(deck)], deck.with_suffix(".ngspice.log"),
                       cwd=deck.parent)
    if timing["status"] not in (0, 1) or not raw.exists():
        raise RuntimeError(f"ngspice failed on {deck} (status {timing['status']}); see "
                           f"{deck.with_suffix('.ngspice.log')}")
    meta.write_text(json.dumps({"deck": digest, "timing": timing}))
    return timing, read(raw)


def run_ours(deck: Path, repeat: int) -> tuple[dict, dict]:
    """Median timing over ``repeat`` fresh processes of our CLI, and its JSON document."""
    out = deck.with_suffix(".json")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    argv = [sys.executable, "-m", "scenarios", "run", "circuit", "--input", str(deck),
            "--json", str(out)]
    runs = [run_child(argv, deck.with_suffix(".ours.log"), cwd=ROOT, env=env)
            for _ in range(repeat)]
    if any(r["status"] not in (0, 1) for r in runs):
        log = deck.with_suffix(".ours.log").read_text()[-2000:]
        raise RuntimeError(f"our CLI failed on {deck}: {log}")
    timing = {key: statistics.median(r[key] for r in runs) for key in ("wall_s", "cpu_s", "rss_mb")}
    return timing, json.loads(out.read_text())


def compare(doc: dict, vectors: dict[str, float]) -> float:
    """max |V_ours - V_ngspice| over every node of our document (V)."""
    return max(abs(v - vectors[f"v({name.lower()})"]) for name, v in doc["node_voltages"].items())


def measure(k: int, workdir: Path, repeat: int, reuse: bool) -> dict:
    deck = write_deck(k, workdir)
    ngspice = run_ngspice(deck, reuse)
    ours, doc = run_ours(deck, repeat)
    nodes = len(doc["node_voltages"])
    row = {"k": k, "elements": 2 * k * (k - 1) + k * k + 4, "unknowns": nodes + 2,
           "ours_wall_s": ours["wall_s"], "ours_cpu_s": ours["cpu_s"],
           "ours_rss_mb": ours["rss_mb"], "iterations": doc["iterations"],
           "converged": doc["converged"]}
    if ngspice is not None:
        timing, vectors = ngspice
        row.update(ngspice_wall_s=timing["wall_s"], ngspice_cpu_s=timing["cpu_s"],
                   ngspice_rss_mb=timing["rss_mb"], speedup=timing["wall_s"] / ours["wall_s"],
                   max_dV=compare(doc, vectors))
    return row


def markdown(rows: list[dict]) -> str:
    def cell(v):
        if v is None:
            return "n/a"
        if isinstance(v, float):
            return f"{v:.2e}" if abs(v) < 1e-3 and v != 0 else f"{v:.3g}"
        return str(v)

    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cell(r.get(c)) for c in COLUMNS) + " |" for r in rows]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, nargs="+", default=[50, 100], help="grid sizes")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs of our CLI per k (the median is reported); ngspice runs once")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="where decks, raw files and JSON go (default: a temporary directory)")
    parser.add_argument("--reuse-ngspice", action="store_true",
                        help="reuse ngspice's result in --workdir if the deck is unchanged")
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="ngspice-grid-"))
    workdir.mkdir(parents=True, exist_ok=True)
    if shutil.which("ngspice") is None:
        print("note: ngspice is not on PATH: skipping the ngspice runs and the comparison; "
              "only our CLI is timed (install ngspice, e.g. apt-get install ngspice).")
    rows = []
    for k in args.k:
        rows.append(measure(k, workdir, args.repeat, args.reuse_ngspice))
        print(markdown(rows[-1:]) if len(rows) == 1 else markdown(rows[-1:]).splitlines()[-1],
              flush=True)
    print(f"\n{markdown(rows)}\n\n(decks and outputs in {workdir})")
    return 0 if all(r["converged"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
