"""Linear solves inside Newton-type steps: ``J dx = -F`` for the Jacobian of ``F(x, params)``.

Every linear solver is configuration only (lineax style): ``SparseLU()`` holds options, and a
solve binds it to the system's Jacobian pattern (`bind_linear_solvers`). Each returns its
value with a result code. Dense LU and matrix-free Krylov for small or implicit Jacobians;
graph-coloured sparse Jacobians (`SparsityPattern`) factored on the device (`SparseLU`,
`BandedLU`, `SparseDenseLU`, `SparseKrylov`) or by SuperLU on the host (`SparseHostLU`, with
a Schur complement for saddle points; `superlu` for a SciPy matrix); `AutoLinearSolver` is
the one place that chooses among them.
"""

from ._abstract import AbstractLinearSolver, LinearSolution
from ._auto import AutoLinearSolver
from ._banded import BandedLU
from ._bind import bind_linear_solvers
from ._dense import DenseLU
from ._host_lu import superlu
from ._krylov import GMRES, BiCGStab
from ._sparse import SparseHostLU, SparseLU
from ._sparse_auto import SparseAuto
from ._sparse_dense import SparseDenseLU
from ._sparse_krylov import SparseKrylov
from ._sparsity import SparsityError, SparsityPattern

__all__ = [
    "AbstractLinearSolver", "AutoLinearSolver", "BandedLU", "BiCGStab", "DenseLU", "GMRES",
    "LinearSolution", "SparseAuto", "SparseDenseLU", "SparseHostLU", "SparseKrylov", "SparseLU",
    "SparsityError", "SparsityPattern", "bind_linear_solvers", "superlu",
]
