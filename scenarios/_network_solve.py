"""Graph-level solves for the network domains (water, power flow): one solve or one batched sweep.

A thin layer over ``solvers.solve`` / ``solvers.solve_batch``: it lowers the graph once, takes
``solvers.default_method``'s method (and so its choice of linear solver) to the domain's
tolerances, and keeps the solved graph, from which results are read by name.

`host_newton` steps the full-Newton stage of a single solve from the host when its linear
solver is the host LU: the compiled program is then F and J alone, with no host callback in
it, so JAX's persistent compilation cache keeps it for the next process (a program holding a
callback is never cached), and it compiles in about a third of the time of the whole solve.
Its linear solves run on the host directly (``SparseHostLU.host_sequence``: with KLU, each
step after the first refactors with the previous step's pivots).
"""
from __future__ import annotations

import dataclasses
import functools
import warnings
from typing import Any, Mapping

import jax
import numpy as np

import solvers

__all__ = ["NetworkMethod", "Solved", "host_newton", "method_for", "scalar", "solve_graph",
           "solve_graph_batch"]


class Solved:
    """The lowered System, the ``solvers.Solution`` (``result``, ``converged``, ``iterations``,
    ``residual_norm``) and the solved graph (leaves with a leading batch axis in a sweep),
    built on first access: a caller that reads only the status pays nothing for it."""

    def __init__(self, system: Any, solution: Any):
        self.system, self.solution = system, solution

    @functools.cached_property
    def graph(self) -> Any:
        return self.solution.system


@dataclasses.dataclass(frozen=True)
class NetworkMethod:
    """The network domains' default method factory: ``solvers.default_method`` (the project's
    one choice of linear solver: dense LU for small systems, a sparse LU with a fill-reducing
    ordering for large ones, a batched back end for sweeps) to max|F| <= ``atol``. In float32
    (``jax_enable_x64`` off) it warns and uses ``atol32`` and ``rtol = 1e-6``: the float64
    tolerances are below float32 roundoff."""

    atol: float
    rtol: float
    atol32: float = 1e-4
    host_steps: bool = False  # step the first stage of a single solve with `host_newton`

    def __call__(self, system, batch_size: int | None = None) -> Any:
        a, r = self.atol, self.rtol
        if np.dtype(system.x0.dtype).itemsize < 8:
            warnings.warn("solving in float32 because jax_enable_x64 is off: expect about 6 "
                          "significant digits. For reference accuracy call "
                          "jax.config.update('jax_enable_x64', True) before building the "
                          "model.", stacklevel=5)
            a, r = self.atol32, 1e-6
        return solvers.default_method(system, batch_size=batch_size, atol=a, rtol=r)

    def stages(self, system) -> tuple[Any, Any]:
        """``(Newton, the fallback stages or None)`` of the default method: a caller that
        can restart elsewhere tries other starts before the (slower) fallbacks."""
        method = self(system)
        parts = method.split(system.m, system.n) if isinstance(method, solvers.Default) else None
        return parts if parts is not None else (method, None)


def method_for(method: Any, system, batch_size: int | None = None) -> Any:
    """``method`` itself (a root method) or what the factory ``method`` makes for ``system``
    (a :class:`NetworkMethod` also hears the batch size)."""
    if isinstance(method, solvers.AbstractRootMethod):
        return method
    if isinstance(method, NetworkMethod):
        return method(system, batch_size)
    return method(system)


def solve_graph(root: Any, method: Any, host_steps: bool = False) -> Solved:
    """Solve the graph of ``root`` (or a prebuilt ``solvers.System``); ``method`` is a root
    method or a factory ``system -> method`` (see :class:`NetworkMethod`). ``host_steps``:
    a full Newton on the host LU runs as `host_newton` (same steps, same answer)."""
    system = root if isinstance(root, solvers.System) else solvers.System.build(root)
    method = method_for(method, system)
    flat = host_newton(system, method) if host_steps else None
    solution = (solvers.solve(system, method) if flat is None
                else dataclasses.replace(flat, lowered=system))
    return Solved(system, solution)


