"""``python -m scenarios``: list the scenarios, run one (sweep, plot, JSON), or take the tour.

Exit codes: 0 success, 1 a solve did not converge (the table says which), 2 a usage or input
error (one line on stderr, no traceback).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ._cli_domains import SCENARIOS, ScenarioUnavailable
from ._cli_report import Report, SweepSpec
from ._json_text import json_text
from ._tables import pandas, write_csv

__all__ = ["main", "parse_sweep"]

#: A directory for the compilation cache, or 0/off to run without it.
CACHE_ENV = "SIMGRAPH_COMPILATION_CACHE"


class UsageError(Exception):
    """A command-line mistake: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line instead of usage + message
        raise UsageError(f"{message} (see python -m scenarios --help)")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m scenarios", description="Physics scenarios solved as "
                     "simgraph object graphs.")
    parser.add_argument("--no-compile-cache", action="store_true",
                        help="do not reuse compiled solves from earlier runs (the cache: "
                        "$SIMGRAPH_COMPILATION_CACHE, else ~/.cache/simgraph/jax; 0 turns it off)")
    sub = parser.add_subparsers(dest="command", metavar="{list,run,demo}", parser_class=_Parser)
    sub.add_parser("list", help="list the scenarios and their shipped examples")
    run = sub.add_parser("run", help="run one scenario")
    run.add_argument("name", help=f"one of {', '.join(SCENARIOS)}")
    run.add_argument("--input", metavar="FILE", help="input file (default: the shipped example)")
    run.add_argument("--sweep", metavar="PARAM=START:STOP:COUNT",
                     help="solve for COUNT evenly spaced values of PARAM in batched solves")
    run.add_argument("--plot", metavar="FILE.png", help="write a plot (needs matplotlib)")
    run.add_argument("--json", metavar="FILE", help="write the solution as JSON (strict: "
                     "null where a value is NaN or infinite)")
    run.add_argument("--csv", metavar="DIR", help="write the result tables as CSV files into "
                     "DIR, one per table (needs pandas)")
    run.add_argument("--flat-start", action="store_true",
                     help="powerflow: start from Vm = 1, Va = the slack angle instead of the "
                     "case file's voltages (other starts are tried if Newton fails)")
    run.add_argument("--eps", action="store_true",  # water's hook: scenarios/water/_run.py
                     help="water: extended-period run over the file's [TIMES] DURATION (tank "
                     "levels, patterns, simple controls), JSON on the report grid")
    run.add_argument("--distributed", action="store_true",
                     help="one of several processes (jax.distributed, set up from "
                     "SIMGRAPH_COORDINATOR, SIMGRAPH_NUM_PROCESSES, SIMGRAPH_PROCESS_ID): the "
                     "--sweep is split over all of them; process 0 prints and writes files")
    demo = sub.add_parser("demo", help="a short tour of every scenario on its shipped example")
    demo.add_argument("--out", metavar="DIR", help="where to write the plots (default: a new "
                      "temporary directory)")
    return parser


MAX_SWEEP_POINTS = 10_000_000  # a float64 per point and member state: ~GBs, not TBs


def parse_sweep(text: str) -> SweepSpec:
    """``PARAM=START:STOP:COUNT`` -> :class:`SweepSpec` (COUNT evenly spaced values)."""
    param, eq, spec = text.partition("=")
    parts = spec.split(":")
    hint = "expected PARAM=START:STOP:COUNT, e.g. heater=0:200:21"
    if not eq or not param.strip() or len(parts) != 3:
        raise UsageError(f"bad --sweep {text!r}: {hint}")
    try:
        start, stop, count = float(parts[0]), float(parts[1]), int(parts[2])
    except ValueError:
        raise UsageError(f"bad --sweep {text!r}: START and STOP must be numbers and COUNT an "
                         f"integer; {hint}") from None
    if not (math.isfinite(start) and math.isfinite(stop)) or count < 1:
        raise UsageError(f"bad --sweep {text!r}: START and STOP must be finite and COUNT >= 1")
    if count > MAX_SWEEP_POINTS:
        raise UsageError(f"bad --sweep {text!r}: COUNT {count} is more than the "
                         f"{MAX_SWEEP_POINTS:,} points one run holds; split the range over "
                         "several runs")
    return SweepSpec(param.strip(), np.linspace(start, stop, count))


