"""Timing helpers: medians of repeats, and ratios against a baseline from the same run."""

from __future__ import annotations

import statistics
import time
from typing import Callable


def median_time(fn: Callable[[], object], *, repeats: int = 7, number: int | None = None, budget: float = 0.2) -> float:
    """Median seconds per call of ``fn`` over ``repeats`` batches of ``number`` calls."""
    fn()  # warm-up (compile, caches)
    if number is None:
        start = time.perf_counter()
        fn()
        once = max(time.perf_counter() - start, 1e-7)
        number = max(1, min(1000, int(budget / once)))
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


def block(x):
    """Wait for JAX results (pytree) so timings include the computation."""
    import jax

    return jax.block_until_ready(x)
