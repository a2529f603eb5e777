"""Shape checks of ``F: (n,) -> (m,)`` against what a method can solve, with messages that
name the method the caller chose and what to do instead."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

LEAST_SQUARES_HINT = (
    "For more equations than unknowns, solve in the least-squares sense with "
    "solver=solvers.LevenbergMarquardt() (solvers.solve(graph, solvers.LevenbergMarquardt()) "
    "for a graph); it reports local_minimum unless the equations agree at a root."
)
UNDERDETERMINED_HINT = (
    "Fewer equations than unknowns leave the unknowns undetermined, which no method here "
    "solves: add equations, or make some unknowns parameters."
)


def method_name(method: Any) -> str:
    """``solvers.Newton()``-style name of a method object (or a given name)."""
    return method if isinstance(method, str) else f"solvers.{type(method).__name__}()"


def check_shape(method: Any, m: int, n: int, least_squares: bool = False) -> None:
    """Raise a clear error unless a method that solves square systems (and, with
    ``least_squares``, over-determined ones) can take ``m`` equations in ``n`` unknowns."""
    if n == 0:
        raise ValueError("the system has no unknowns (x0 is empty): there is nothing to solve.")
    if m == n or (least_squares and m > n):
        return
    hint = UNDERDETERMINED_HINT if m < n else LEAST_SQUARES_HINT
    needs = "a square system" if not least_squares else "at least as many equations as unknowns"
    raise ValueError(f"{method_name(method)} needs {needs}; got {m} equations in {n} "
                     f"unknowns. {hint}")


def check_square(fn, x0, params, method: Any, least_squares: bool = False) -> None:
    """``check_shape`` of F at trace time, after checking that x0 and F(x0) are vectors
    (`check_residual`)."""
    out = jax.eval_shape(fn, x0, params)
    check_residual(out, x0)
    if x0.ndim != 1 or len(out.shape) != 1:
        raise ValueError(
            f"{method_name(method)} needs F: (n,) -> (m,) on flat vectors; got x0 of shape "
            f"{x0.shape} and F(x0) of shape {out.shape}. Flatten the unknowns into one vector."
        )
    check_shape(method, out.shape[0], x0.shape[0], least_squares)


def check_residual(out: Any, x0) -> None:
    """Raise unless F(x0) is one array of real floats (an integer F has no derivative type,
    a complex one no order for the line search)."""
    if not hasattr(out, "dtype"):
        raise TypeError(f"F must return one array of residuals, got {type(out).__name__}; "
                        "stack them into one vector (jnp.concatenate or jnp.stack).")
    if not jnp.issubdtype(out.dtype, jnp.floating):
        hint = ("split each complex equation into its real and imaginary parts (two real "
                "equations)" if jnp.issubdtype(out.dtype, jnp.complexfloating)
                else f"compute it in {x0.dtype} (e.g. with .astype({str(x0.dtype)!r}))")
        raise TypeError(f"F returns {out.dtype} residuals, but they must be real floats of "
                        f"x0's type ({x0.dtype}): {hint}.")


def check_residual_type(f_dtype, x0, method: Any, exact: bool) -> None:
    """Raise where the iteration's carry would change type: F wider than x0 promotes the
    iterates (every loop here); with ``exact`` (Newton) any other type than x0's does."""
    wider = jnp.promote_types(f_dtype, x0.dtype) != x0.dtype
    if wider or (exact and f_dtype != x0.dtype):
        raise TypeError(
            f"F returns {f_dtype} residuals for {x0.dtype} unknowns, but "
            f"{method_name(method)} keeps its iterates in x0's type. Give the parameters "
            f"x0's type (e.g. jnp.asarray(p, {str(x0.dtype)!r})) and compute F in it, or pass "
            f"x0 as {f_dtype}.")
