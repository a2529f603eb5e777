"""Batched, differentiable Newton-family solves of F(x, params) = 0 that say when they fail.

Two entry points, ``solve`` and ``solve_batch``, take a graph, a ``System`` or a flat
function ``fn(x, params)`` and return a ``Solution`` with a ``RESULTS`` code per member. A
method is an object passed as ``solver=`` (``solvers.Newton(...)``; ``Default`` runs several
in stages); every method works through a linear solver (``DenseLU``, ``GMRES``,
``BiCGStab``, a sparse back end such as ``SparseLU()``, bound to the system's Jacobian
pattern by the solve, or ``AutoLinearSolver()``, which chooses).
"""

from ._compile_cache import enable_compilation_cache
from ._graph import default_method, solve, solve_batch
from ._result import RESULTS
from ._simulate import TransientSolution, simulate, simulate_batch
from .batch import SweepMismatchError, initialize_distributed, process_members, solve_flat_batch
from .linear import (
    AbstractLinearSolver,
    AutoLinearSolver,
    BandedLU,
    BiCGStab,
    DenseLU,
    GMRES,
    LinearSolution,
    SparseAuto,
    SparseDenseLU,
    SparseHostLU,
    SparseKrylov,
    SparseLU,
    SparsityError,
    SparsityPattern,
    superlu,
)
from .lowering import (
    Clock,
    ContributionError,
    EquationCountError,
    LoweringError,
    MethodError,
    ModelError,
    SingularComponentError,
    StructurallySingularError,
    System,
)
from .roots import (
    AbstractRootMethod,
    Default,
    FlatProblem,
    FlatSolution,
    Homotopy,
    JaxoptBroyden,
    JaxoptGaussNewton,
    JaxoptLevenbergMarquardt,
    LevenbergMarquardt,
    Newton,
    Solution,
    SolveError,
    TrustRegion,
    solve_flat,
)
from .transient import TRANSIENT_RESULTS, Integrator

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
    "SparseDenseLU",
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
    "superlu",
]
