"""``python -m benchmarks``: run every benchmark, print the tables, rewrite docs/benchmarks.md.

    python -m benchmarks                 # full sizes (tens of minutes on 2 cores)
    python -m benchmarks --quick         # small sizes, under two minutes: a smoke test
    python -m benchmarks --out DIR       # write DIR/benchmarks.md (+ plots) instead of docs/
    python -m benchmarks --only circuit dispatch   # rerun these, keep the others' last results

Peers (optimistix, flax, matplotlib) are optional (``pip install .[bench]``); a missing one is
skipped with a note. A benchmark that raises is reported as failed in its section, the others
still run, and the exit status is 1.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
import traceback
from pathlib import Path

import jax

from . import _suite, _targets
from ._report import (Section, load_sections, log, markdown_table, render_section,
                      save_sections, write_report)

ROOT = Path(__file__).resolve().parents[1]


def run_one(name: str, quick: bool, out: Path) -> Section:
    start = time.perf_counter()
    try:
        section = _suite.BENCHMARKS[name](quick, out)
    except Exception as err:  # noqa: BLE001 - report it, keep running the others
        section = Section(name, f"{name}: FAILED", f"The benchmark raised {type(err).__name__}: {err}",
                          failed=True)
        section.notes.append("Traceback (last lines): `" + " / ".join(
            traceback.format_exc().strip().splitlines()[-3:]).replace("`", "'") + "`")
    section.seconds = time.perf_counter() - start
    return section


def parse(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and few repeats (3-5 min on 2 cores)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs",
                        help="directory for benchmarks.md and its plots (default: docs/)")
    parser.add_argument("--only", nargs="+", choices=sorted(_suite.BENCHMARKS), metavar="NAME",
                        help=f"run only these ({', '.join(_suite.BENCHMARKS)})")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse(argv)
    jax.config.update("jax_enable_x64", True)  # the physics benchmarks need float64
    args.out.mkdir(parents=True, exist_ok=True)
    store = args.out / "benchmarks.json"
    fresh = {}
    for name in args.only or _suite.BENCHMARKS:
        log(f"[benchmarks] {name} ...")
        section = run_one(name, args.quick, args.out)
        section.measured = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
        log(f"[benchmarks] {name}: {'FAILED' if section.failed else 'done'} in {section.seconds:.0f} s")
        print("\n" + render_section(section), flush=True)
        fresh[name] = section
    # --only reruns some benchmarks and keeps the others' last results (same mode), read
    # now rather than at the start so that runs of different sections may overlap
    kept = {**(load_sections(store, args.quick) if args.only else {}), **fresh}
    sections = [kept[name] for name in _suite.BENCHMARKS if name in kept]
    save_sections(store, sections, args.quick)
    command = "python -m benchmarks" + (" --quick" if args.quick else "")
    summary = _targets.summary(sections)
    if summary:
        print("\n## Targets at a glance\n\n" + markdown_table(summary))
    path = args.out / "benchmarks.md"
    write_report(path, sections, quick=args.quick, summary=summary, command=command)
    log(f"[benchmarks] wrote {path}")
    return 1 if any(s.failed for s in sections) else 0


if __name__ == "__main__":
    sys.exit(main())
