"""JSON text of a result, strict and fast: ``json.dumps(value, indent=2)`` with every NaN and
infinity written as ``null`` (JSON has neither; ``NaN`` literals break ``jq``, JavaScript and
most parsers other than Python's).

The json module writes indented text in pure Python, a few microseconds an item; a result of
25 000 buses has 50 000, a transient of 2 500 nodes over 200 time points 500 000. Here a map
whose values are all floats, and a list of floats (a waveform), are written in one join
(keys escaped by json's own C function, finite floats by ``repr``, as json does);
everything else is left to json. Apart from the nulls the text is json's, character for
character.
"""
from __future__ import annotations

import json
import math

__all__ = ["json_text"]

_KEY = json.encoder.encode_basestring_ascii
#: Maps at least this long take the one-join path.
_LONG = 32


def _number(v: float) -> str:
    """A float as json writes it; null where JSON has no number for it (NaN, infinities)."""
    return float.__repr__(v) if math.isfinite(v) else "null"


def json_text(value, indent: str = "") -> str:
    """``value`` as ``json.dumps(value, indent=2)`` writes it, nested at ``indent``, with
    NaN and infinities as ``null``."""
    inner = indent + "  "
    if isinstance(value, dict) and value and all(type(k) is str for k in value):
        if len(value) >= _LONG and all(type(v) is float for v in value.values()):
            items = [f"{_KEY(k)}: {_number(v)}" for k, v in value.items()]
        else:
            items = [f"{_KEY(k)}: {json_text(v, inner)}" for k, v in value.items()]
        return "{\n" + inner + (",\n" + inner).join(items) + "\n" + indent + "}"
    if isinstance(value, (list, tuple)) and value:
        if all(type(v) is float for v in value):
            items = list(map(_number, value))  # waveforms: json's own float text
        else:
            items = [json_text(v, inner) for v in value]
        return "[\n" + inner + (",\n" + inner).join(items) + "\n" + indent + "]"
    if isinstance(value, float) and not isinstance(value, bool):
        return _number(float(value))  # numpy's float64 too
    # JSON strings hold no raw newline, so indenting every line nests the text correctly
    return json.dumps(value, indent=2, allow_nan=False).replace("\n", "\n" + indent)