def host_newton(system, newton) -> solvers.FlatSolution | None:
    """``newton`` (a ``solvers.Newton`` whose linear solver is a bound ``SparseHostLU``, on
    CPU, for a system without ``step_limit``) stepped from the host: one compiled program for
    F and J, the host LU between its calls. Full steps, as ``newton`` takes them while they
    converge; where it would search (no watchdog), or after ``watchdog`` steps in a row
    without a new smallest max|F| or a non-finite F, None or a failed solution (code
    ``line_search_failed``, x the best point): the caller's fallbacks take over. None when
    ``newton`` is not such a method."""
    solver = getattr(newton, "linear_solver", None)
    if not (isinstance(newton, solvers.Newton) and isinstance(solver, solvers.SparseHostLU)
            and solver.jacobian is not None and jax.default_backend() == "cpu"
            and system.n > 0 and not system.has_step_limit
            and (newton.watchdog > 0 or not newton.line_search)):
        return None
    limit = newton.watchdog if newton.line_search else newton.max_steps + 1
    x, steps, small, rel = np.array(system.x0), 0, False, np.nan
    best, streak = (np.inf, x), 0
    solve = solver.host_sequence()  # KLU: refactors with the last step's pivots
    while True:
        f, values = _linearize(solver, system, x)
        norm = float(np.max(np.abs(f)))
        if np.isfinite(norm) and norm < best[0]:
            best, streak = (norm, x), 0
        else:
            streak += 1
        if norm <= newton.atol or small:
            return _flat(x, solvers.RESULTS.successful, steps, norm, rel)
        if streak >= limit or not np.isfinite(norm):
            return _flat(best[1], solvers.RESULTS.line_search_failed, steps, best[0], rel)
        if steps >= newton.max_steps:
            return _flat(x, solvers.RESULTS.max_steps_reached, steps, norm, rel)
        dx = -solve(values, f)
        if not np.all(np.isfinite(dx)):  # the host LU's signal for a singular Jacobian
            return _flat(x, solvers.RESULTS.singular_jacobian, steps, norm, np.inf)
        small = bool(np.all(np.abs(dx) <= newton.rtol * np.abs(x)))
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = float(np.max(np.where(dx == 0, 0.0, np.abs(dx) / np.abs(x))))
        x, steps = x + dx, steps + 1


def _linearize(solver, system, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(F(x), J(x)'s values in pattern order)`` as NumPy arrays: one compiled program per
    structure and solver."""
    f, values = _linearize_jit(solver, system, x)
    return np.asarray(f), np.asarray(values)


@functools.partial(jax.jit, static_argnums=0)
def _linearize_jit(solver, system, x):
    f, op = solver.linearize(system.residual_function, x, system.params)
    return f, solver.values(op)


def _flat(x, code, steps: int, norm: float, rel: float = np.nan) -> solvers.FlatSolution:
    """A one-member ``FlatSolution`` (numpy leaves: no compile per shape)."""
    code = np.int32(int(code))
    steps = np.int32(steps)
    return solvers.FlatSolution(x, code, np.bool_(code == int(solvers.RESULTS.successful)),
                                steps, steps + 1, steps + 1, x.dtype.type(norm),
                                x.dtype.type(rel))


def solve_graph_batch(root: Any, method: Any, updates: Mapping[Any, Any],
                      progress: bool | None = None) -> Solved:
    """One batched solve: ``updates`` maps parameter selectors (a key path such as
    ``".hydraulics.demand_multiplier"``, ``"Class.field"``, a class or a filter, as
    ``System.set_params`` takes them) to values with a common leading batch axis.
    ``progress``: show a progress bar (default: on a terminal, for batches run in chunks)."""
    system = solvers.System.build(root)  # solve_batch checks the keys and batch sizes
    values = {k: np.asarray(v) for k, v in updates.items()}
    batch = len(next(iter(values.values()))) if values else None
    solution = solvers.solve_batch(system, values, method_for(method, system, batch),
                                   progress=progress)
    return Solved(system, solution)


def scalar(value, index) -> Any:
    """``value[index]`` as a Python number (``index`` None: the unbatched value)."""
    a = np.asarray(value)
    return (a if index is None else a[index]).item()
