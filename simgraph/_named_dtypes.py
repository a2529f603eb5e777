"""The array dtypes ``sg.save`` stores by name (ml_dtypes: bfloat16, float8_*, int4, ...):
``.npy`` headers have no code for them, so their raw bits are stored as unsigned integers of
the same width beside the dtype's name, and only these names are read back."""

from __future__ import annotations

import ml_dtypes
import numpy as np

__all__ = ["NAMED_DTYPES", "bits", "dtype_name"]

#: The dtypes stored by name: numpy has no code for them in ``.npy`` headers.
NAMED_DTYPES = {
    name: np.dtype(getattr(ml_dtypes, name)) for name in (
        "bfloat16", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn",
        "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
        "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn", "int2", "int4", "uint2", "uint4")
    if hasattr(ml_dtypes, name)}


def dtype_name(dtype: np.dtype) -> str | None:
    """The name ``dtype`` is saved under, or None for a dtype ``.npy`` describes itself."""
    named = NAMED_DTYPES.get(dtype.name)
    return dtype.name if named is not None and named.type is dtype.type else None


def bits(dtype: np.dtype) -> np.dtype:
    """The unsigned integer dtype holding the raw bits of a named dtype."""
    return np.dtype(f"u{dtype.itemsize}")
