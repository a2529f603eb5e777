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


def interleaved_medians(fns: dict[str, Callable[[], object]], *, repeats: int = 7,
                        budget: float = 0.1) -> dict[str, float]:
    """Median seconds per call of each function, timed in alternating batches.

    Alternating the candidates within each repeat spreads machine noise (other jobs, clock
    changes) evenly over them, so their ratios are steadier than separate medians.
    """
    numbers = {}
    for name, fn in fns.items():
        fn()  # warm-up
        start = time.perf_counter()
        fn()
        numbers[name] = max(1, min(1000, int(budget / max(time.perf_counter() - start, 1e-7))))
    samples: dict[str, list] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            for _ in range(numbers[name]):
                fn()
            samples[name].append((time.perf_counter() - start) / numbers[name])
    return {name: statistics.median(times) for name, times in samples.items()}


def block(x):
    """Wait for JAX results (pytree) so timings include the computation."""
    import jax

    return jax.block_until_ready(x)
