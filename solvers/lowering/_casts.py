"""What a value set into a parameter leaf may become: the one rule of ``solve_batch``,
``simulate_batch`` and ``System.set_params``.

Values are cast to the leaf's dtype. Refused, naming the key, the leaf and what to do:

* from the dtypes (traced values too): a float into an integer or bool leaf (its fraction,
  or a NaN, would be dropped), a complex into a real leaf (its imaginary part);
* from the values, when they are concrete (tracers are left to JAX's casts): a value the
  cast changes in meaning: a finite value that overflows to inf (1e300 into float32, 1e5
  into float16), an integer out of the leaf's range (300 into int8 wraps to 44, -1 into
  uint32 to 4294967295), anything but 0 or 1 into a bool leaf (2 became True).

Rounding to a narrower float (float64 into float32, a large int into float32) is allowed.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import simgraph as sg

from .._concrete import is_traced


def check_dtype(paths, label: str, picked, dtype, values=None, axis=None) -> None:
    """Refuse values for the leaves ``picked`` (``(kind, column, row)``) whose kind the
    leaves cannot hold (from ``dtype``) or, given concrete ``values``, that their cast would
    change (`check_values`). ``axis``: the axis of ``values`` that gives one value per leaf
    (None: every leaf takes all of them). ``label`` names the key in the errors."""
    an, kind = paths.s.an, np.dtype(dtype).kind
    leaves: dict = {}  # leaf dtype -> positions in picked
    for i, item in enumerate(picked):
        leaf = np.dtype(an.kinds[item[0]].columns[item[1]].dtype)
        if (kind == "f" and leaf.kind in "biu") or (kind == "c" and leaf.kind != "c"):
            raise sg.GraphTypeError(
                f"value for {label} is {np.dtype(dtype)}, but the leaf {paths.leaf_path(item)} "
                f"it selects is {leaf}: the values would be cast, silently "
                "changing them. Give the leaves the values' type when building the graph "
                f"(e.g. 2.0, not 2), or pass {leaf} values.")
        leaves.setdefault(leaf, []).append(i)
    unsafe = [leaf for leaf in leaves if not np.can_cast(dtype, leaf, "safe")]
    if values is None or is_traced(values) or not unsafe:
        return
    for leaf in unsafe:
        bad = check_values(values, leaf, leaves[leaf], axis)
        if bad is not None:
            value, became, pos = bad
            raise sg.GraphTypeError(
                f"value for {label} holds {value!r}, which the leaf "
                f"{paths.leaf_path(picked[pos])} ({leaf}) cannot hold: cast to {leaf} it "
                f"would become {became!r}. {_fix(leaf)}")


def leaf_dtype(paths, picked) -> np.dtype | None:
    """The one dtype of the leaves ``picked``, or None if they differ."""
    found = {np.dtype(paths.s.an.kinds[ki].columns[j].dtype) for ki, j, _ in picked}
    return found.pop() if len(found) == 1 else None


def to_leaf_type(paths, picked, host: np.ndarray) -> np.ndarray:
    """Checked host values cast to their leaves' one dtype (JAX would otherwise narrow int64
    to int32 while x64 is off before the leaf's own cast: 3e9 into a float leaf wrapped)."""
    leaf = leaf_dtype(paths, picked)
    return host if leaf is None else host.astype(leaf, copy=False)


def check_values(values, leaf: np.dtype, at: list, axis=None):
    """The first value of ``values`` that a cast to ``leaf`` would change in meaning, as
    ``(value, what it would become, its position in picked)``; None if every value fits.
    ``at``: the positions (in picked) of the leaves of this dtype. A device array is checked
    where it lives: only a value found wrong is read back."""
    if values.size == 0 or np.can_cast(values.dtype, leaf, "safe"):
        return None
    if axis is not None and len(at) != values.shape[axis]:
        values = (jnp if isinstance(values, jax.Array) else np).take(
            values, np.asarray(at), axis=axis)  # the values of this dtype's leaves
    if isinstance(values, jax.Array) and not bool(_changed(values, leaf, jnp).any()):
        return None
    host = np.asarray(values)
    with np.errstate(all="ignore"):  # NaN or overflow in a cast: what is being checked
        bad, became = _changed(host, leaf, np), host.astype(leaf)
    if not bad.any():
        return None
    first = np.unravel_index(int(np.argmax(bad)), host.shape)
    pos = at[0] if axis is None else at[first[axis]]
    return host[first].item(), became[first].item(), pos


def _changed(values, leaf: np.dtype, xp):
    """Where a cast of ``values`` to ``leaf`` changes them in meaning (``xp``: np or jnp)."""
    cast = values.astype(leaf)
    if leaf.kind in "biu":  # cut to an integer, not 0/1, or wrapped (a sign flip too)
        return (cast.astype(values.dtype) != values) | ((values < 0) != (cast < 0))
    return xp.isfinite(values) & ~xp.isfinite(cast)  # a finite value that overflowed


def _fix(leaf: np.dtype) -> str:
    """What to do about a value that does not fit a leaf of ``leaf``'s dtype."""
    if leaf.kind == "b":
        return ("Pass True/False (or 0/1), or give the leaf a numeric type when building "
                "the graph.")
    if leaf.kind in "iu":
        info = jnp.iinfo(leaf)
        wider = ("np.int64(...)" if jax.config.jax_enable_x64 else
                 "np.int64(...) with jax_enable_x64 on: jax.config.update('jax_enable_x64', True)")
        return (f"Give the leaf a wider integer type (e.g. {wider}) or a float one when "
                f"building the graph, or pass values in [{info.min}, {info.max}].")
    return (f"Give the leaf a wider type when building the graph (e.g. float64, with "
            f"jax_enable_x64 on), or pass values within {leaf}'s range (|value| <= "
            f"{float(jnp.finfo(leaf).max):.6g}).")
