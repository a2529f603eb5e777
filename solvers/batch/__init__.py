"""Many members at once: `solve_flat_batch` in cache-sized blocks over the devices of one
process, and sweeps in chunks over every process of a ``jax.distributed`` run, resumable
from a results directory (`SweepMismatchError` refuses another sweep's directory)."""

from ._batch import solve_flat_batch
from ._distributed import initialize_distributed
from ._sweep import process_members
from ._sweep_store import SweepMismatchError

__all__ = ["SweepMismatchError", "initialize_distributed", "process_members", "solve_flat_batch"]
