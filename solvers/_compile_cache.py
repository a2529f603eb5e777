"""JAX's persistent compilation cache: a second process does not recompile the same model.

Off unless asked for (importing the library changes no JAX setting); the command line
(``python -m scenarios``) turns it on. Compiled programs are stored in a directory only the
user can write: JAX trusts what it reads there (an executable), so a directory others can
write to would let them run code in the user's process.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Optional, Union

import jax

#: Programs that compile faster than this are not stored (reading one back costs about as much).
MIN_COMPILE_SECONDS = 0.1


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/simgraph/jax`` (``~/.cache/simgraph/jax`` without it)."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "simgraph" / "jax"


def enable_compilation_cache(path: Optional[Union[str, os.PathLike]] = None) -> Path:
    """Store compiled solves in ``path`` (default `default_cache_dir`) and reuse them in later
    processes: a model compiled once starts in a fraction of its compile time next time.

    Call it before the first solve (JAX reads the setting when it first compiles). The
    directory is created private to the user; one that other users can write to is refused.
    Returns the directory."""
    directory = Path(path).expanduser() if path is not None else default_cache_dir()
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    mode = directory.stat().st_mode
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise ValueError(
            f"compilation cache directory {str(directory)!r} is writable by other users; JAX "
            "runs the programs it finds there, so give a private directory (chmod 700).")
    jax.config.update("jax_compilation_cache_dir", str(directory))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    return directory
