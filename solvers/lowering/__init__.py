"""From a graph of equations to a flat system ``F(x, params) = 0`` (`System`).

Reads the graph only through simgraph's public structure API (``sg.structure``,
``sg.fields``): nodes are sorted into kinds and stacked (host side), grouped so one vmapped
trace evaluates each group (grouped evaluation; object-by-object evaluation is the reference
and fallback), contributions become scatter-adds, stored charges ``Q`` (with the `Clock`) are
lowered the same way for transients. The Jacobian's sparsity comes from the traced data
flow; key paths name every unknown and equation; structural and numerical singularity are
diagnosed by name (`ModelError` and its subclasses).
"""

from ._model_errors import (
    ContributionError,
    EquationCountError,
    LoweringError,
    MethodError,
    ModelError,
    SingularComponentError,
    StructurallySingularError,
)
from ._storage import Clock
from ._system import System

__all__ = [
    "Clock", "ContributionError", "EquationCountError", "LoweringError", "MethodError",
    "ModelError", "SingularComponentError", "StructurallySingularError", "System",
]
