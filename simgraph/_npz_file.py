"""A graph file as an archive on disk: written whole (never a partial file), read back
with every ``.npy`` header checked against its entry and never unpickling. The meaning of
its contents (the description, the arrays) is `_io`'s."""

from __future__ import annotations

import math
import os
import struct
import zipfile
import zlib

import numpy as np

from ._errors import GraphFileError

__all__ = ["ARCHIVE_ERRORS", "read_entry", "reason", "starts_like_zip", "write_whole"]


def write_whole(path, arrays: dict) -> None:
    """Write the file beside ``path`` and move it there: a failed write (a full disk, a
    directory at ``path``) leaves no partial file and any earlier one as it was."""
    tmp = f"{os.fspath(path)}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)  # numeric arrays only (`_Encoder.array`): nothing to pickle
        os.replace(tmp, path)
    except OSError as e:  # a directory, no permission, a missing folder, a full disk
        raise GraphFileError(f"{path}: cannot be written ({e.strerror or e}); give a file path "
                             "in a writable directory.") from None
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def starts_like_zip(path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"PK\x03\x04"
    except OSError as e:  # exists but cannot be opened: no permission, a socket, ...
        raise GraphFileError(f"{path}: cannot be read ({e.strerror or e}); check the path and "
                             "its permissions.") from None


def read_entry(data, key: str) -> np.ndarray:
    """``data[key]`` (as ``np.load`` reads it, never unpickling), once its ``.npy`` header is
    checked against the entry's size: numpy allocates the declared shape before reading, so
    an edited header could ask for petabytes."""
    try:  # the entry numpy reads: `key` itself, else `key.npy`
        info = data.zip.getinfo(key)
    except KeyError:
        info = data.zip.getinfo(key + ".npy")
    with data.zip.open(info) as f:  # not an .npy entry: read_magic raises ValueError
        version = np.lib.format.read_magic(f)
        read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                else np.lib.format.read_array_header_2_0)
        shape, _, dtype = read(f)
        need, have = math.prod(shape) * dtype.itemsize, info.file_size - f.tell()
        if need > have:
            raise ValueError(f"its header declares shape {shape} of {dtype}, {need} bytes, "
                             f"but the entry holds {have}")
        f.seek(0)
        return np.lib.format.read_array(f, allow_pickle=False)


# What a damaged archive can raise from numpy/zipfile (zlib.error is an Exception subclass
# raised for edited compression flags; NotImplementedError for unknown compression methods;
# MemoryError for an entry whose declared sizes are both edited).
ARCHIVE_ERRORS = (zipfile.BadZipFile, EOFError, OSError, ValueError, KeyError, RuntimeError,
                   NotImplementedError, zlib.error, struct.error, UnicodeDecodeError, MemoryError)


def reason(e: Exception) -> str:
    """An error's text without numpy's advice to unpickle (never right for a graph file)."""
    text = str(e).split("\n")[0]
    return "not a plain array" if "allow_pickle" in text or "pickle" in text else text
