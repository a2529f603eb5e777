"""Typed result codes of a solve, one per batch member, each with a message saying what to try.

Codes are small integers (an ``IntEnum``) so they live in JAX arrays: a batched solve returns
an ``int32`` array of codes, ``jnp.where`` combines them, and ``RESULTS(int(code))`` turns a
concrete code back into its member for display.
"""

from __future__ import annotations

import enum

import jax.numpy as jnp


class RESULTS(enum.IntEnum):
    """Why a solve stopped. ``successful`` is the only success."""

    successful = 0
    max_steps_reached = 1
    line_search_failed = 2
    singular_jacobian = 3
    nonfinite_residual = 4
    nonfinite_input = 5
    local_minimum = 6
    continuation_failed = 7
    nonfinite_jacobian = 8
    linear_solve_failed = 9

    @property
    def message(self) -> str:
        return _MESSAGES[self]

    def code(self) -> jnp.ndarray:
        """This code as an ``int32`` JAX scalar."""
        return jnp.asarray(int(self), dtype=jnp.int32)

    @classmethod
    def describe(cls, code) -> str:
        """``name: message`` for a concrete integer code."""
        member = cls(int(code))
        return f"{member.name}: {member.message}"


_MESSAGES = {
    RESULTS.successful: (
        "Converged: max|F| <= atol, or the last Newton step changed every x_i by at most "
        "rtol |x_i|. relative_step (max |dx_i| / |x_i| of the last step) says which: above "
        "rtol, only the absolute test on F held (exp(x) = 0 passes it at x = -24), so check "
        "that atol suits the scale of F."
    ),
    RESULTS.max_steps_reached: (
        "The iteration limit was reached before convergence. If max|F| is still falling, try "
        "a larger max_steps or a better start x0. Newton, TrustRegion or "
        "LevenbergMarquardt alone: try solvers.Default(), which retries failed members with "
        "a dogleg trust region and then homotopy continuation. From Default, every stage "
        "failed and this was the closest attempt: the problem may have no root near x0; "
        "try another start, or find a singular part of a graph's model (a floating node, a "
        "mechanism) with solution.diagnose(), which names the singular block."
    ),
    RESULTS.line_search_failed: (
        "The line search could not reduce ||F||: the iterate is stuck where ||F|| has a "
        "local minimum that is not a root, so the system may have no solution near x0. "
        "Try another start, solvers.Default() (trust region and homotopy fallbacks), "
        "solvers.Homotopy(...), or solvers.LevenbergMarquardt() to find the least-squares "
        "point."
    ),
    RESULTS.singular_jacobian: (
        "The Jacobian is singular or too ill-conditioned to solve with. Look for an "
        "equation that depends on no unknown, an unknown that appears in no equation, or "
        "redundant equations (e.g. a floating node in a circuit, a mechanism in a truss); "
        "for a graph, solution.diagnose() names such parts. Otherwise try "
        "solvers.LevenbergMarquardt(), which regularises the step, or another start. If "
        "||F|| had stopped decreasing, the system may instead have no solution near x0: a "
        "minimum of ||F|| that is not a root has a singular Jacobian."
    ),
    RESULTS.nonfinite_residual: (
        "F returned NaN or inf at the start or at every trial point of a step. Check the "
        "model for division by zero, log or sqrt of negative numbers or overflowing exp; "
        "try a start inside the model's domain, or a step_limit hook that keeps iterates "
        "there."
    ),
    RESULTS.nonfinite_input: (
        "The start x0 or a parameter holds NaN or inf, so nothing was solved for this "
        "member. Fix the input values of this batch member."
    ),
    RESULTS.local_minimum: (
        "Stopped at a local minimum of ||F||^2 that is not a root (trust region, "
        "Levenberg-Marquardt or a jaxopt solver): the system may have no solution, or this "
        "start leads away from it. With more equations than unknowns this is the "
        "least-squares point of inconsistent equations (x is the best fit, F is not 0): fix "
        "the equations if they should agree. A square system that stops here often has a "
        "structurally singular part (a floating node, a mechanism in a truss): for a graph, "
        "solution.diagnose() names the singular block. Else try another start or "
        "solvers.Homotopy(...)."
    ),
    RESULTS.continuation_failed: (
        "Homotopy continuation lost its path (it turned back past the start, or its step "
        "shrank to nothing) before reaching t = 1. Try another start, a larger `steps` "
        "(smaller first path step) or `max_steps`, or give the problem its own continuation "
        "(FlatProblem.continuation, e.g. source stepping). If the problem has its own "
        "continuation, check that continuation(params, 1) is the problem itself: the path's "
        "end is not a root of F otherwise."
    ),
    RESULTS.nonfinite_jacobian: (
        "F is finite but its Jacobian holds NaN or inf (e.g. sqrt(|x|) or |x|^0.5 at x = 0, "
        "where the derivative is infinite), so no Newton step exists. Fix the model's "
        "derivative there (e.g. regularise: sqrt(x^2 + eps^2)) or try a start away from such "
        "points; for a graph, solution.diagnose() names the parts."
    ),
    RESULTS.linear_solve_failed: (
        "The linear solver could not solve the Newton system accurately, or could not tell "
        "whether J is singular: SparseLU's static pivots broke down (a pivot vanished while "
        "its column did not, or the backward error stayed above backward_tol after "
        "refinement), or a Krylov solve (GMRES, BiCGStab, SparseKrylov) stalled. Try a pivoting solver: solvers.SparseHostLU() on CPU, solvers.BandedLU() "
        "for narrow bands, solvers.DenseLU() for small systems; or SparseLU(pivoting="
        "'matching', refine=3); for GMRES a larger restart or max_iters."
    ),
}
