"""Test-run configuration: float64 and strict rank promotion, as the physics needs."""
import gc
import os
import pathlib

import jax
import pytest

# the command line keeps compiled programs on disk; tests must not write to the home directory
os.environ.setdefault("SIMGRAPH_COMPILATION_CACHE", "0")

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_rank_promotion", "raise")


@pytest.fixture(autouse=True)
def _no_persistent_compilation_cache():
    """Fail the test that turns JAX's persistent compilation cache on in the test process:
    JAX decides once per process whether to use it, so it would stay on for every later
    test of this worker (writing compiled programs into a deleted temporary directory)."""
    yield
    assert jax.config.jax_compilation_cache_dir is None, (
        "this test left JAX's persistent compilation cache on; test the CLI's decision with "
        "solvers.enable_compilation_cache mocked, or the cache itself in a subprocess")


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Drop JAX's compiled programs after each test file. Each CPU executable holds about six
    memory mappings; a worker that keeps every program of half the suite passes Linux's
    ``vm.max_map_count`` (65 530) and dies inside a later XLA compile (SIGSEGV or abort)."""
    yield
    jax.clear_caches()
    gc.collect()
    maps = pathlib.Path("/proc/self/maps")
    if maps.exists():  # Linux: what is still mapped after the clear must stay far from the limit
        count = len(maps.read_text().splitlines())
        assert count < 30_000, f"{count} memory mappings remain after this file's tests"
