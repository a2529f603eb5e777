"""A results directory for a resumable sweep: one ``.npz`` per finished chunk and a manifest
with a fingerprint of the sweep's arguments.

A sweep started again with the same arguments reads the chunks already written instead of
solving them again; a directory written by a different sweep (other parameter values, start,
solver, model structure, batch or chunk size) is refused, never mixed in.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
import tempfile
import zipfile
import zlib
from pathlib import Path
from typing import Any, Mapping, Optional

import jax
import numpy as np

MANIFEST = "manifest.json"
#: 2: the structure digest covers static values and references (format 1 directories,
#: written before, are refused as "format differs": solve them again).
#: 4: every chunk holds its sweep's stamp (`STAMP`), checked when read back.
FORMAT = 4
#: The chunk entry holding the digest of the manifest that wrote it (as bytes).
STAMP = "sweep"
#: What numpy and zipfile raise for a damaged chunk (MemoryError, OverflowError: an .npy
#: header edited to declare a huge shape, which numpy allocates before reading).
_DAMAGED = (OSError, ValueError, EOFError, KeyError, RuntimeError, NotImplementedError,
            MemoryError, OverflowError, TypeError, zipfile.BadZipFile, zlib.error,
            struct.error)


class SweepMismatchError(ValueError):
    """A results directory holds a different sweep than the one asked for."""


def digest(value: Any) -> str:
    """A stable hex digest of arrays, pytrees of arrays, strings and numbers: equal across
    processes and runs for equal values (object addresses in reprs are left out)."""
    h = hashlib.sha256()
    _feed(h, value)
    return h.hexdigest()


def _feed(h, value: Any) -> None:
    if isinstance(value, str):
        h.update(b"s" + re.sub(r" at 0x[0-9a-fA-F]+", "", value).encode())
        return
    leaves, treedef = jax.tree_util.tree_flatten(value)
    if len(leaves) == 1 and leaves[0] is value:
        a = np.ascontiguousarray(np.asarray(value))
        h.update(f"a{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
        return
    h.update(b"t" + str(treedef).encode())
    for leaf in leaves:
        _feed(h, leaf)


class SweepStore:
    """The results directory of one sweep: ``size`` members in chunks of ``chunk_size``
    (chunk k holds members ``k * chunk_size`` up to the next chunk's start); ``about`` is
    saved in the manifest for readers, not compared."""

    def __init__(self, directory: str | os.PathLike, size: int, chunk_size: int,
                 fingerprint: Mapping[str, str], about: Optional[Mapping[str, Any]] = None):
        self.directory = Path(directory)
        self.manifest = {"format": FORMAT, "size": int(size), "chunk_size": int(chunk_size),
                         "fingerprint": dict(fingerprint), "about": dict(about or {})}
        self.stamp = digest(json.dumps({k: v for k, v in self.manifest.items() if k != "about"},
                                       sort_keys=True))

    def open(self) -> "SweepStore":
        """Create the directory and manifest, or check an existing manifest matches."""
        if self.directory.exists() and not self.directory.is_dir():
            raise SweepMismatchError(f"results directory {str(self.directory)!r} is a file; "
                                     "give a directory (it is created if missing).")
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / MANIFEST
        text = json.dumps(self.manifest, indent=1).encode()
        # created, never replaced: a sweep started meanwhile in this directory is checked
        if path.exists() or not self._write(MANIFEST, lambda f: f.write(text), replace=False):
            self._check(path)
        return self

    def _check(self, path: Path) -> None:
        try:
            found = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as err:
            raise SweepMismatchError(f"{path}: not a readable sweep manifest ({err}); give "
                                     "another results directory.") from None
        if not isinstance(found, dict):
            found = {}
        mine, theirs = self.manifest, found
        differ = [k for k in ("format", "size", "chunk_size") if mine[k] != theirs.get(k)]
        prints = theirs.get("fingerprint") if isinstance(theirs.get("fingerprint"), dict) else {}
        differ += [k for k in mine["fingerprint"] if prints.get(k) != mine["fingerprint"][k]]
        if differ:
            raise SweepMismatchError(
                f"results directory {str(self.directory)!r} holds a different sweep: its "
                f"{', '.join(differ)} {'differs' if len(differ) == 1 else 'differ'} from this "
                "one's. Resume only with the same "
                "arguments; for a new sweep give a new (or empty) results directory.")

    def chunk_path(self, start: int, stop: int) -> Path:
        return self.directory / f"chunk-{start:012d}-{stop:012d}.npz"

    def load(self, start: int, stop: int) -> Optional[dict[str, np.ndarray]]:
        """The arrays of a finished chunk, or None if it is not written (or unreadable).
        A chunk another sweep wrote (its stamp differs) raises `SweepMismatchError`."""
        path = self.chunk_path(start, stop)
        if not path.exists():
            return None
        if not path.is_file():
            raise SweepMismatchError(f"{path} is not a file, so this chunk's results cannot be "
                                     "written there; remove it, or give another results directory.")
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {k: data[k] for k in data.files}
        except _DAMAGED:
            return None  # a truncated or empty file: solved again
        stamp = arrays.pop(STAMP, None)
        if stamp is None:
            return None  # damaged (every chunk of this format has one): solved again
        if stamp.dtype != np.uint8 or bytes(stamp) != self.stamp.encode():
            raise SweepMismatchError(
                f"{path} was written by another sweep than this directory's manifest "
                "describes (the manifest was edited, or another sweep shared the directory or "
                "its chunks were copied in). Give a new (or empty) results directory.")
        return arrays

    def save(self, start: int, stop: int, arrays: Mapping[str, np.ndarray]) -> None:
        """Write a finished chunk atomically (a killed process leaves no partial chunk)."""
        stamp = np.frombuffer(self.stamp.encode(), np.uint8)
        self._write(self.chunk_path(start, stop).name,
                    lambda f: np.savez(f, **arrays, **{STAMP: stamp}))

    def _write(self, name: str, write, replace: bool = True) -> bool:
        """Write ``name`` whole; False if ``replace`` is False and it exists already."""
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=self.directory)
        try:
            with os.fdopen(fd, "wb") as f:
                write(f)
            if not replace:
                return _create(tmp, self.directory / name)
            os.replace(tmp, self.directory / name)
            return True
        finally:
            Path(tmp).unlink(missing_ok=True)


def _create(tmp: str, path: Path) -> bool:
    """Move ``tmp`` to ``path`` unless ``path`` exists (False): a hard link fails atomically
    if it does."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    except OSError:  # a file system without hard links: replace, as before
        os.replace(tmp, path)
    return True
