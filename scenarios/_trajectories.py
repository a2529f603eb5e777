"""Reading a transient's node trajectories on the host."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np


def trajectories(sol: Any) -> Callable[[Any], np.ndarray]:
    """``of(node)``: the (time, size) trajectory of a node of the simulated graph, sliced
    from one host copy of the states (``sol.value(node)`` slices on the device per node:
    2 500 nodes took 2.2 s)."""
    states = np.asarray(sol.x)
    return lambda node: states[:, sol.lowered.locate(node)]
