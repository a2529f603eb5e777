"""Batched, differentiable Newton-family solves of F(x, params) = 0 that say when they fail.

Methods are objects passed to a solve (``solver=solvers.Newton(...)``); every method works
through a linear solver (``DenseLU``, ``GMRES``, ``BiCGStab``, a sparse back end such as
``SparseLU()``, bound to the system's Jacobian pattern by the solve, or
``AutoLinearSolver()``, which chooses) and returns a ``FlatSolution`` with a ``RESULTS``
code per member.
"""

from ._batch import solve_flat_batch
from ._compile_cache import enable_compilation_cache
from ._dense import DenseLU
from ._homotopy import Homotopy
from ._jaxopt_backend import JaxoptBroyden, JaxoptGaussNewton, JaxoptLevenbergMarquardt
from ._krylov import GMRES, BiCGStab
from ._levenberg_marquardt import LevenbergMarquardt
from ._linear import AbstractLinearSolver, LinearSolution
from ._method import AbstractRootMethod, FlatProblem
from ._newton import Newton
from ._polyalgorithm import Default
from ._result import RESULTS
from ._solution import FlatSolution, SolveError
from ._solve import solve_flat
from ._trust_region import TrustRegion

from ._graph import Solution, default_method, solve, solve_batch
from ._model_errors import (
    ContributionError,
    EquationCountError,
    LoweringError,
    MethodError,
    ModelError,
    SingularComponentError,
    StructurallySingularError,
)
from ._auto import AutoLinearSolver
from ._banded import BandedLU
from ._sparse import SparseHostLU, SparseLU
from ._sparse_auto import SparseAuto
from ._sparse_krylov import SparseKrylov
from ._sparsity import SparsityError, SparsityPattern
from ._system import System
from ._integrator import TRANSIENT_RESULTS, Integrator
from ._simulate import TransientSolution, simulate, simulate_batch
from ._storage import Clock
from ._distributed import initialize_distributed
from ._sweep import process_members
from ._sweep_store import SweepMismatchError

__all__ = [
    "AbstractLinearSolver",
    "AbstractRootMethod",
    "AutoLinearSolver",
    "BandedLU",
    "BiCGStab",
    "Clock",
    "Default",
    "DenseLU",
    "FlatProblem",
    "FlatSolution",
    "GMRES",
    "Homotopy",
    "Integrator",
    "JaxoptBroyden",
    "JaxoptGaussNewton",
    "JaxoptLevenbergMarquardt",
    "LevenbergMarquardt",
    "LinearSolution",
    "Newton",
    "RESULTS",
    "ContributionError",
    "EquationCountError",
    "LoweringError",
    "MethodError",
    "SingularComponentError",
    "StructurallySingularError",
    "default_method",
    "enable_compilation_cache",
    "initialize_distributed",
    "process_members",
    "ModelError",
    "Solution",
    "SolveError",
    "SparseAuto",
    "SparseHostLU",
    "SparseKrylov",
    "SparsityError",
    "SparsityPattern",
    "SparseLU",
    "SweepMismatchError",
    "System",
    "TRANSIENT_RESULTS",
    "TransientSolution",
    "TrustRegion",
    "solve",
    "solve_batch",
    "solve_flat",
    "solve_flat_batch",
    "simulate",
    "simulate_batch",
]
