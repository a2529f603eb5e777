"""Root finding on a flat system ``F(x, params) = 0``: the iteration and its methods.

A method is an object (`Newton`, `TrustRegion`, `LevenbergMarquardt`, `Homotopy`, the
`Default` polyalgorithm, jaxopt back ends) that holds configuration and runs on a
`FlatProblem`; `solve_flat` runs one member and differentiates the root implicitly. Every
method returns a `Solution` (also named `FlatSolution`) with a `RESULTS` code per member; Newton-type steps go
through a linear solver from ``solvers.linear``.
"""

from ._homotopy import Homotopy
from ._jaxopt_backend import JaxoptBroyden, JaxoptGaussNewton, JaxoptLevenbergMarquardt
from ._levenberg_marquardt import LevenbergMarquardt
from ._method import AbstractRootMethod, FlatProblem
from ._newton import Newton
from ._polyalgorithm import Default
from ._solution import FlatSolution, Solution, SolveError
from ._solve import solve_flat
from ._trust_region import TrustRegion

__all__ = [
    "AbstractRootMethod", "Default", "FlatProblem", "FlatSolution", "Homotopy",
    "JaxoptBroyden", "JaxoptGaussNewton", "JaxoptLevenbergMarquardt", "LevenbergMarquardt",
    "Newton", "Solution", "SolveError", "TrustRegion", "solve_flat",
]
