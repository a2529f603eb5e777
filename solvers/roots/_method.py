"""What every solve method shares: the flat problem, the method interface, small helpers."""

from __future__ import annotations

import abc
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from .._result import RESULTS
from ..linear._abstract import AbstractLinearSolver
from ._solution import FlatSolution

StepLimit = Callable[[jax.Array, jax.Array, Any], jax.Array]
Continuation = Callable[[Any, jax.Array], Any]


class FlatProblem(NamedTuple):
    """``F(x, params) = 0`` with its optional model hooks (static, hashable).

    * ``step_limit(x, dx, params) -> fraction in (0, 1]`` of the proposed step ``dx`` that
      the model accepts (SPICE-style junction limiting); applied before the line search.
    * ``continuation(params, t) -> params`` for ``t`` in [0, 1]: the problem's designated
      continuation (e.g. sources scaled by t); ``t = 1`` is the problem itself. Homotopy
      uses it instead of the generic Newton homotopy when given.
    * ``host_callable``: the host may call ``fn`` and the hooks later, outside the trace,
      so a traced ``Default`` may run its fallbacks from there (``Default.traced_fallbacks``)
      provided they close over no traced value, which ``Default`` checks when it is traced.
    """

    fn: Callable[[jax.Array, Any], jax.Array]
    step_limit: Optional[StepLimit] = None
    continuation: Optional[Continuation] = None
    host_callable: bool = False


class AbstractRootMethod(abc.ABC):
    """A method that solves one member of ``F(x, params) = 0``; batching is by ``vmap``.

    Concrete methods are frozen dataclasses (hashable: they are static under ``jit``).
    ``least_squares``: whether the method also solves over-determined systems (m > n) in
    the least-squares sense (a graph solve then accepts more equations than unknowns).
    """

    least_squares = False

    @abc.abstractmethod
    def run(self, problem: FlatProblem, x0: jax.Array, params: Any,
            active: jax.Array) -> FlatSolution:
        """Solve one member. When ``active`` is False do no iterations (the polyalgorithm
        uses this so that, under ``vmap``, fallbacks cost nothing unless some member needs
        them); the returned values of an inactive member are then unspecified."""

    def solve(self, problem: FlatProblem, x0: jax.Array, params: Any) -> FlatSolution:
        return self.run(problem, x0, params, jnp.asarray(True))


def check_count(method: Any, name: str, minimum: int) -> None:
    """Raise a clear error unless ``method.<name>`` is an integer >= ``minimum`` (a bad count
    would otherwise surface as a tracing error, or silently as no iterations at all)."""
    value = getattr(method, name)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{type(method).__name__}({name}=...) must be an integer >= {minimum}, "
                         f"got {value!r}.")


def check_linear_solver(method: Any, name: str = "linear_solver") -> None:
    """Raise a clear TypeError unless ``method.<name>`` is a linear solver object."""
    value = getattr(method, name)
    if isinstance(value, AbstractLinearSolver):
        _check_linear_atol(method, value)
        return
    if isinstance(value, type) and issubclass(value, AbstractLinearSolver):
        hint = f"pass an instance: {name}=solvers.{value.__name__}()"
    else:
        hint = f"got {type(value).__name__}; pass e.g. {name}=solvers.DenseLU()"
    raise TypeError(f"{type(method).__name__}({name}=...) must be a linear solver object "
                    f"(solvers.DenseLU(), SparseLU(), GMRES(), ...): {hint}.")


def _check_linear_atol(method: Any, solver: AbstractLinearSolver) -> None:
    """A ValueError where the linear solver's absolute tolerance (a Krylov solver's) is
    looser than the method's: once max|F| is below it the linear solve returns no step."""
    inner, outer = getattr(solver, "atol", None), getattr(method, "atol", None)
    if isinstance(inner, (int, float)) and isinstance(outer, (int, float)) and inner > outer:
        raise ValueError(
            f"{type(solver).__name__}(atol={inner:g}) is looser than "
            f"{type(method).__name__}(atol={outer:g}): once max|F| falls below {inner:g} the "
            f"linear solve returns no step, so the method cannot reach its atol. Give the "
            f"linear solver atol <= {outer:g} (its default 0: the relative rtol alone).")