def _scenario(name: str):
    if name not in SCENARIOS:
        raise UsageError(f"unknown scenario {name!r}; choose one of {', '.join(SCENARIOS)}")
    return SCENARIOS[name]


def _need_matplotlib():
    try:
        import matplotlib
    except ImportError:
        raise UsageError("--plot needs matplotlib, which is not installed: "
                         "pip install 'simgraph[plot]' (or pip install matplotlib)") from None
    return matplotlib


def _need_pandas() -> None:
    try:
        pandas()
    except ImportError as err:
        raise UsageError(f"--csv: {err}") from None


def write_plot(report: Report, path: str | os.PathLike) -> bool:
    """Draw ``report`` into ``path`` (PNG etc.); False if no plot helps for this run."""
    if report.draw is None:
        return False
    _need_matplotlib()
    from matplotlib.figure import Figure  # no pyplot: no GUI backend, no global state
    fig = Figure(figsize=(7, 4.5), layout="constrained")
    report.draw(fig)
    fig.savefig(path, dpi=110)
    return True


def _write_json(report: Report, path: str | os.PathLike) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(json_text(report.json) + "\n")


def cmd_list() -> int:
    width = max(map(len, SCENARIOS))
    for s in SCENARIOS.values():
        flag = "" if s.available() else "  [not available yet]"
        print(f"{s.name:<{width}}  {s.description}{flag}")
        sweep = f"; sweep e.g. --sweep {s.sweep_hint}" if s.sweep_hint else ""
        print(f"{'':<{width}}  example: {s.example.relative_to(s.example.parents[3])}{sweep}")
    return 0


def cmd_run(args) -> int:
    scenario = _scenario(args.name)
    sweep = parse_sweep(args.sweep) if args.sweep else None
    if args.plot:
        _need_matplotlib()
    if args.csv:
        _need_pandas()
        if Path(args.csv).exists() and not Path(args.csv).is_dir():
            raise UsageError(f"--csv {args.csv}: a file of that name exists; --csv takes a "
                             "folder to write the tables into (it is created if missing)")
    if args.input is not None and not Path(args.input).is_file():
        raise UsageError(f"input file {args.input!r} does not exist (or is not a file)")
    for flag, out in (("--json", args.json), ("--plot", args.plot)):
        _check_writable(flag, out)
    if args.plot:
        _check_plot_format(args.plot)
    options = {"start": "flat"} if args.flat_start else {}
    if args.eps:  # water's extended-period hook
        if args.name != "water":
            raise UsageError("--eps is for the water scenario only")
        options["eps"] = True
    report = scenario.run(args.input, sweep, progress=sys.stderr.isatty(), **options)
    print(report.table())
    if args.json:
        _write_json(report, args.json)
        print(f"wrote {args.json}")
    if args.csv:
        written = write_csv(report.tables(), args.csv) if report.tables else []
        print(f"wrote {', '.join(map(str, written))}" if written else
              f"no tables for this run of {scenario.name}")
    if args.plot:
        if write_plot(report, args.plot):
            print(f"wrote plot {args.plot}")
        else:
            print(f"no plot for this run of {scenario.name} (a --sweep gives one)")
    return 0 if report.converged else 1


def _check_plot_format(path: str) -> None:
    """Refuse, before solving, a plot file whose extension matplotlib cannot write (after
    ``_need_matplotlib``)."""
    from matplotlib.figure import Figure
    formats = Figure().canvas.get_supported_filetypes()
    suffix = Path(path).suffix.lstrip(".").lower()
    if suffix not in formats:
        what = f"'.{suffix}' files" if suffix else "a file without an extension"
        known = ", ".join("." + f for f in sorted(formats))
        raise UsageError(f"--plot {path}: matplotlib cannot write {what}; name the file with "
                         f"one of {known}")


