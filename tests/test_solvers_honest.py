"""Honest results at the edges: no success off a root, a code for every failure, clear errors
for misuse (issue 16)."""

import dataclasses
import pathlib
import re
import subprocess
import sys
import textwrap
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simgraph as sg
import solvers
from solvers import RESULTS
from scenarios import truss


def code(sol, i=()):
    return RESULTS(int(np.asarray(sol.result)[i]))


class TwoWays(sg.ReffableTreeNode):
    """x = 1 and x = 2: over-determined and inconsistent."""

    x: jax.Array = sg.unknown(default=0.0)

    def residual(self):
        return jnp.stack([self.x - 1.0, self.x - 2.0])


class Agreeing(sg.ReffableTreeNode):
    """x = 1 and 2 x = 2: over-determined and consistent."""

    x: jax.Array = sg.unknown(default=0.0)

    def residual(self):
        return jnp.stack([self.x - 1.0, 2.0 * self.x - 2.0])


class Loose(sg.ReffableTreeNode):
    """One equation in two unknowns."""

    x: jax.Array = sg.unknown(default=jnp.zeros(2))

    def residual(self):
        return jnp.sum(self.x, keepdims=True) - 1.0


class SignedRoot(sg.ReffableTreeNode):
    """sign(x) sqrt|x| = 1: finite F, NaN derivative at x = 0."""

    x: jax.Array = sg.unknown(default=0.0)

    def residual(self):
        return jnp.sign(self.x) * jnp.sqrt(jnp.abs(self.x)) - 1.0


def two_ways(x, p):
    return jnp.concatenate([x - 1.0, x - 2.0])


@pytest.mark.parametrize("method, expected", [
    (solvers.LevenbergMarquardt(), RESULTS.local_minimum),
    (solvers.Default(), RESULTS.local_minimum),
    (solvers.JaxoptGaussNewton(), RESULTS.local_minimum),
    # jaxopt's own test (||J^T F|| <= 1e-3 atol) is never met in round-off: honest too
    (solvers.JaxoptLevenbergMarquardt(), RESULTS.max_steps_reached),
], ids=lambda m: type(m).__name__)
def test_inconsistent_least_squares_is_not_successful(method, expected):
    sol = solvers.solve_flat(two_ways, jnp.zeros(1), solver=method)
    assert code(sol) is expected and not bool(sol.converged)
    np.testing.assert_allclose(sol.x, [1.5], rtol=1e-6)
    np.testing.assert_allclose(sol.residual_norm, 0.5, rtol=1e-6)
    if expected is RESULTS.local_minimum:
        assert "least-squares point of inconsistent equations" in sol.message()


def test_least_squares_is_reachable_from_a_graph_as_the_error_says():
    with pytest.raises(solvers.EquationCountError,
                       match=r"solvers.solve\(graph, solvers.LevenbergMarquardt\(\)\)"):
        solvers.solve(TwoWays())
    fit = solvers.solve(TwoWays(), solvers.LevenbergMarquardt())
    assert code(fit) is RESULTS.local_minimum
    np.testing.assert_allclose(fit.x, [1.5], rtol=1e-8)
    exact = solvers.solve(Agreeing(), solvers.LevenbergMarquardt())
    assert code(exact) is RESULTS.successful
    np.testing.assert_allclose(exact.system.x, 1.0, rtol=1e-10)


def test_shape_errors_name_the_chosen_method_and_fit_the_case():
    loose = solvers.System.build(Loose(), square=False)
    for method, name in ((None, r"solvers.Default\(\)"),
                         (solvers.LevenbergMarquardt(), r"solvers.LevenbergMarquardt\(\)")):
        with pytest.raises(ValueError, match=name) as err:
            solvers.solve(loose, method)
        assert "Newton" not in str(err.value) and "least-squares" not in str(err.value)
        assert "add equations" in str(err.value)
    with pytest.raises(ValueError, match=r"solvers.TrustRegion\(\) needs a square") as err:
        solvers.solve_flat(two_ways, jnp.zeros(1), solver=solvers.TrustRegion())
    assert "LevenbergMarquardt" in str(err.value)


