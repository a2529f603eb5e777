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


_SCIPY_SCRIPT = """
import sys
import jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
import simgraph, solvers
loaded = sorted(m for m in sys.modules if m.startswith("scipy"))
solvers.solve(lambda x, p: x ** 2 - p, jnp.ones(2), jnp.asarray([2.0, 3.0]))
after_dense = sorted(m for m in sys.modules if m.startswith("scipy.sparse"))
pattern = solvers.linear.SparsityPattern.from_dense(jnp.eye(3))
print(len(loaded), len(after_dense), int(pattern.to_scipy().nnz))
"""


def test_scipy_is_imported_when_first_needed():
    # SciPy's sparse modules cost about 120 ms of `import solvers`: a dense solve never
    # needs them (JAX's LAPACK brings scipy.linalg), and the first sparse use imports them.
    out = subprocess.run([sys.executable, "-c", _SCIPY_SCRIPT], capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.split() == ["0", "0", "3"], out.stdout + out.stderr