def _check_writable(flag: str, out: str | None) -> None:
    """Refuse an output path whose folder is missing before solving, not after."""
    if out is None:
        return
    folder = Path(out).parent
    if not folder.is_dir():
        raise UsageError(f"{flag} {out}: the folder {str(folder)!r} does not exist; create it first")
    if Path(out).is_dir():
        raise UsageError(f"{flag} {out}: is a folder; give a file name")


def cmd_demo(args) -> int:
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="simgraph-demo-"))
    out.mkdir(parents=True, exist_ok=True)
    plotting = _has_matplotlib()
    status, written = 0, []
    for scenario in SCENARIOS.values():
        start = time.perf_counter()
        sweep = parse_sweep(scenario.demo_sweep) if scenario.demo_sweep else None
        what = f" --input {scenario.demo_input.name}" if scenario.demo_input else ""
        what += f" --sweep {scenario.demo_sweep}" if sweep else ""
        print(f"\n== {scenario.name}{what}: {scenario.description}")
        try:
            report = scenario.run(scenario.demo_input, sweep, progress=False)
        except ScenarioUnavailable as err:
            print(f"   skipped: {err}")
            continue
        except Exception as err:  # noqa: BLE001 -- one broken domain must not end the tour
            print(f"   failed: {type(err).__name__}: {_one_line(err)}")
            status = 1
            continue
        print(report.table())
        if plotting and write_plot(report, out / f"{scenario.name}.png"):
            written.append(out / f"{scenario.name}.png")
        print(f"   ({time.perf_counter() - start:.1f} s)")
        status = max(status, 0 if report.converged else 1)
    if written:
        print(f"\nplots written to {out}: {', '.join(p.name for p in written)}")
    elif not plotting:
        print("\nno plots: matplotlib is not installed (pip install 'simgraph[plot]')")
    return status


def _has_matplotlib() -> bool:
    try:
        _need_matplotlib()
    except UsageError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    from simgraph import GraphError
    from solvers import SolveError
    from ._errors import FormatError
    try:
        args = _parser().parse_args(argv)
        if args.command is None:
            raise UsageError("give a command: list, run NAME or demo")
        _compilation_cache(not args.no_compile_cache)
        if args.command == "list":
            return cmd_list()
        if args.command == "run" and args.distributed:
            return _distributed(cmd_run, args)
        return cmd_run(args) if args.command == "run" else cmd_demo(args)
    except (UsageError, FormatError, GraphError, ScenarioUnavailable, ValueError, OSError) as err:
        print(f"error: {_one_line(err)}", file=sys.stderr)
        return 2
    except KeyError as err:  # bad names (e.g. a --sweep parameter): the message is args[0]
        print(f"error: {_one_line(err.args[0] if err.args else err)}", file=sys.stderr)
        return 2
    except SolveError as err:  # a run that cannot go on (a transient or EPS step failed)
        print(f"error: {_one_line(err)}", file=sys.stderr)
        return 1


def _compilation_cache(enabled: bool) -> None:
    """Reuse compiled solves across runs (``solvers.enable_compilation_cache``) unless
    ``--no-compile-cache`` or ``$SIMGRAPH_COMPILATION_CACHE=0``; a path there is the
    directory. A cache that cannot be set up only costs compile time: warn and go on."""
    import solvers
    value = os.environ.get(CACHE_ENV, "").strip()
    if not enabled or value.lower() in ("0", "off", "false", "no"):
        return
    try:
        solvers.enable_compilation_cache(value or None)
    except (OSError, ValueError) as err:
        print(f"warning: no compilation cache: {_one_line(err)}", file=sys.stderr)
def _distributed(command, args) -> int:
    """Run ``command`` as one process of a jax.distributed run; only process 0 prints."""
    import solvers
    if solvers.initialize_distributed()[0] == 0:
        return command(args)
    args.json = args.plot = None
    with contextlib.redirect_stdout(io.StringIO()):
        return command(args)


def _one_line(err) -> str:
    text = str(err).strip()
    if isinstance(err, OSError) and err.filename:
        text = f"{err.strerror or text}: {err.filename}"
    return " ".join(text.split())
