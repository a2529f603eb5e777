"""The one result type of every solve: `Solution`, a pytree with one entry per batch member.

A method fills in the arrays (`make_solution`); a solve of a graph or a `System` also attaches
that system (``lowered``), so the same type answers ``.system``, ``.value(node)`` and
``.to_frame()``. A solve of a flat function has no graph: those raise `AttributeError`.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from typing import Any, Optional

import jax
import jax.numpy as jnp
import numpy as np

import simgraph as sg

from .._concrete import is_concrete
from .._result import RESULTS
from ._frame import solution_frame


class SolveError(RuntimeError):
    """A solve failed; ``index`` is the worst failed batch member (an index into the
    solution's arrays, as `Solution.worst_index`), ``code`` its RESULTS."""

    def __init__(self, message: str, index=None, code: RESULTS | None = None):
        super().__init__(message)
        self.index = index
        self.code = code


@dataclasses.dataclass(frozen=True)
class Solution:
    """The answer of a solve, for one member or a batch (leading batch axes).

    ``x`` the unknown vector; ``result`` ``RESULTS`` codes (int32); ``converged`` is
    ``result == successful``; ``residual_norm`` is ``max|F(x)|`` at ``x``; ``num_fev`` /
    ``num_jev`` count residual and Jacobian evaluations; ``relative_step`` is
    ``max_i |dx_i| / |x_i|`` of the last Newton (or Gauss-Newton) step (NaN where the method
    does not report it): at or below ``rtol`` the step test converged, above it only
    ``max|F| <= atol`` did. Inspection methods need concrete (non-traced) values.

    A solve of a graph or a `System` also holds ``lowered`` (the `System`) and gives
    ``system`` (the solved graph), ``params``, ``value(node)``, ``diagnose()`` and
    ``to_frame()``; for a flat function ``lowered`` is None and those raise
    `AttributeError`. ``FlatSolution`` is another name for this class.

    ``first_member``: for a ``gather=False`` sweep's part (a process holds members
    ``first_member`` onwards, process 0 too), the number in the whole batch of its member 0;
    None for a whole solution:
    messages, summaries and `SolveError` texts name members by that number; indices
    (``worst_index()``, ``message(i)``, ``SolveError.index``) index this solution's arrays.
    """

    x: jax.Array
    result: jax.Array
    converged: jax.Array
    iterations: jax.Array
    num_fev: jax.Array
    num_jev: jax.Array
    residual_norm: jax.Array
    relative_step: jax.Array
    # The graph part, set by the graph entry points. InitVars, not fields: code that walks
    # `dataclasses.fields` (the methods' merges, the staging, the sweep store) sees the
    # arrays only, and `dataclasses.replace` still carries them over.
    lowered: dataclasses.InitVar[Any] = None  # the System solved (None: a flat function)
    swept: dataclasses.InitVar[tuple] = ()    # solve_batch's batched values, in `keys` order
    keys: dataclasses.InitVar[tuple] = ()     # solve_batch's parameter addresses (static)
    first_member: dataclasses.InitVar[Optional[int]] = None  # a sweep part's member 0 (static)

    def __post_init__(self, lowered, swept, keys, first_member):
        object.__setattr__(self, "lowered", lowered)
        object.__setattr__(self, "swept", swept)
        object.__setattr__(self, "keys", keys)
        object.__setattr__(self, "first_member",
                           None if first_member is None else int(first_member))

    @property
    def batch_shape(self) -> tuple[int, ...]:
        """The leading batch axes (() for a single solve)."""
        return tuple(np.shape(self.result))

    @property
    def flat(self) -> "Solution":
        """This solution without its graph part (what `solve_flat` returns)."""
        if self.lowered is None and not self.keys:
            return self
        return Solution(*(getattr(self, name) for name in ARRAYS),
                        first_member=self.first_member)

    def _concrete(self, what: str):
        if not is_concrete(self.result):
            raise TypeError(
                f"Solution.{what}() needs concrete values but was called on traced "
                "arrays (inside jit/vmap/grad). Call it on the returned solution outside "
                "the transform, or pass throw=True to the solve to raise inside it."
            )
        return np.asarray(self.result), np.asarray(self.residual_norm)

    def _graph(self, what: str):
        """The System, or an AttributeError saying that a flat solve has no graph."""
        if self.lowered is None:
            raise AttributeError(
                f"Solution.{what} needs a graph, but this solution comes from a flat function "
                "F(x, params): read the unknowns from .x. Solve a graph or a solvers.System "
                f"to get {what}.")
        return self.lowered

    @functools.cached_property
    def system(self) -> Any:
        """The solved graph (batched leaves for a batch); built on first access, then the
        same object on every access. Graph solves only."""
        return self._graph("system").to_graph(self.x, self.params)

    @property
    def params(self) -> Any:
        """The parameters each member was solved with (batched only for a batch). Graph
        solves only."""
        lowered = self._graph("params")
        if not self.keys:
            return lowered.params
        outer = max(len(self.batch_shape) - 1, 0)  # axes of a vmap around the solve_batch
        return _swept_params(lowered.structure, tuple(self.keys), lowered.params, self.swept,
                             outer)

    def value(self, where) -> jax.Array:
        """The solved unknowns of a node (object or key path) or of one leaf path."""
        return self.x[..., unknowns_of(self._graph("value()"), where)]

    def message(self, index=None) -> str:
        """Human description of one member (``index`` into the batch; None if unbatched)."""
        codes, norms = self._concrete("message")
        idx = _as_index(index, codes.shape)
        code = int(codes[idx])
        iters = int(np.asarray(self.iterations)[idx])
        where = "" if index is None else f"member {self._number(index, idx, codes.shape)}: "
        step = float(np.asarray(self.relative_step)[idx])
        step = "" if np.isnan(step) else f", relative step {step:.3g}"
        return (f"{where}{RESULTS.describe(code)} (after {iters} iterations, "
                f"max|F| = {float(norms[idx]):.3g}{step})")

    def _number(self, index, idx: tuple, shape: tuple) -> str:
        """How messages name member ``index``: as given, or for a process's part of a sweep
        (``first_member``) by its number in the whole batch, with its row here."""
        if self.first_member is None or len(shape) != 1:
            return str(index)
        return f"{self.first_member + int(idx[0])} (row {int(idx[0])} here)"

    def worst_index(self):
        """Index of the failed member with the largest residual (None if all converged),
        into this solution's arrays (see ``first_member`` for a sweep's process part)."""
        codes, norms = self._concrete("worst_index")
        return worst_member(codes != int(RESULTS.successful),
                            np.where(np.isfinite(norms), norms, np.inf))

    def summary(self) -> str:
        """Counts of each result code, and the worst failed member if any."""
        codes, _ = self._concrete("summary")
        flat = codes.reshape(-1)
        counts = {RESULTS(c).name: int((flat == c).sum()) for c in np.unique(flat)}
        text = f"{flat.size} member(s){self._span(flat.size)}: " + ", ".join(
            f"{n} {k}" for k, n in counts.items())
        worst = self.worst_index()
        if worst is not None:
            text += "\nworst: " + self.message(None if worst == () else worst)
        return text

    def _span(self, size: int) -> str:
        """`` (members 16 to 39 of the batch)`` for a process's part of a sweep, else ''."""
        if self.first_member is None or not size:
            return ""
        return f" (members {self.first_member} to {self.first_member + size - 1} of the batch)"

    def raise_if_failed(self) -> "Solution":
        """Return self if every member converged, else raise ``SolveError`` naming the worst
        failed member and what to try; for a graph with :meth:`diagnose`'s finding."""
        codes, _ = self._concrete("raise_if_failed")
        worst = self.worst_index()
        if worst is None:
            return self
        index = None if worst == () else worst
        n_failed = int((codes != int(RESULTS.successful)).sum())
        head = "" if codes.ndim == 0 else (f"{n_failed} of {codes.size} members"
                                           f"{self._span(codes.size)} failed; ")
        code = RESULTS(int(codes[_as_index(index, codes.shape)]))
        text = head + self.message(index)
        if self.lowered is not None and code is not RESULTS.nonfinite_input:
            found = self.diagnose(index)
            text += "" if found is None else f" Diagnosis: {found}"
        raise SolveError(text, index=index, code=code)

    def diagnose(self, index=None) -> Optional[str]:
        """Name the parts of the graph whose Jacobian is singular or not finite for one
        member (``index``; default: the worst failed one, else the only one) at its
        returned x, else at the start x0 (a failed solve may have wandered to where the
        Jacobian is regular: a truss mechanism is singular at its start); None if none."""
        lowered = self._graph("diagnose()")
        if index is None and self.batch_shape:
            index = self.worst_index()
            index = 0 if index is None else index
        pick = (lambda a: a) if index is None else (lambda a: a[index])
        params = jax.tree_util.tree_map(pick, self.params) if self.keys else self.params
        x = pick(self.x)
        found = lowered.diagnose(x, params)
        if found is None and not np.array_equal(np.asarray(x), np.asarray(lowered.x0)):
            found = lowered.diagnose(None, params)
            found = None if found is None else f"at the start x0, {found}"
        return found

    def to_frame(self, long: bool = False):
        """The solved unknowns as a pandas DataFrame: one row per unknown (key path, owner
        class, value; a batch has one column per member, or ``long=True`` one row per member
        and unknown). Needs pandas: ``pip install 'simgraph[tables]'``. Graph solves only."""
        self._graph("to_frame()")
        return solution_frame(self, long)


#: The arrays of a `Solution`, in order (its dataclass fields).
ARRAYS = tuple(f.name for f in dataclasses.fields(Solution))
_KEYS = tuple(jax.tree_util.GetAttrKey(name) for name in ARRAYS + ("lowered", "swept"))


def with_graph(sol: Solution, lowered: Any, swept: tuple = (), keys: tuple = ()) -> Solution:
    """``sol`` with its graph part set (``dataclasses.replace`` reads the fields anew at every
    call: a tenth of a small graph's eager solve)."""
    return Solution(*[getattr(sol, name) for name in ARRAYS], lowered, swept, keys,
                    sol.first_member)


def _flatten_with_keys(sol: Solution):
    children = [getattr(sol, name) for name in ARRAYS] + [sol.lowered, sol.swept]
    return tuple(zip(_KEYS, children)), (sol.keys, sol.first_member)


def _flatten(sol: Solution):
    children = [getattr(sol, name) for name in ARRAYS] + [sol.lowered, sol.swept]
    return children, (sol.keys, sol.first_member)


def _unflatten(static, children) -> Solution:
    *arrays, lowered, swept = children
    return Solution(*arrays, lowered, swept, *static)


jax.tree_util.register_pytree_with_keys(Solution, _flatten_with_keys, _unflatten, _flatten)

#: The former name of `Solution` (flat solves returned it before there was one type).
FlatSolution = Solution


#: Where a `Solution` tells which member to pick.
_PICK = "sol.worst_index() names the worst failure), or read sol.summary()"


def _as_index(index, shape, holder: str = "Solution", pick: str = _PICK) -> tuple:
    """A member's index into arrays of ``shape``: None for an unbatched solution, a flat
    (negative from the end) or a tuple index for a batch. ``holder`` names the result type
    in the errors, ``pick`` how it finds a member worth reading."""
    size = int(np.prod(shape))
    if index is None:
        if shape:
            raise TypeError(f"this {holder} holds a batch of {size} members: pass a member's "
                            f"index (message(0); {pick}.")
        return ()
    if isinstance(index, tuple):
        return _tuple_index(index, shape, holder)
    if isinstance(index, (bool, np.bool_)) or not hasattr(type(index), "__index__"):
        raise TypeError(f"a member index must be an integer (or a tuple of them for a "
                        f"batch of several axes), got {index!r}.")
    flat = operator.index(index)
    if not -size <= flat < size:
        raise IndexError(f"member {flat} is out of range: this {holder} holds {size} "
                         f"member(s), 0 to {size - 1} (or -{size} to -1 from the end).")
    return tuple(np.unravel_index(flat % size, shape))


def _tuple_index(index: tuple, shape: tuple, holder: str) -> tuple:
    """A tuple index checked against ``shape`` (one integer in range per batch axis)."""
    if len(index) != len(shape) or not all(
            hasattr(type(i), "__index__") and not isinstance(i, (bool, np.bool_)) for i in index):
        raise TypeError(f"a tuple member index needs one integer per batch axis of this "
                        f"{holder} (shape {shape}), got {index!r}.")
    if not all(-n <= int(i) < n for i, n in zip(index, shape)):
        raise IndexError(f"member {index!r} is out of range: this {holder}'s batch has shape "
                         f"{shape}.")
    return tuple(int(i) for i in index)


def worst_member(failed: np.ndarray, score: np.ndarray):
    """The failed member with the highest ``score`` (the first of equals) as an index: None
    if none failed, ``()`` for one run, an int for one batch axis, a tuple for several."""
    if not failed.any():
        return None
    if failed.ndim == 0:
        return ()
    flat = int(np.argmax(np.where(failed, score, -np.inf).reshape(-1)))
    return flat if failed.ndim == 1 else tuple(map(int, np.unravel_index(flat, failed.shape)))


def unknowns_of(system: Any, where) -> slice:
    """``system.locate(where)``, refused where it holds no unknown (an empty array read as
    the node's value)."""
    at = system.locate(where)
    if at.stop > at.start:
        return at
    name = repr(where) if isinstance(where, str) else f"this {type(where).__name__}"
    raise sg.GraphError(f"{name} has no unknowns (its fields are parameters or static): "
                        "nothing was solved for it. Read its fields from the solved graph "
                        "(solution.system), or ask for a node that has sg.unknown() fields.")


def make_solution(x, result, iterations, num_fev, num_jev, residual_norm,
                  relative_step=None) -> Solution:
    """Build a Solution with consistent dtypes (``converged`` derived from ``result``;
    ``relative_step`` NaN when not given)."""
    result = jnp.asarray(result, dtype=jnp.int32)
    if relative_step is None:
        relative_step = jnp.full(jnp.shape(residual_norm), jnp.nan, jnp.result_type(x))
    return Solution(
        x=x,
        result=result,
        converged=result == int(RESULTS.successful),
        iterations=jnp.asarray(iterations, dtype=jnp.int32),
        num_fev=jnp.asarray(num_fev, dtype=jnp.int32),
        num_jev=jnp.asarray(num_jev, dtype=jnp.int32),
        residual_norm=jnp.asarray(residual_norm),
        relative_step=jnp.asarray(relative_step),
    )


@functools.partial(jax.jit, static_argnums=(0, 1, 4))
def _swept_params(structure: Any, keys: tuple, base: dict, swept: tuple, outer: int = 0) -> dict:
    """Each batch member's parameters: ``base`` with its swept values set. One compiled
    program per structure and keys (an eager ``vmap`` compiles each primitive: ~80 ms on a
    sweep's first call). The keys are resolved selections: no node objects are needed.
    ``outer``: leading axes of a ``vmap`` around the ``solve_batch``, which ``base`` has too."""
    def members(b, s):
        return jax.vmap(lambda v: structure.paths.set_params(b, dict(zip(keys, v))))(s)
    for _ in range(outer):
        members = jax.vmap(members)
    return members(base, swept)
