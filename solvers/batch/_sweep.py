"""Sweeps: a batch solved in chunks over every process of a ``jax.distributed`` run,
optionally resumable from a results directory, with one global progress count.

Chunk k holds members ``k * chunk`` up to the next chunk's start; process p owns a
contiguous run of chunks (so its members are one range, `process_members`). Each process
solves its own chunks on its own devices (`ChunkSolver`), without waiting for the others;
the processes meet to count progress (when a meter shows it) and to gather the results. A
finished chunk is written at once, so a killed sweep loses at most the chunk each process
was solving.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import time
from typing import Any, Optional

import jax
import jax.numpy as jnp
import numpy as np

from ._batch import DEFAULT_CHUNK, _axes_leaves, _batch_size, _progress, check_chunk_size
from ._distributed import all_counts, gather_rows
from ..roots._solution import FlatSolution
from ..roots._solve import check_arguments
from ._sweep_step import FIELDS, ChunkSolver
from ._sweep_store import SweepMismatchError, SweepStore, digest

log = logging.getLogger("solvers.sweep")


def is_sweep(results_dir: Any, gather: bool) -> bool:
    """Whether ``solve_batch`` runs as a sweep: results written to a directory, results
    kept per process, or a program started as several JAX processes."""
    return results_dir is not None or not gather or jax.process_count() > 1


@dataclasses.dataclass(frozen=True)
class ChunkPlan:
    """``size`` members in chunks of ``chunk``, shared as contiguous runs by ``processes``."""

    size: int
    chunk: int
    processes: int

    @property
    def n_chunks(self) -> int:
        return -(-self.size // self.chunk)

    def bounds(self, k: int) -> tuple[int, int]:
        return k * self.chunk, min((k + 1) * self.chunk, self.size)

    def owned(self, process: int) -> range:
        k, p = self.n_chunks, self.processes
        return range(process * k // p, (process + 1) * k // p)

    def members(self, process: int) -> range:
        chunks = self.owned(process)
        if not chunks:
            return range(0)
        return range(self.bounds(chunks[0])[0], self.bounds(chunks[-1])[1])


def process_members(batch_size: int, chunk_size: Optional[int] = None,
                    process_id: Optional[int] = None,
                    num_processes: Optional[int] = None) -> range:
    """The batch members a process solves (and keeps with ``gather=False``) in a sweep of
    ``batch_size`` members in chunks of ``chunk_size`` (default: `solve_batch`'s): a
    contiguous range; by default this process's in this run."""
    plan = _plan(batch_size, chunk_size, num_processes)
    return plan.members(jax.process_index() if process_id is None else int(process_id))


def _plan(size: int, chunk_size: Optional[int], processes: Optional[int] = None) -> ChunkPlan:
    check_chunk_size(chunk_size)
    chunk = DEFAULT_CHUNK if chunk_size is None else int(chunk_size)
    processes = jax.process_count() if processes is None else int(processes)
    return ChunkPlan(int(size), min(chunk, int(size)), processes)


def sweep_fingerprint(system: Any, keys: tuple, batched: tuple, start: Any,
                      method: Any) -> dict[str, str]:
    """Digests of what a sweep's results depend on, part by part (to say which differs)."""
    labels = "\n".join([repr(system)] + system.unknown_paths() + system.residual_labels())
    structure = (labels, system.structure.persistent_key())  # statics and references too
    return {"structure": digest(structure),
            "element code": digest(system.structure.code_key()),
            "base parameters": digest(system.params),
            "swept parameters": digest((tuple(str(k.key) for k in keys), batched)),
            "start": digest(start), "solver": digest(repr(method))}


def sweep_flat(problem: Any, method: Any, x0: Any, params: Any, params_axes: Any, *,
               chunk_size: Optional[int], results_dir: Any, fingerprint: dict,
               gather: bool, progress: Any,
               about: Optional[dict] = None) -> tuple[FlatSolution, Optional[range]]:
    """Solve every member (arguments as `solve_flat_batch`'s); ``(solution, members)``:
    every member on every process (``gather``; members None) or this process's
    `process_members`. ``fingerprint`` (part name -> digest) identifies the sweep in its
    results directory; ``about`` goes into the manifest as it is."""
    x0, method = check_arguments(x0, method)
    axes = _axes_leaves(params, params_axes)
    size = _batch_size(x0, 0 if x0.ndim == 2 else None, params, axes)
    plan, pid = _plan(size, chunk_size), jax.process_index()
    store = None if results_dir is None else SweepStore(
        results_dir, size, plan.chunk, fingerprint, about).open()
    solver = ChunkSolver(problem, method, x0, params, axes, chunk=plan.chunk)
    results = _finished(store, plan, plan.owned(pid), solver)
    pending = [k for k in plan.owned(pid) if k not in results]
    # progress=False everywhere: no meter, and no collective per step to count members
    meter = _Meter(progress, size) if _counting(progress) else None
    _count(meter, plan, results)
    steps = len(pending) if meter is None else int(all_counts(len(pending)).max())
    for step in range(steps):  # with a meter, a step per chunk of the busiest process
        if step < len(pending):
            k = pending[step]
            members = np.arange(*plan.bounds(k))
            results[k] = out = solver(members)
            if store is not None:
                store.save(*plan.bounds(k), {**out, **solver.inputs(members)})
        _count(meter, plan, results)
    if meter is not None:
        meter.close()
    own = [results[k] for k in plan.owned(pid)] or [solver.empty()]
    mine = {f: np.concatenate([r[f] for r in own]) for f in FIELDS}
    if gather:
        mine = gather_rows(mine, [len(plan.members(p)) for p in range(plan.processes)])
    members = None if gather else plan.members(pid)
    first = None if members is None else members.start  # messages: numbers in the batch
    flat = FlatSolution(**{f: jnp.asarray(v) for f, v in mine.items()}, first_member=first)
    return flat, members


def _counting(progress: Any) -> bool:
    """Whether the processes count finished members (a collective at every step): yes if
    any process has a meter (``progress`` not False), so that all of them take part, as a
    CLI run whose process 0 alone writes to a terminal has it."""
    wanted = progress is not False
    if jax.process_count() == 1:
        return wanted
    return bool(all_counts(int(wanted)).max())


def _finished(store: Optional[SweepStore], plan: ChunkPlan, chunks: range,
              solver: ChunkSolver) -> dict:
    """The chunks of ``chunks`` already in the results directory (read back); a chunk whose
    arrays are not this sweep's solution (shapes, dtypes) is left to be solved again. A
    chunk refused (another sweep's) stops every process, not only the one that owns it
    (the others would wait for it in the next collective until the runtime gives up)."""
    if store is None:
        return {}
    found, refused = {}, None
    try:
        found = _read_back(store, plan, chunks, solver)
    except SweepMismatchError as err:
        refused = err
    if int(all_counts(int(refused is not None)).max()):
        raise refused or SweepMismatchError(
            f"another process of this sweep refused a chunk in {store.directory} (its error "
            "names the file); give a new (or empty) results directory.")
    if found:
        log.info("process %d: skipped %d finished chunk(s) of %d found in %s (chunks %s)",
                 jax.process_index(), len(found), len(chunks), store.directory,
                 ", ".join(map(str, sorted(found))))
    return found


def _read_back(store: SweepStore, plan: ChunkPlan, chunks: range, solver: ChunkSolver) -> dict:
    found, like = {}, None
    for k in chunks:
        start, stop = plan.bounds(k)
        data = store.load(start, stop)
        if data is None:
            continue
        like = solver.empty() if like is None else like  # a trace: only once a chunk is found
        if all(_fits(data.get(f), like[f], stop - start) for f in FIELDS):
            found[k] = {f: data[f] for f in FIELDS}
        else:
            log.warning("%s holds arrays of other shapes or dtypes than this sweep's "
                        "solution: solving it again", store.chunk_path(start, stop))
    return found


def _fits(saved: Optional[np.ndarray], like: np.ndarray, members: int) -> bool:
    """Whether ``saved`` is ``members`` rows shaped and typed as ``like``'s (zero rows)."""
    return (saved is not None and saved.dtype == like.dtype
            and saved.shape == (members,) + like.shape[1:])


def _count(meter: Optional["_Meter"], plan: ChunkPlan, results: dict) -> None:
    if meter is not None:
        meter.update(_done(plan, results))


def _done(plan: ChunkPlan, results: dict) -> int:
    """Members finished on all processes (a collective: every process calls it)."""
    mine = sum(plan.bounds(k)[1] - plan.bounds(k)[0] for k in results)
    return int(all_counts(mine).sum())


class _Meter:
    """The global count of finished members on process 0: a progress meter (an object with
    ``update(n)``, e.g. a tqdm bar; ``True``: a new tqdm bar; None: one on a terminal) and a
    log line per step with the rate and the time left."""

    def __init__(self, progress: Any, total: int):
        self.total, self.done, self.first = total, None, 0
        self.lead = jax.process_index() == 0
        show = sys.stderr.isatty() if progress is None else progress
        self.bar, self.given = None, progress
        if self.lead and hasattr(progress, "update"):
            self.bar = progress
        elif self.lead and show:
            self.bar = _progress(total, desc="sweep", unit="member")
        self.started = time.perf_counter()

    def update(self, done: int) -> None:
        if self.done is None:
            self.first, self.done = done, done
            if self.bar is not None and done:
                self.bar.update(done)
            return
        if self.bar is not None:
            self.bar.update(done - self.done)
        self.done = done
        if self.lead:
            elapsed = time.perf_counter() - self.started
            rate = (done - self.first) / max(elapsed, 1e-9)
            left = (self.total - done) / rate if rate > 0 else float("inf")
            log.info("sweep: %d/%d members (%.0f%%), %.0f members/s, %.0f s left", done,
                     self.total, 100.0 * done / self.total, rate, left)

    def close(self) -> None:
        """Close the bar made here (a meter passed in stays open: it is the caller's)."""
        if self.bar is not None and self.bar is not self.given:
            self.bar.close()
