"""Bad input files for the scenario readers' tests: a shipped JSON example with one edit."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable


def edited_example(example: Path, path: Path, edit: Callable[[dict], Any]) -> Path:
    """Write the JSON document of ``example`` to ``path`` after ``edit(doc)``; return ``path``."""
    doc = json.loads(Path(example).read_text())
    edit(doc)
    path.write_text(json.dumps(doc))
    return path
