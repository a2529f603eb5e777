"""Turn a reader's ``path_or_text`` argument into (display name, text)."""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["read_source"]


def read_source(path_or_text: str | os.PathLike, text_name: str = "<string>") -> tuple[str, str]:
    """Return ``(name, text)``: a path-like or a one-line string is a file, text with a newline is content.

    Files are decoded as UTF-8 (BOM tolerated), falling back to Latin-1 as EPANET files often are.
    """
    if isinstance(path_or_text, str) and ("\n" in path_or_text or "\r" in path_or_text):
        return text_name, path_or_text.removeprefix("\ufeff")  # a BOM, as from a file
    if not isinstance(path_or_text, (str, os.PathLike)):
        raise TypeError(
            f"expected a file path or the file's text, got {type(path_or_text).__name__}"
        )
    path = Path(path_or_text)
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    return str(path), text
