"""Graph-level solves for the network domains (water, power flow): one solve or one batched sweep.

A thin layer over ``solvers.solve`` / ``solvers.solve_batch``: it lowers the graph once, takes
``solvers.default_method``'s method (and so its choice of linear solver) to the domain's
tolerances, and keeps the solved graph, from which results are read by name.
"""
from __future__ import annotations

import dataclasses
import functools
import warnings
from typing import Any, Mapping

import numpy as np

import simgraph as sg
import solvers

__all__ = ["NetworkMethod", "Solved", "method_for", "scalar", "solve_graph", "solve_graph_batch",
           "sweep_graph"]


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


def solve_graph(root: Any, method: Any) -> Solved:
    """Solve the graph of ``root`` (or a prebuilt ``solvers.System``); ``method`` is a root
    method or a factory ``system -> method`` (see :class:`NetworkMethod`)."""
    system = root if isinstance(root, solvers.System) else solvers.System.build(root)
    return Solved(system, solvers.solve(system, method_for(method, system)))


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


def sweep_graph(root: Any, method: Any, named: Mapping[str, str], parameter: str, values,
                progress: bool | None = None) -> Solved:
    """One batched solve over ``values`` (float64) of ``parameter``: a name of ``named``
    (name -> key path) or a parameter key path. A key that selects no parameter (or not
    these values) says which names there are."""
    where = named.get(parameter, parameter)
    values = np.asarray(values, dtype=np.float64)
    try:
        return solve_graph_batch(root, method, {where: values}, progress)
    except sg.GraphError as err:
        if parameter in named or isinstance(err, solvers.ModelError):
            raise
        # the same error (its type and fields), its message led by the names there are
        err.args = (f"{parameter!r} is not a named sweep parameter (those are "
                    f"{', '.join(named)}); as a key path: {err}",) + err.args[1:]
        raise


def scalar(value, index) -> Any:
    """``value[index]`` as a Python number (``index`` None: the unbatched value)."""
    a = np.asarray(value)
    return (a if index is None else a[index]).item()