@pytest.mark.parametrize("method", [solvers.Newton(), solvers.LevenbergMarquardt(),
                                    solvers.TrustRegion(), solvers.Default()],
                         ids=lambda m: type(m).__name__)
def test_nan_jacobian_with_finite_residual_has_its_own_code(method):
    f = lambda x, p: jnp.sign(x) * jnp.sqrt(jnp.abs(x)) - 1.0
    sol = solvers.solve_flat(f, jnp.zeros(1), solver=method)
    assert code(sol) is RESULTS.nonfinite_jacobian
    assert "Jacobian holds NaN or inf" in sol.message()


@pytest.mark.parametrize("method", [solvers.Newton(), solvers.TrustRegion()],
                         ids=lambda m: type(m).__name__)
def test_an_infinite_jacobian_is_no_converged_step(method):
    # sqrt(x) = p from x = 0: J = inf, so the Newton step F / inf is exactly 0 and passed
    # the step test: 'successful' at x = 0 with max|F| = p, for every member
    f = lambda x, p: jnp.sqrt(x) - p  # noqa: E731
    sol = solvers.solve_batch(f, jnp.zeros(1), jnp.asarray([[2.0], [3.0]]), solver=method)
    assert sol.result.tolist() == [int(RESULTS.nonfinite_jacobian)] * 2
    np.testing.assert_array_equal(sol.residual_norm, [2.0, 3.0])


def test_diagnose_names_nonfinite_derivatives_and_never_raises():
    sol = solvers.solve(SignedRoot(), solvers.Newton())
    assert code(sol) is RESULTS.nonfinite_jacobian
    found = sol.lowered.diagnose(sol.x)
    assert "NaN or inf entries in the equations .residual" in found
    assert sol.diagnose() == found
    with pytest.raises(solvers.SingularComponentError, match="NaN or inf"):
        sol.lowered.validate(numeric=True)
    assert sol.lowered.diagnose(jnp.full(1, jnp.nan)) is not None  # a NaN point: no LinAlgError


def _mechanism():
    """A triangle on two rollers pushed sideways: it slides, no equilibrium exists."""
    return truss.build_truss(
        {"a": (0.0, 0.0), "b": (1.0, 0.0), "c": (0.5, 1.0)},
        {"ab": ("a", "b", 1000.0), "bc": ("b", "c", 1000.0), "ca": ("c", "a", 1000.0)},
        supports={"ra": ("a", (False, True)), "rb": ("b", (False, True))},
        loads={"P": ("c", (1.0, 0.0))})


def test_failure_message_of_a_mechanism_leads_to_the_singular_block():
    sol = solvers.solve(_mechanism(), solvers.Newton())
    assert code(sol) is RESULTS.singular_jacobian
    assert "solution.diagnose()" in sol.message()
    with pytest.raises(solvers.SolveError,
                       match=r"Diagnosis: .*\.nodes\[0\].*singular Jacobian block") as err:
        sol.raise_if_failed()
    assert err.value.code is RESULTS.singular_jacobian


def test_default_method_leads_from_a_mechanism_to_the_singular_block():
    # one bar on two rollers pushed along its axis: it slides, no equilibrium exists
    slides = truss.build_truss({"a": (0.0, 0.0), "b": (1.0, 0.0)}, {"ab": ("a", "b", 1000.0)},
                               supports={"ra": ("a", (False, True)), "rb": ("b", (False, True))},
                               loads={"P": ("b", (1.0, 0.0))})
    sol = solvers.solve(slides)  # the default method
    assert not bool(sol.converged)
    # singular_jacobian or max_steps_reached, by rounding at the exactly singular pivot:
    # both messages send the user to diagnose(), which names the block
    assert code(sol) in (RESULTS.singular_jacobian, RESULTS.max_steps_reached)
    assert "solution.diagnose()" in sol.message()
    assert re.search(r"\.nodes\[0\].*singular Jacobian block", sol.diagnose())


class Square(sg.ReffableTreeNode):
    """x^2 = c from x = 0, where the Jacobian is singular."""

    c: jax.Array = 4.0
    x: jax.Array = sg.unknown(default=0.0)

    def residual(self):
        return self.x ** 2 - self.c


