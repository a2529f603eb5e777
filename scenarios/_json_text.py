"""``json.dumps(value, indent=2, allow_nan=True)``, faster for results with long maps of numbers.

The json module writes indented text in pure Python, a few microseconds an item; a result of
25 000 buses has 50 000, a transient of 2 500 nodes over 200 time points 500 000. Here a map
whose values are all finite floats, and a list of finite floats (a waveform), are written in
one join (keys escaped by json's own C function, floats by ``repr``, as json does);
everything else is left to json. The text is the same, character for character.
"""
from __future__ import annotations

import json
import math

__all__ = ["json_text"]

_KEY = json.encoder.encode_basestring_ascii
#: Maps at least this long take the one-join path.
_LONG = 32


def json_text(value, indent: str = "") -> str:
    """``value`` as ``json.dumps(value, indent=2, allow_nan=True)`` writes it, nested at
    ``indent``."""
    inner = indent + "  "
    if isinstance(value, dict) and value and all(type(k) is str for k in value):
        values = value.values()
        if len(value) >= _LONG and all(type(v) is float for v in values) and all(
                map(math.isfinite, values)):
            items = [f"{_KEY(k)}: {v!r}" for k, v in value.items()]
        else:
            items = [f"{_KEY(k)}: {json_text(v, inner)}" for k, v in value.items()]
        return "{\n" + inner + (",\n" + inner).join(items) + "\n" + indent + "}"
    if isinstance(value, (list, tuple)) and value:
        if all(type(v) is float for v in value) and all(map(math.isfinite, value)):
            items = list(map(float.__repr__, value))  # waveforms: json's own float text
        else:
            items = [json_text(v, inner) for v in value]
        return "[\n" + inner + (",\n" + inner).join(items) + "\n" + indent + "]"
    # JSON strings hold no raw newline, so indenting every line nests the text correctly
    return json.dumps(value, indent=2, allow_nan=True).replace("\n", "\n" + indent)
