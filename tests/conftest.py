"""Test-run configuration: float64 and strict rank promotion, as the physics needs."""
import os

import jax

# the command line keeps compiled programs on disk; tests must not write to the home directory
os.environ.setdefault("SIMGRAPH_COMPILATION_CACHE", "0")

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_rank_promotion", "raise")
