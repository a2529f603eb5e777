"""A transient's output as a pandas table: one row per output time, one column per unknown,
named by its key path as `Solution.to_frame` names it.

pandas is an optional extra (``pip install 'simgraph[tables]'``), imported only when a table
is asked for, so importing ``solvers`` never loads it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..roots._frame import import_pandas, unknown_owners

__all__ = ["transient_frame"]


def transient_frame(solution: Any, long: bool = False) -> Any:
    """Table of the output of ``solution`` (a :class:`solvers.TransientSolution`).

    One run: indexed by the output time ``t``, one column per unknown (its key path; the
    columns are named ``path``). A batch: columns ``(member, path)``, one block per member
    (``frame[2]`` is member 2's table; several batch axes are numbered in flat order).
    ``long=True``: one row per (member,) time and unknown, with columns ``member`` (a batch
    only), ``t``, ``path``, ``owner`` (the node's class) and ``value``. Times a failed
    member did not reach hold NaN.
    """
    pd = import_pandas("TransientSolution.to_frame()")
    system = solution.lowered
    paths = system.unknown_paths()
    x = np.asarray(solution.x, dtype=float)
    grid, n = x.shape[-2:]
    members = x.reshape(-1, grid, n)
    times = np.broadcast_to(np.asarray(solution.t, dtype=float), x.shape[:-1]).reshape(-1, grid)
    batched = x.ndim > 2
    if long:
        return _long(pd, times, members, paths, unknown_owners(system), batched)
    if batched and not np.array_equal(times, np.broadcast_to(times[:1], times.shape)):
        raise ValueError("the members of this TransientSolution have different output times "
                         "(a vmap over t_eval), so they share no time index: use "
                         "to_frame(long=True), which has a row per member and time.")
    index = pd.Index(times[0], name="t")
    if not batched:
        return pd.DataFrame(members[0], index=index, columns=pd.Index(paths, name="path"))
    columns = pd.MultiIndex.from_product([range(len(members)), paths], names=["member", "path"])
    return pd.DataFrame(members.transpose(1, 0, 2).reshape(grid, -1), index=index,
                        columns=columns)


def _long(pd, times: np.ndarray, members: np.ndarray, paths: list, owners: list,
          batched: bool) -> Any:
    """One row per member, time and unknown, in that order."""
    count, grid, n = members.shape
    columns = {"t": np.repeat(times.reshape(-1), n), "path": paths * (count * grid),
               "owner": owners * (count * grid), "value": members.reshape(-1)}
    if batched:
        columns = {"member": np.repeat(np.arange(count), grid * n), **columns}
    return pd.DataFrame(columns)
