"""The result container of a flat solve: a pytree with one entry per batch member."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from .._concrete import is_concrete
from .._result import RESULTS


class SolveError(RuntimeError):
    """A solve failed; ``index`` is the worst failed batch member, ``code`` its RESULTS."""

    def __init__(self, message: str, index=None, code: RESULTS | None = None):
        super().__init__(message)
        self.index = index
        self.code = code


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class FlatSolution:
    """Solution of ``F(x, params) = 0`` for one member or a batch (leading batch axes).

    ``result`` holds ``RESULTS`` codes (int32); ``converged`` is ``result == successful``;
    ``residual_norm`` is ``max|F(x)|`` at the returned ``x``; ``num_fev``/``num_jev`` count
    residual and Jacobian evaluations; ``relative_step`` is ``max_i |dx_i| / |x_i|`` of the
    last Newton (or Gauss-Newton) step (NaN where the method does not report it): at or
    below ``rtol`` the step test converged, above it only ``max|F| <= atol`` did. Inspection
    methods need concrete (non-traced) values.
    """

    x: jax.Array
    result: jax.Array
    converged: jax.Array
    iterations: jax.Array
    num_fev: jax.Array
    num_jev: jax.Array
    residual_norm: jax.Array
    relative_step: jax.Array

    @property
    def batch_shape(self) -> tuple[int, ...]:
        return tuple(np.shape(self.result))

    def _concrete(self, what: str):
        if not is_concrete(self.result):
            raise TypeError(
                f"FlatSolution.{what}() needs concrete values but was called on traced "
                "arrays (inside jit/vmap/grad). Call it on the returned solution outside "
                "the transform, or pass throw=True to the solve to raise inside it."
            )
        return np.asarray(self.result), np.asarray(self.residual_norm)

    def message(self, index=None) -> str:
        """Human description of one member (``index`` into the batch; None if unbatched)."""
        codes, norms = self._concrete("message")
        idx = _as_index(index, codes.shape)
        code = int(codes[idx])
        iters = int(np.asarray(self.iterations)[idx])
        where = "" if index is None else f"member {index}: "
        step = float(np.asarray(self.relative_step)[idx])
        step = "" if np.isnan(step) else f", relative step {step:.3g}"
        return (f"{where}{RESULTS.describe(code)} (after {iters} iterations, "
                f"max|F| = {float(norms[idx]):.3g}{step})")

    def worst_index(self):
        """Index of the failed member with the largest residual (None if all converged)."""
        codes, norms = self._concrete("worst_index")
        failed = codes != int(RESULTS.successful)
        if not failed.any():
            return None
        if codes.ndim == 0:
            return ()
        score = np.where(np.isfinite(norms), norms, np.inf)
        score = np.where(failed, score, -1.0)
        flat = int(np.argmax(score.reshape(-1)))
        return flat if codes.ndim == 1 else np.unravel_index(flat, codes.shape)

    def summary(self) -> str:
        """Counts of each result code, and the worst failed member if any."""
        codes, _ = self._concrete("summary")
        flat = codes.reshape(-1)
        counts = {RESULTS(c).name: int((flat == c).sum()) for c in np.unique(flat)}
        text = f"{flat.size} member(s): " + ", ".join(f"{n} {k}" for k, n in counts.items())
        worst = self.worst_index()
        if worst is not None:
            text += "\nworst: " + self.message(None if worst == () else worst)
        return text

    def raise_if_failed(self) -> "FlatSolution":
        """Return self if every member converged, else raise ``SolveError`` (worst member)."""
        codes, _ = self._concrete("raise_if_failed")
        worst = self.worst_index()
        if worst is None:
            return self
        index = None if worst == () else worst
        n_failed = int((codes != int(RESULTS.successful)).sum())
        head = "" if codes.ndim == 0 else f"{n_failed} of {codes.size} members failed; "
        code = RESULTS(int(codes[_as_index(index, codes.shape)]))
        raise SolveError(head + self.message(index), index=index, code=code)


def _as_index(index, shape) -> tuple:
    if index is None:
        return ()
    if isinstance(index, tuple):
        return index
    return tuple(np.unravel_index(int(index), shape))


def make_solution(x, result, iterations, num_fev, num_jev, residual_norm,
                  relative_step=None) -> FlatSolution:
    """Build a FlatSolution with consistent dtypes (``converged`` derived from ``result``;
    ``relative_step`` NaN when not given)."""
    result = jnp.asarray(result, dtype=jnp.int32)
    if relative_step is None:
        relative_step = jnp.full(jnp.shape(residual_norm), jnp.nan, jnp.result_type(x))
    return FlatSolution(
        x=x,
        result=result,
        converged=result == int(RESULTS.successful),
        iterations=jnp.asarray(iterations, dtype=jnp.int32),
        num_fev=jnp.asarray(num_fev, dtype=jnp.int32),
        num_jev=jnp.asarray(num_jev, dtype=jnp.int32),
        residual_norm=jnp.asarray(residual_norm),
        relative_step=jnp.asarray(relative_step),
    )