def test_diagnose_falls_back_to_the_start():
    sol = solvers.solve(Square(), solvers.Newton())
    assert code(sol) is RESULTS.singular_jacobian
    moved = dataclasses.replace(sol, x=jnp.ones(1))
    assert moved.lowered.diagnose(moved.x) is None  # regular where the solve stopped
    assert moved.diagnose().startswith("at the start x0, the Jacobian is singular")


def test_gradient_of_a_failed_member_is_nan_and_masking_gives_zero():
    def solve(p):
        return solvers.solve_flat_batch(lambda x, q: x ** 2 - q, jnp.ones(1), p[:, None],
                                        solver=solvers.Newton())

    p = jnp.array([4.0, -1.0])
    assert [code(solve(p), i) for i in range(2)] == [RESULTS.successful,
                                                      RESULTS.singular_jacobian]
    grad = jax.grad(lambda q: jnp.sum(solve(q).x))(p)
    assert grad[0] == pytest.approx(0.25) and np.isnan(grad[1])
    tangent = jax.jvp(lambda q: solve(q).x, (p,), (jnp.ones(2),))[1]
    assert tangent[0, 0] == pytest.approx(0.25) and np.isnan(tangent[1, 0])
    masked = jax.grad(lambda q: jnp.sum(jnp.where(solve(q).converged[:, None],
                                                  solve(q).x, 0.0)))(p)
    assert masked[0] == pytest.approx(0.25) and masked[1] == 0.0


