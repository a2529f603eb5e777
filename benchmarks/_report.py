"""The benchmark report: machine and versions, Markdown tables, plots, ``docs/benchmarks.md``.

A benchmark's result is a :class:`Section` (title, what it measures, rows of dicts, the
columns to show, notes such as skipped peers). :func:`write_report` renders every section
into one Markdown file and saves the plots next to it.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import platform
import sys
from importlib import metadata
from pathlib import Path

LIBRARIES = ("jax", "jaxlib", "numpy", "scipy", "jaxopt", "optimistix", "flax", "equinox", "matplotlib")


@dataclasses.dataclass
class Section:
    """One benchmark's table. ``name`` is its id (``python -m benchmarks --only NAME``)."""

    name: str
    title: str
    intro: str
    rows: list = dataclasses.field(default_factory=list)
    columns: tuple = ()
    notes: list = dataclasses.field(default_factory=list)
    figures: list = dataclasses.field(default_factory=list)  # file names next to the report
    tables: list = dataclasses.field(default_factory=list)  # more (caption, rows, columns)
    seconds: float = 0.0
    failed: bool = False
    measured: str = ""  # when it ran: "YYYY-MM-DD HH:MM", set by ``python -m benchmarks``


def save_sections(path: Path, sections: list[Section], quick: bool) -> None:
    """Keep every section's results (JSON next to the report) so ``--only`` can rerun one."""
    data = {"quick": quick, "sections": {s.name: dataclasses.asdict(s) for s in sections}}
    path.write_text(json.dumps(data, indent=1, default=str))


def load_sections(path: Path, quick: bool) -> dict[str, Section]:
    """Sections saved by an earlier run in the same mode (empty if none or unreadable)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if data.get("quick") != quick:
        return {}
    fields = {f.name for f in dataclasses.fields(Section)}
    return {name: Section(**{k: v for k, v in d.items() if k in fields})
            for name, d in data.get("sections", {}).items()}


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def memory_gib() -> float | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        return None


def machine() -> dict:
    """CPU model, cores, memory, OS and the JAX devices this run used."""
    import jax

    mem = memory_gib()
    devices = jax.devices()
    return {
        "CPU": cpu_model(),
        "cores": str(os.cpu_count()),
        "memory": "unknown" if mem is None else f"{mem:.1f} GiB",
        "OS": f"{platform.system()} {platform.release()}",
        "JAX devices": f"{len(devices)} x {devices[0].platform} ({devices[0].device_kind})",
        "float64": str(bool(jax.config.jax_enable_x64)),
    }


def versions() -> dict:
    """Python and library versions (``not installed`` for missing optional peers)."""
    out = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value).replace("|", "\\|")


def markdown_table(rows: list[dict], columns=()) -> str:
    """A Markdown table of ``rows`` (dicts); columns default to the first row's keys."""
    if not columns:
        columns = tuple(dict.fromkeys(key for row in rows for key in row))
    if not columns:
        return "(no rows)"
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(row.get(c)) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


def render_section(section: Section) -> str:
    parts = [f"## {section.title}", "", section.intro.strip(), ""]
    if section.rows:
        parts += [markdown_table(section.rows, section.columns), ""]
    for caption, rows, columns in section.tables:
        parts += [f"**{caption}**", "", markdown_table(rows, columns), ""]
    for note in section.notes:
        parts.append(f"* {note}")
    if section.notes:
        parts.append("")
    for fig in section.figures:
        parts += [f"![{section.title}]({fig})", ""]
    when = f", measured {section.measured}" if section.measured else ""
    parts.append(f"_({section.name}: {section.seconds:.0f} s{when})_")
    return "\n".join(parts) + "\n"


def header(quick: bool, command: str) -> str:
    mach, vers = machine(), versions()
    when = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    mode = "quick mode: small sizes and few repeats, a smoke test, not figures to quote" \
        if quick else "full sizes"
    lines = [
        "# Benchmarks", "",
        f"Generated by `{command}` on {when} ({mode}); do not edit by hand, rerun it.",
        "Every time is a median of repeats; every ratio compares against a baseline measured in",
        "the same run on the same machine. Compile time is excluded from per-call times",
        "(each call is warmed up first) unless a column says otherwise. Figures measured on a",
        "GPU (`python -m benchmarks.gpu_check`) are in `benchmarks-gpu.md`.", "",
        "**Machine:** " + "; ".join(f"{k}: {v}" for k, v in mach.items()) + ".", "",
        "**Versions:** " + ", ".join(f"{k} {v}" for k, v in vers.items()) + ".", "",
    ]
    return "\n".join(lines) + "\n"


def write_report(path: Path, sections: list[Section], *, quick: bool, summary: list[dict],
                 command: str = "python -m benchmarks") -> str:
    """Write the Markdown report to ``path`` (its figures are already next to it)."""
    text = header(quick, command)
    if summary:
        text += "## Targets at a glance\n\n" + markdown_table(summary) + "\n\n"
    text += "\n".join(render_section(s) for s in sections)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return text


def plotting():
    """``matplotlib.pyplot`` with a file-only backend, or None when matplotlib is missing."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def line_plot(path: Path, panels: dict, *, xlabel: str, ylabel: str) -> bool:
    """Log-log panels ``{panel title: {label: ([x], [y])}}`` side by side, saved to ``path``.

    False (nothing written) when matplotlib is missing or there is nothing to draw."""
    plt = plotting()
    panels = {k: v for k, v in panels.items() if v}
    if plt is None or not panels:
        return False
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.2), squeeze=False)
    for ax, (title, series) in zip(axes[0], panels.items()):
        for label, (xs, ys) in series.items():
            pts = sorted((x, y) for x, y in zip(xs, ys) if x and y)
            if pts:
                ax.plot(*zip(*pts), marker="o", label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
