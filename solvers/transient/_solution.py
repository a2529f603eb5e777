"""`TransientSolution`: a transient's output and how each member's run ended; raising on a
failure now (concrete values) or from inside ``jit``/``vmap`` (``simulate(throw=True)``)."""

from __future__ import annotations

import dataclasses
from functools import partial

import jax
import numpy as np

from .._concrete import is_concrete
from ..lowering._system import System
from ..roots._solution import SolveError, _as_index, unknowns_of, worst_member
from ..roots._solve import _keep_off_fast_path
from ._frame import transient_frame
from ._integrator import TRANSIENT_RESULTS

#: How a batched `TransientSolution` finds a member worth reading (for `_as_index`).
_PICK = ("sol.raise_if_failed() names the first failure, np.flatnonzero(~np.asarray("
         "sol.converged)) lists them all)")
#: Codes whose run never started: no stop time worth naming.
_NOT_STARTED = (TRANSIENT_RESULTS.successful, TRANSIENT_RESULTS.initial_point_failed,
                TRANSIENT_RESULTS.invalid_times)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class TransientSolution:
    """A transient's output on the requested times, its accepted steps and how it went.

    ``t`` (G,) and ``x`` (..., G, n) the states on the grid; ``result`` (TRANSIENT_RESULTS
    codes), ``n_steps``/``n_rejected``/``n_newton`` per member; ``t_stop`` (...,) the time
    each member's run reached (its last accepted step: ``t[-1]`` on success). With
    ``Integrator(save_steps=True)`` (else length 1): ``steps_t`` (..., S + 1) the accepted
    times (first ``n_steps + 1`` valid), ``steps_x`` their states (differentiable as ``x``
    is, at the recorded times), ``steps_order`` 1
    (backward Euler) or 2 per step. ``value(node)`` reads a node's trajectory,
    ``to_frame()`` the output as a pandas table.
    """

    t: jax.Array
    x: jax.Array
    result: jax.Array
    n_steps: jax.Array
    n_rejected: jax.Array
    n_newton: jax.Array
    t_stop: jax.Array
    steps_t: jax.Array
    steps_x: jax.Array
    steps_order: jax.Array
    lowered: System = dataclasses.field(metadata={"static": True})

    @property
    def converged(self) -> jax.Array:
        ok = int(TRANSIENT_RESULTS.successful)
        if is_concrete(self.result):  # read on the host: an eager == compiles a program
            return jax.device_put(np.asarray(self.result) == ok)
        return self.result == ok

    def value(self, where) -> jax.Array:
        """The trajectory of a node's unknowns (object or key path): (..., G, size)."""
        return self.x[..., unknowns_of(self.lowered, where)]

    def message(self, index=None) -> str:
        """How one member's run ended (``index`` into the batch; None if unbatched), with
        the time it stopped at when it stopped early."""
        codes, stops = self._concrete("message")
        pick = _as_index(index, codes.shape, "TransientSolution", _PICK)
        return describe(TRANSIENT_RESULTS(int(codes[pick])), stops[pick], index)

    def worst_index(self):
        """Index of the failed member that stopped earliest (None if all reached the end;
        ``()`` for one failed run), into this solution's arrays."""
        codes, stops = self._concrete("worst_index")  # earliest: a NaN stop first
        return worst_member(codes != int(TRANSIENT_RESULTS.successful),
                            -np.nan_to_num(stops, nan=-np.inf))

    def summary(self) -> str:
        """Counts of each result code, and the failed member that stopped earliest if any."""
        codes, _ = self._concrete("summary")
        flat = codes.reshape(-1)
        counts = {TRANSIENT_RESULTS(c).name: int((flat == c).sum()) for c in np.unique(flat)}
        text = f"{flat.size} run(s): " + ", ".join(f"{n} {k}" for k, n in counts.items())
        worst = self.worst_index()
        if worst is not None:
            text += "\nearliest stop: " + self.message(None if worst == () else worst)
        return text

    def raise_if_failed(self) -> "TransientSolution":
        """Return self if every member reached the end time, else raise ``SolveError``
        naming the first failed member (``index``, flat) and its code."""
        raise_for(*self._concrete("raise_if_failed"))
        return self

    def to_frame(self, long: bool = False):
        """The output as a pandas DataFrame: one row per output time (index ``t``), one
        column per unknown, named by key path as in `Solution.to_frame`; a batch has one
        block of columns per member (columns ``(member, path)``: ``frame[0]`` is member 0's),
        or ``long=True`` one row per member, time and unknown (columns ``member``, ``t``,
        ``path``, ``owner``, ``value``). Several batch axes are numbered in flat (C) order:
        member 4 of a (2, 3) batch is ``(1, 1)`` of `message` and `worst_index`. Times a
        failed member did not reach are NaN. Needs pandas: ``pip install 'simgraph[tables]'``."""
        self._concrete("to_frame")
        return transient_frame(self, long)

    def _concrete(self, what: str) -> tuple[np.ndarray, np.ndarray]:
        if not is_concrete((self.result, self.t_stop)):
            raise TypeError(
                f"TransientSolution.{what}() needs concrete values but was called on traced "
                "arrays (inside jit/vmap/grad). Call it on the returned solution outside the "
                "transform, or pass throw=True to simulate to raise inside it.")
        return np.asarray(self.result), np.asarray(self.t_stop)


def describe(code: TRANSIENT_RESULTS, t_stop, index=None) -> str:
    """One member's ending: its code, the time it stopped at when early, what to do."""
    where = "" if index is None else f"member {index}: "
    at = "" if code in _NOT_STARTED else f" at t = {float(t_stop):.9g}"
    return f"{where}{code.name}{at}: {code.message}"


def raise_for(codes: np.ndarray, stops: np.ndarray) -> None:
    """Raise ``SolveError`` for the first failed member of ``codes``, if any."""
    failed = np.flatnonzero(codes.reshape(-1))
    if not len(failed):
        return
    index = None if codes.ndim == 0 else int(failed[0])
    pick = () if index is None else np.unravel_index(index, codes.shape)
    code = TRANSIENT_RESULTS(int(codes[pick]))
    raise SolveError(f"transient failed ({len(failed)} member(s)); first: "
                     f"{describe(code, stops[pick], index)}", index=index, code=code)


def checked(sol: TransientSolution, throw: bool) -> TransientSolution:
    """``sol``, or raise on a failure: now when concrete, else from a host callback when
    the traced run's result is computed (its token is added to ``x`` as zero, so it runs)."""
    if not throw:
        return sol
    if is_concrete((sol.result, sol.t_stop)):
        return sol.raise_if_failed()
    token = jax.pure_callback(partial(_host_check, np.dtype(sol.x.dtype)),
                              jax.ShapeDtypeStruct(sol.result.shape, sol.x.dtype),
                              sol.result, sol.t_stop, vmap_method="expand_dims")
    _keep_off_fast_path()
    return dataclasses.replace(sol, x=sol.x + token[..., None, None] * 0.0)


def _host_check(dtype, codes, stops):
    raise_for(np.asarray(codes), np.asarray(stops))
    return np.zeros(np.shape(codes), dtype=dtype)
