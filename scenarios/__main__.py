"""``python -m scenarios list | run NAME [...] | demo``: see :mod:`scenarios._cli`.

The command line is an application, so it switches JAX to float64 as the physics needs
(importing the library never does), and it tunes the garbage collector: a large case
(25 000 buses) holds millions of objects, and the default thresholds re-scan all of them a
dozen times (4 s of a 15 s run); collecting the young generation only every 100 000
allocations and the oldest one almost never costs 0.5 s. The process ends after one run,
so little garbage outlives it.
"""
import gc

import jax

gc.set_threshold(100_000, 50, 1000)
jax.config.update("jax_enable_x64", True)

from ._cli import main  # noqa: E402

raise SystemExit(main())