def check_tolerances(method: Any, *names: str) -> None:
    """Raise a clear error unless every ``method.<name>`` is a finite real number >= 0."""
    for name in names:
        value = getattr(method, name)
        ok = (not isinstance(value, bool) and isinstance(value, (int, float, np.floating,
                                                                  np.integer))
              and np.isfinite(value) and value >= 0)
        if not ok:
            raise ValueError(f"{type(method).__name__}({name}=...) must be a finite number "
                             f">= 0, got {value!r}.")


def relative_step(dx: jax.Array, x: jax.Array) -> jax.Array:
    """``max_i |dx_i| / |x_i|`` (a zero step counts 0, a step from x_i = 0 counts inf): the
    quantity the step test compares with rtol, reported as ``FlatSolution.relative_step``."""
    if dx.size == 0:
        return jnp.zeros((), dx.dtype)
    ratio = jnp.where(dx == 0, 0.0, jnp.abs(dx) / jnp.abs(x))
    return jnp.max(ratio)


def jacobian_finite(linear_solver: Any, op: Any, x: jax.Array) -> jax.Array:
    """Whether the Jacobian operator holds only finite entries (J 1 is finite exactly then,
    as a NaN or inf entry propagates through the sum of its row)."""
    return jnp.all(jnp.isfinite(linear_solver.matvec(op, jnp.ones_like(x))))


def max_abs(v: jax.Array) -> jax.Array:
    """max|v| (0 for an empty vector); NaN if any entry is NaN."""
    if v.size == 0:
        return jnp.zeros((), v.dtype)
    return jnp.max(jnp.abs(v))


def all_finite(tree: Any) -> jax.Array:
    """True if every inexact leaf of ``tree`` is finite (integer leaves always are)."""
    leaves = [jnp.asarray(leaf) for leaf in jax.tree_util.tree_leaves(tree)]
    checks = [jnp.all(jnp.isfinite(leaf)) for leaf in leaves
              if jnp.issubdtype(leaf.dtype, jnp.inexact)]
    return jnp.all(jnp.stack(checks)) if checks else jnp.asarray(True)


def code(member: RESULTS) -> jax.Array:
    return jnp.asarray(int(member), dtype=jnp.int32)


def apply_step_limit(problem: FlatProblem, x, dx, params) -> jax.Array:
    """The model's accepted fraction of ``dx`` in (0, 1] (1 without a hook or if invalid)."""
    if problem.step_limit is None:
        return jnp.ones((), x.dtype)
    frac = jnp.asarray(problem.step_limit(x, dx, params), dtype=x.dtype)
    if frac.shape != ():
        raise ValueError(
            f"step_limit must return a scalar fraction in (0, 1], got shape {frac.shape}; "
            "take the minimum over elements (e.g. jnp.min) before returning."
        )
    ok = jnp.isfinite(frac) & (frac > 0)
    return jnp.where(ok, jnp.minimum(frac, 1.0), 1.0)


def step_is_small(dx: jax.Array, x: jax.Array, rtol: float) -> jax.Array:
    """Every component of the step is within ``rtol`` of the component of x (relative)."""
    return jnp.all(jnp.abs(dx) <= rtol * jnp.abs(x))


def initial_checks(fn, x0, params, active, atol):
    """Evaluate F(x0); return (x0 with non-finite entries zeroed, F(x0), code, done).

    The code is ``nonfinite_input`` / ``nonfinite_residual`` / ``successful``; ``done`` is
    set for inactive members, failures, and a start that already satisfies ``atol``."""
    inputs_ok = jnp.all(jnp.isfinite(x0)) & all_finite(params)
    x0 = jnp.where(jnp.isfinite(x0), x0, 0.0)
    f0 = fn(x0, params)
    f_ok = jnp.all(jnp.isfinite(f0))
    result = jnp.where(~inputs_ok, code(RESULTS.nonfinite_input),
                       jnp.where(~f_ok, code(RESULTS.nonfinite_residual),
                                 code(RESULTS.successful)))
    converged = inputs_ok & f_ok & (max_abs(f0) <= atol)
    done = ~active | ~inputs_ok | ~f_ok | converged
    return x0, f0, result, done