def test_float32_solves_converge_without_x64():
    script = textwrap.dedent("""
        import jax, jax.numpy as jnp
        import simgraph as sg, solvers

        class Cubic(sg.ReffableTreeNode):
            v: jax.Array = sg.unknown(default=0.0)

            def residual(self):
                return jnp.exp(self.v) - 3.0 + self.v ** 3

        sol = solvers.solve(Cubic())
        flat = solvers.solve_flat(lambda x, p: x ** 2 - 2.0, jnp.ones(1))
        print(sol.x.dtype, sol.result, int(sol.iterations), flat.result, float(flat.x[0]))
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300, cwd=pathlib.Path(__file__).resolve().parents[1])
    dtype, result, iterations, flat_result, root = run.stdout.split()
    assert (dtype, result, flat_result) == ("float32", "0", "0"), run.stderr
    assert int(iterations) < 20
    assert float(root) == pytest.approx(np.sqrt(2.0), rel=1e-6)


@pytest.mark.parametrize("dtype", [jnp.float16, jnp.bfloat16])
@pytest.mark.parametrize("solver", [None, solvers.Newton()])
def test_half_precision_solves_reach_the_root(dtype, solver):
    # LAPACK has no half precision: DenseLU factors in float32 (before: NotImplementedError).
    # rtol is capped: 100 eps of bfloat16 is 0.78, and a step of 78% of x ended the solve
    # as converged at x = 3.3 (|F| = 36) for the roots 1, 2, 3.
    sol = solvers.solve(lambda x, p: x ** 3 - p, jnp.full(3, 5.0, dtype),
                        jnp.asarray([1.0, 8.0, 27.0], dtype), solver=solver)
    assert sol.x.dtype == dtype and code(sol) == RESULTS.successful
    np.testing.assert_allclose(np.asarray(sol.x, np.float32), [1.0, 2.0, 3.0], rtol=1e-2)


class IntResidual(sg.ReffableTreeNode):
    x: jax.Array = sg.unknown(default=1.0)

    def residual(self):
        return (self.x > 2).astype(int)


class ComplexResidual(sg.ReffableTreeNode):
    x: jax.Array = sg.unknown(default=1.0)

    def residual(self):
        return self.x + 1j


@pytest.mark.parametrize("node, match", [(IntResidual, "int64, but residuals must be real"),
                                         (ComplexResidual, "real and imaginary parts")])
def test_graph_residuals_that_are_not_real_floats_are_model_errors(node, match):
    # An integer residual failed with "dtype([('float0', 'V')]) is not a valid dtype".
    with pytest.raises(solvers.ModelError, match=match):
        solvers.solve(node())


def test_throw_inside_jit_raises_jax_runtime_error_quietly(caplog):
    @jax.jit
    def solve(p):
        return solvers.solve_flat(lambda x, q: x ** 2 - q, jnp.ones(1), p, throw=True,
                                  solver=solvers.Newton(max_steps=5)).x

    with pytest.raises(jax.errors.JaxRuntimeError, match="SolveError: nonfinite_input"):
        jax.block_until_ready(solve(jnp.array([jnp.nan])))
    # JAX logs a failed callback with its traceback (13 lines on stderr): not ours
    assert not [r for r in caplog.records if "callback failed" in r.getMessage()]


def test_absolute_test_on_f_is_visible_in_the_result():
    far = solvers.solve_flat(lambda x, p: jnp.exp(x), jnp.zeros(1), solver=solvers.Newton())
    assert code(far) is RESULTS.successful and float(far.x[0]) == pytest.approx(-24.0)
    assert float(far.relative_step) > 1e-2  # x still moved by 4%: F's absolute test decided
    assert "relative step 0.0435" in far.message()
    near = solvers.solve_flat(lambda x, p: x - 3.0 * jnp.tanh(x), jnp.ones(1) * 2.0,
                              solver=solvers.Newton(atol=0.0))
    assert code(near) is RESULTS.successful and float(near.relative_step) <= 1e-10


def test_solution_system_is_one_object():
    class Leaf(sg.ReffableTreeNode):
        v: jax.Array = sg.unknown(default=0.0)

        def residual(self):
            return self.v - 1.0

    class Pair(sg.ReffableTreeNode):
        a: Leaf
        b: Leaf

    leaf = Leaf()
    sol = solvers.solve(sg.Bundle(Pair(leaf, leaf), Pair(leaf, leaf)))
    assert sol.system is sol.system
    assert sol.system[0].a is sol.system[1].b


class Labelled(sg.ReffableTreeNode):
    v: jax.Array = sg.unknown(default=0.0)
    name: str = sg.static(default="")

    def residual(self):
        return self.v - 1.0


def test_static_names_that_multiply_kinds_warn():
    with pytest.warns(UserWarning, match="40 Labelled nodes fall into 40 element kinds .*name"):
        solvers.System.build(sg.Bundle(*[Labelled(name=f"n{i}") for i in range(40)]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        solvers.System.build(sg.Bundle(*[Labelled(name="same") for _ in range(40)]))
        solvers.System.build(sg.Bundle(*[Labelled(name=f"m{i}") for i in range(3)]))


@pytest.mark.parametrize("make", [
    lambda: solvers.JaxoptBroyden(max_steps=0),
    lambda: solvers.JaxoptGaussNewton(max_steps=-1),
    lambda: solvers.JaxoptLevenbergMarquardt(atol=-1e-3),
    lambda: solvers.Default(atol=-1),
    lambda: solvers.Default(rtol=float("inf")),
    lambda: solvers.Newton(rtol=float("nan")),
    lambda: solvers.LevenbergMarquardt(gtol=-1.0),
    lambda: solvers.TrustRegion(atol="1e-8"),
    lambda: solvers.Default(methods=()),
], ids=range(9))
def test_bad_method_settings_fail_when_made(make):
    with pytest.raises(ValueError, match="must be"):
        make()


@pytest.mark.parametrize("make, message", [
    (lambda: solvers.Newton(linear_solver=solvers.DenseLU), r"pass an instance: "
     r"linear_solver=solvers\.DenseLU\(\)"),
    (lambda: solvers.Default(linear_solver=None), "must be a linear solver object"),
    (lambda: solvers.TrustRegion(linear_solver=solvers.Newton()), "got Newton"),
    (lambda: solvers.LevenbergMarquardt(linear_solver="dense"), "got str"),
    (lambda: solvers.JaxoptBroyden(linear_solver=1), "got int"),
    (lambda: solvers.Homotopy(inner=solvers.TrustRegion()), r"inner=\.\.\.\) must be a "
     r"solvers\.Newton"),
    (lambda: solvers.JaxoptBroyden(options={1: 2}), "by name"),
], ids=range(7))
def test_bad_parts_of_a_method_fail_when_made(make, message):
    # These ended in AttributeError/TypeError from inside the solve.
    with pytest.raises(TypeError, match=message):
        make()


def test_a_list_of_methods_and_a_dict_of_jaxopt_options_are_taken():
    # Both were unhashable: "unhashable type" from inside jit.
    fn = lambda x, p: x ** 2 - p  # noqa: E731
    for method in (solvers.Default(methods=[solvers.Newton()]),
                   solvers.JaxoptBroyden(options={"maxiter": 40})):
        sol = solvers.solve_flat(fn, jnp.array([1.0]), 4.0, solver=method)
        assert bool(sol.converged) and float(sol.x[0]) == pytest.approx(2.0)
    assert solvers.JaxoptBroyden(options={"maxiter": 40}) == solvers.JaxoptBroyden(
        options=(("maxiter", 40),))


def test_homotopy_refuses_the_end_of_a_path_that_is_not_the_problem():
    """A continuation hook whose t = 1 is not the problem itself ended at x = sqrt(2) for
    x^2 = 4, reported successful next to its own max|F| of 2."""
    fn = lambda x, p: x ** 2 - p  # noqa: E731
    broken = solvers.solve(fn, jnp.ones(1), jnp.asarray(4.0), solver=solvers.Homotopy(),
                           continuation=lambda p, t: 0.5 * p)
    assert RESULTS(int(broken.result)) is RESULTS.continuation_failed
    right = solvers.solve(fn, jnp.ones(1), jnp.asarray(4.0), solver=solvers.Homotopy(),
                          continuation=lambda p, t: t * p + (1 - t))
    assert bool(right.converged) and float(right.x[0]) == pytest.approx(2.0)


def test_homotopy_refuses_a_hook_that_does_not_return_params():
    """A continuation hook that forgot its return gave F None: a raw TypeError from inside
    the user's residual, naming neither the hook nor the fix."""
    fn = lambda x, p: x ** 2 - p  # noqa: E731
    for hook in (lambda p, t: None, lambda p, t: (p, t), lambda p, t: jnp.stack([p, p])):
        with pytest.raises(TypeError, match=r"continuation\(params, t\) must return params"):
            solvers.solve(fn, jnp.ones(1), jnp.asarray(4.0), solver=solvers.Homotopy(),
                          continuation=hook)
    # Default reaches Homotopy only as a fallback: the hook is checked when it is traced
    with pytest.raises(TypeError, match="continuation hook"):
        jax.jit(lambda p: solvers.solve(fn, jnp.ones(1), p, continuation=lambda q, t: None,
                                        solver=solvers.Default(methods=[solvers.Homotopy()])).x
                )(jnp.asarray(4.0))


def test_empty_system_and_batch_are_clear_errors():
    with pytest.raises(ValueError, match="no unknowns"):
        solvers.solve_flat(lambda x, p: x, jnp.zeros(0))
    with pytest.raises(ValueError, match="batch is empty"):
        solvers.solve_flat_batch(lambda x, p: x - p, jnp.zeros(1), jnp.zeros((0, 1)))
    with pytest.raises(ValueError, match="empty"):
        solvers.solve_batch(Square(), {".c": jnp.zeros(0)})

    class Empty(sg.ReffableTreeNode):
        x: jax.Array = sg.unknown(default=jnp.zeros(0))

        def residual(self):
            return self.x

    # was "no node declares a field with sg.unknown()", which it does
    with pytest.raises(solvers.ModelError, match="fields \\(Empty.x\\) hold empty arrays"):
        solvers.solve(Empty())


def test_complex_unknowns_are_refused():
    class Phasor(sg.ReffableTreeNode):
        z: jax.Array = sg.unknown(default=1.0 + 0.0j)

        def residual(self):
            return self.z ** 2 - 1.0

    with pytest.raises(solvers.ModelError, match="Phasor.z .*unknowns must be real"):
        solvers.solve(Phasor())
    with pytest.raises(ValueError, match="unknowns must be real"):
        solvers.solve_flat(lambda x, p: x ** 2 - 1.0, jnp.ones(1, complex))
