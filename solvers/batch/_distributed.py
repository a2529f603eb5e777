"""Several JAX processes (``jax.distributed``): start-up from the environment, the global
batch mesh, and batches built from and read back to process-local rows.

JAX's multi-controller runtime runs one process per host; every process runs the same
program and the devices of all of them form one mesh. A sweep splits its batch over the
processes; each solves its own members on a mesh of its own devices (no process waits for
another between chunks) from input rows it builds itself
(``jax.make_array_from_process_local_data``: a global ``device_put`` would compare every
process's values, and NaN != NaN makes it refuse sweeps with NaN parameters); the results
meet in one all-gather (`gather_rows`).
"""

from __future__ import annotations

import os
from typing import Any, Optional, Sequence

import jax
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec

#: Environment variables read by `initialize_distributed` (one set per process).
ENV_COORDINATOR = "SIMGRAPH_COORDINATOR"
ENV_NUM_PROCESSES = "SIMGRAPH_NUM_PROCESSES"
ENV_PROCESS_ID = "SIMGRAPH_PROCESS_ID"


def initialize_distributed(coordinator_address: Optional[str] = None,
                           num_processes: Optional[int] = None,
                           process_id: Optional[int] = None, **options: Any) -> tuple[int, int]:
    """Join this process to a multi-process JAX run; returns ``(process_id, num_processes)``.

    Arguments left out are read from ``SIMGRAPH_COORDINATOR`` (``host:port`` of process 0),
    ``SIMGRAPH_NUM_PROCESSES`` and ``SIMGRAPH_PROCESS_ID``; with none of them set JAX
    detects a cluster itself (SLURM, Open MPI, TPU pods). CPU collectives go over gloo.
    ``options`` go to ``jax.distributed.initialize`` (e.g. ``heartbeat_timeout_seconds``).
    Call it first, before any other JAX call; calling it again is a no-op.
    """
    if jax.distributed.is_initialized():
        return jax.process_index(), jax.process_count()
    address = coordinator_address or os.environ.get(ENV_COORDINATOR) or None
    count = _env_int(num_processes, ENV_NUM_PROCESSES, 1)
    index = _env_int(process_id, ENV_PROCESS_ID, 0)
    if address is not None:
        _check_address(address)
        if count is None or index is None:
            raise ValueError(f"a coordinator address ({address!r}) needs the process count and "
                             f"this process's id too: set {ENV_NUM_PROCESSES} and "
                             f"{ENV_PROCESS_ID} (or pass num_processes=, process_id=).")
        if not 0 <= index < count:
            raise ValueError(f"process id {index} is outside 0..{count - 1} (there are {count} "
                             f"processes): check {ENV_PROCESS_ID} and {ENV_NUM_PROCESSES}.")
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    try:
        jax.distributed.initialize(address, count, index, **options)
    except ValueError as err:
        if address is not None:
            raise
        raise ValueError(f"no multi-process run to join ({err}): set {ENV_COORDINATOR} "
                         f"(host:port of process 0), {ENV_NUM_PROCESSES} and {ENV_PROCESS_ID} "
                         "for each process, or start them under a cluster manager JAX "
                         "detects (SLURM, Open MPI).") from None
    return jax.process_index(), jax.process_count()


def _env_int(value: Optional[int], name: str, minimum: int) -> Optional[int]:
    text = os.environ.get(name) if value is None else value
    if text is None or text == "":
        return None
    try:
        number = int(text)
    except (TypeError, ValueError):
        number = None
    if number is None or number < minimum:
        raise ValueError(f"{name} (or its argument) must be an integer >= {minimum}, got "
                         f"{text!r}.")
    return number


def _check_address(address: str) -> None:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"coordinator address {address!r} must be HOST:PORT (process 0's "
                         f"host and a free port), e.g. 10.0.0.1:4321; see {ENV_COORDINATOR}.")


def batch_mesh(local: bool = False) -> Mesh:
    """A 1-D mesh over every device of every process, process by process (the rows of
    process p's devices are one contiguous block of a global batch), or with ``local`` over
    this process's devices only (a computation no other process takes part in)."""
    devices = jax.local_devices() if local else jax.devices()
    devices = sorted(devices, key=lambda d: (d.process_index, d.id))
    return Mesh(np.asarray(devices), ("batch",))


def spec(axis: Optional[int]) -> PartitionSpec:
    """Split along the mesh for a batched leaf (axis 0), replicated for an unbatched one."""
    return PartitionSpec() if axis is None else PartitionSpec("batch")


def from_local(mesh: Mesh, leaves: Sequence[Any], axes: Sequence[Optional[int]]) -> list:
    """Global arrays from this process's rows (batched leaves) or whole values (the rest):
    no cross-process comparison of values, so NaN parameters pass through."""
    processes = len({d.process_index for d in mesh.devices.flat})
    out = []
    for leaf, axis in zip(leaves, axes):
        leaf = np.asarray(leaf)
        leaf = leaf.astype(jax.dtypes.canonicalize_dtype(leaf.dtype), copy=False)
        shape = leaf.shape if axis is None else (leaf.shape[0] * processes,) + leaf.shape[1:]
        out.append(jax.make_array_from_process_local_data(
            NamedSharding(mesh, spec(axis)), leaf, shape))
    return out


def to_local(tree: Any) -> Any:
    """This process's rows of batch-split global arrays, as numpy, in batch order."""
    def rows(a):
        shards = sorted(a.addressable_shards, key=lambda s: s.index[0].start or 0)
        return np.concatenate([np.asarray(s.data) for s in shards])
    return jax.tree_util.tree_map(rows, tree)


def all_counts(value: int) -> np.ndarray:
    """``value`` of every process, in process order (a collective: every process calls it)."""
    if jax.process_count() == 1:
        return np.asarray([value])
    return np.asarray(multihost_utils.process_allgather(np.asarray([value]))).reshape(-1)


def gather_rows(tree: Any, counts: Sequence[int]) -> Any:
    """Every process's rows (process p holds ``counts[p]``) on every process, in process
    order; rows are padded to the longest for the collective and trimmed after."""
    if jax.process_count() == 1:
        return tree
    longest = max(counts)

    def pad(a):
        a = np.asarray(a)
        if a.shape[0] == longest:
            return a
        return np.concatenate([a, np.zeros((longest - a.shape[0],) + a.shape[1:], a.dtype)])

    def trim(every):
        every = np.asarray(every)
        if all(n == longest for n in counts):
            return every
        return np.concatenate([every[p * longest: p * longest + n] for p, n in enumerate(counts)])

    every = multihost_utils.process_allgather(jax.tree_util.tree_map(pad, tree), tiled=True)
    return jax.tree_util.tree_map(trim, every)  # one collective for the whole tree
