"""A solved system as a pandas table: one row per unknown (key path, owner class, value).

pandas is an optional extra (``pip install 'simgraph[tables]'``), imported only when a table
is asked for, so importing ``solvers`` never loads it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["solution_frame", "import_pandas"]

INSTALL_HINT = "pip install 'simgraph[tables]' (or pip install pandas)"


def import_pandas(what: str = "to_frame()") -> Any:
    """The pandas module, or an ImportError saying how to install it."""
    try:
        import pandas
    except ImportError:
        raise ImportError(f"{what} needs pandas, which is not installed: {INSTALL_HINT}") from None
    return pandas


def unknown_owners(system: Any) -> list[str]:
    """Class name of the node owning each entry of the system's unknown vector x."""
    owners = [""] * system.n
    for kind in system.structure.an.kinds:
        for j, col in enumerate(kind.columns):
            if col.unknown:
                for i in np.asarray(kind.xidx[j]).reshape(-1).tolist():
                    owners[i] = kind.cls.__name__
    return owners


def solution_frame(solution: Any, long: bool = False) -> Any:
    """Table of the solved unknowns of ``solution`` (a :class:`solvers.Solution`).

    One row per unknown, indexed by its key path, with columns ``owner`` (the node's class)
    and ``value``; for a batch one column per member (``0, 1, ...``; a sweep's process part
    from its ``first_member``) instead of ``value``,
    or with ``long=True`` one row per (member, unknown) with columns ``member``, ``path``,
    ``owner``, ``value``.
    """
    pd = import_pandas("Solution.to_frame()")
    system = solution.lowered
    paths, owners = system.unknown_paths(), unknown_owners(system)
    x = np.asarray(solution.x, dtype=float)
    if x.ndim == 1:
        frame = pd.DataFrame({"owner": owners, "value": x}, index=pd.Index(paths, name="path"))
        return frame.reset_index() if long else frame
    members = x.reshape(-1, system.n)
    count = len(members)
    first = solution.first_member or 0
    numbers = pd.RangeIndex(first, first + count)
    if long:  # a sweep's process part: members by their numbers in the batch
        return pd.DataFrame({"member": np.repeat(np.asarray(numbers), system.n),
                             "path": paths * count, "owner": owners * count,
                             "value": members.reshape(-1)})
    frame = pd.DataFrame(members.T, index=pd.Index(paths, name="path"), columns=numbers)
    frame.insert(0, "owner", owners)
    return frame
