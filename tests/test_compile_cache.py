"""The persistent compilation cache: opt-in for the library, on for the command line."""

import pathlib
import subprocess
import sys

import jax
import pytest

import solvers
from scenarios import _cli

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_second_process_reads_compiled_programs(tmp_path):
    code = ("import sys, jax, solvers\n"
            "solvers.enable_compilation_cache(sys.argv[1])\n"
            "jax.config.update('jax_persistent_cache_min_compile_time_secs', 0)\n"
            "from jax import monitoring\n"
            "hits = []\n"
            "monitoring.register_event_listener(lambda e, **k: hits.append(e))\n"
            "jax.jit(lambda x: x * 2 + 1)(1.0).block_until_ready()\n"
            "print('/jax/compilation_cache/cache_hits' in hits)\n")
    run = lambda: subprocess.run([sys.executable, "-c", code, str(tmp_path / "c")], cwd=ROOT,
                                 capture_output=True, text=True, check=True).stdout.split()[-1]
    assert run() == "False" and run() == "True"
    assert (tmp_path / "c").stat().st_mode & 0o777 == 0o700


def test_shared_directory_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    before = jax.config.jax_compilation_cache_dir
    with pytest.raises(ValueError, match="writable by other users"):
        solvers.enable_compilation_cache(shared)
    assert jax.config.jax_compilation_cache_dir == before


@pytest.mark.parametrize("env, flag, used", [("{dir}", False, True), ("0", False, False),
                                             ("{dir}", True, False)])
def test_cli_turns_it_on_unless_told(tmp_path, monkeypatch, env, flag, used):
    """The CLI's decision only: turning JAX's cache on for real inside the test process would
    leave it on (JAX checks the setting once) for every later test of this worker."""
    target = tmp_path / "cache"
    monkeypatch.setenv(_cli.CACHE_ENV, env.format(dir=target))
    calls = []
    monkeypatch.setattr(solvers, "enable_compilation_cache", lambda path=None: calls.append(path))
    assert _cli.main((["--no-compile-cache"] if flag else []) + ["list"]) == 0
    assert calls == ([str(target)] if used else [])
