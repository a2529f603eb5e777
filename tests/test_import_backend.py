"""Importing the library leaves JAX's backends alone: platforms and memory settings can still
be chosen after ``import simgraph, solvers``."""

import subprocess
import sys

_SCRIPT = """
import jax
import simgraph, solvers
jax.config.update("jax_platforms", "no_such_platform")
try:
    jax.devices()
except RuntimeError:
    print("not initialised")
else:
    print("initialised at import")
"""


def test_import_does_not_initialise_a_backend():
    # Choosing a platform after import must still take effect: a backend started at import
    # would ignore the bogus platform and answer jax.devices().
    out = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.strip() == "not initialised", out.stdout + out.stderr
