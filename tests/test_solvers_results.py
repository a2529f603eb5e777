"""Failure cases: each gives its own result code and a message that says what to try."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import solvers
from solvers import RESULTS


def square(x, p):
    return x ** 2 - p


def no_root(x, p):
    return x ** 2 + p


def singular(x, p):
    # Two copies of one equation: J is singular everywhere.
    s = x[0] + x[1] - p
    return jnp.stack([s, 2.0 * s + 1.0])


def code(sol, i=()):
    return RESULTS(int(np.asarray(sol.result)[i]))


def test_converged_solution_is_consistent():
    sol = solvers.solve_flat(square, jnp.array([1.0, 3.0]), jnp.array([2.0, 9.0]))
    assert code(sol) is RESULTS.successful and bool(sol.converged)
    np.testing.assert_allclose(sol.x, [np.sqrt(2.0), 3.0], rtol=1e-10)
    assert float(sol.residual_norm) <= 1e-10
    assert int(sol.num_fev) >= int(sol.iterations) >= 1
    assert sol.raise_if_failed() is sol
    assert "successful" in sol.summary()


@pytest.mark.parametrize("method", [solvers.Newton(), solvers.Default()],
                         ids=lambda m: type(m).__name__)
def test_singular_system(method):
    sol = solvers.solve_flat(singular, jnp.zeros(2), 1.0, solver=method)
    assert code(sol) is RESULTS.singular_jacobian
    assert "singular" in sol.message()
    with pytest.raises(solvers.SolveError, match="singular_jacobian") as err:
        sol.raise_if_failed()
    assert err.value.code is RESULTS.singular_jacobian


@pytest.mark.parametrize("method, expected", [
    (solvers.Newton(), RESULTS.line_search_failed),
    (solvers.LevenbergMarquardt(), RESULTS.local_minimum),
    (solvers.TrustRegion(), RESULTS.local_minimum),
    (solvers.Homotopy(), RESULTS.continuation_failed),
    (solvers.Default(), RESULTS.line_search_failed),
], ids=lambda m: type(m).__name__)
def test_no_solution(method, expected):
    sol = solvers.solve_flat(no_root, jnp.array([2.0]), 1.0, solver=method)
    assert code(sol) is expected
    assert not bool(sol.converged)
    assert float(sol.residual_norm) >= 1.0 - 1e-12  # x^2 + 1 >= 1: honest residual
    assert "another start" in sol.message()


def test_nan_param_in_one_member_spoils_no_other():
    params = jnp.array([2.0, jnp.nan, 9.0, 4.0])
    sol = solvers.solve_flat_batch(square, jnp.array([1.0]), params[:, None])
    assert [code(sol, i) for i in range(4)] == [
        RESULTS.successful, RESULTS.nonfinite_input, RESULTS.successful, RESULTS.successful]
    np.testing.assert_allclose(sol.x[[0, 2, 3], 0], [np.sqrt(2.0), 3.0, 2.0], rtol=1e-10)
    assert int(sol.iterations[1]) == 0
    with pytest.raises(solvers.SolveError, match="1 of 4 members failed") as err:
        sol.raise_if_failed()
    assert err.value.index == 1 and err.value.code is RESULTS.nonfinite_input
    assert "member 1: nonfinite_input" in sol.summary()


def test_nonfinite_start_is_reported_per_member():
    x0 = jnp.array([[1.0], [jnp.inf]])
    sol = solvers.solve_flat_batch(square, x0, jnp.array([2.0]), params_axes=None)
    assert [code(sol, i) for i in range(2)] == [RESULTS.successful, RESULTS.nonfinite_input]


def test_nonfinite_residual_at_start():
    sol = solvers.solve_flat(lambda x, p: jnp.log(x) - p, jnp.array([-1.0]), 0.0,
                             solver=solvers.Newton())
    assert code(sol) is RESULTS.nonfinite_residual
    assert "domain" in sol.message()


def test_line_search_backtracks_out_of_a_nan_region():
    # A full Newton step from x = 0.5 lands at x < 0 where log is NaN.
    sol = solvers.solve_flat(lambda x, p: jnp.log(x) + x - p, jnp.array([0.05]), 3.0,
                             solver=solvers.Newton())
    assert code(sol) is RESULTS.successful
    assert float(sol.residual_norm) <= 1e-10


def test_max_steps_too_small():
    sol = solvers.solve_flat(square, jnp.array([100.0]), 2.0, solver=solvers.Newton(max_steps=3))
    assert code(sol) is RESULTS.max_steps_reached
    assert int(sol.iterations) == 3
    assert "max_steps" in sol.message()


def test_worst_member_is_the_largest_residual_failure():
    starts = jnp.array([[1.0], [100.0], [1e4]])
    sol = solvers.solve_flat_batch(square, starts, jnp.array([2.0]), params_axes=None,
                                   solver=solvers.Newton(max_steps=4))
    assert code(sol, 0) is RESULTS.successful
    assert sol.worst_index() == 2
    with pytest.raises(solvers.SolveError, match="2 of 3 members failed; member 2"):
        sol.raise_if_failed()


def test_message_of_a_batch_needs_a_member_index():
    sol = solvers.solve_flat_batch(square, jnp.array([[1.0], [100.0], [1e4]]), jnp.array([2.0]),
                                   params_axes=None, solver=solvers.Newton(max_steps=4))
    with pytest.raises(TypeError, match="batch of 3 members: pass a member's index"):
        sol.message()  # was numpy's "only 0-dimensional arrays can be converted"
    assert sol.message(-1).startswith("member -1: max_steps_reached")
    with pytest.raises(IndexError, match="member 3 is out of range.*0 to 2"):
        sol.message(3)
    for bad in (1.5, True):
        with pytest.raises(TypeError):
            sol.message(bad)


def test_narrower_residuals_keep_working_where_the_loop_allows_them():
    # float32 F for float64 unknowns: TrustRegion and LevenbergMarquardt carry it (Newton's
    # loop cannot, and says so); float64 F for float32 unknowns no loop carries.
    narrow = lambda x, p: (x ** 2 - p).astype(jnp.float32)  # noqa: E731
    for method in (solvers.TrustRegion(), solvers.LevenbergMarquardt()):
        sol = solvers.solve(narrow, jnp.ones(1), jnp.array([2.0]), solver=method)
        assert code(sol) is RESULTS.successful
    with pytest.raises(TypeError, match="solvers.Newton\\(\\) keeps its iterates in x0's type"):
        solvers.solve(narrow, jnp.ones(1), jnp.array([2.0]), solver=solvers.Newton())
    with pytest.raises(TypeError, match="solvers.TrustRegion\\(\\) keeps"):
        solvers.solve(square, jnp.ones(1, jnp.float32), jnp.array([2.0]),
                      solver=solvers.TrustRegion())


@pytest.mark.parametrize("fn, x0, match", [
    (square, jnp.ones(1, jnp.float32), "float64 residuals for float32 unknowns"),
    (lambda x, p: (x > 2).astype(int), jnp.ones(1), "int64 residuals"),
    (lambda x, p: (x - p, x), jnp.ones(1), "one array of residuals, got tuple"),
    (lambda x, p: x - p + 0j, jnp.ones(1), "real and imaginary parts"),
])
def test_residuals_of_the_wrong_type_are_named(fn, x0, match):
    # Each failed deep inside JAX (a while_loop carry mismatch, float0 tangents, 'tuple'
    # has no attribute 'shape', jnp.clip of complex) before it was checked.
    for solver in (None, solvers.Newton()):
        with pytest.raises(TypeError, match=match):
            solvers.solve(fn, x0, jnp.array([2.0]), solver=solver)


def test_throw_raises_eagerly():
    with pytest.raises(solvers.SolveError, match="max_steps_reached"):
        solvers.solve_flat(square, jnp.array([100.0]), 2.0, solver=solvers.Newton(max_steps=2),
                           throw=True)


def test_throw_inside_jit_and_vmap_raises_with_the_message():
    @jax.jit
    def solve(p):
        return solvers.solve_flat(square, jnp.array([1.0]), p, throw=True,
                                  solver=solvers.Newton(max_steps=20)).x

    np.testing.assert_allclose(solve(jnp.array([4.0])), [2.0])
    with pytest.raises(Exception, match="nonfinite_input"):
        jax.block_until_ready(solve(jnp.array([jnp.nan])))
    batched = jax.jit(jax.vmap(lambda p: solvers.solve_flat(
        square, jnp.array([1.0]), p, throw=True).x))
    with pytest.raises(Exception, match="1 of 3 members failed; member 1"):
        jax.block_until_ready(batched(jnp.array([[4.0], [jnp.nan], [9.0]])))


def test_inspection_needs_concrete_values():
    @jax.jit
    def inspect(p):
        sol = solvers.solve_flat(square, jnp.array([1.0]), p)
        sol.raise_if_failed()
        return sol.x

    with pytest.raises(TypeError, match="throw=True"):
        inspect(jnp.array([4.0]))


def test_every_code_has_a_message_saying_what_to_try():
    for member in RESULTS:
        assert member.message.endswith(".")
        if member is not RESULTS.successful:
            assert "try" in member.message.lower() or "fix" in member.message.lower()


def test_bad_arguments_are_explained():
    with pytest.raises(TypeError, match="method object"):
        solvers.solve_flat(square, jnp.ones(1), 2.0, solver="newton")
    with pytest.raises(ValueError, match="1-D"):
        solvers.solve_flat(square, jnp.ones((2, 2)), 2.0)
    with pytest.raises(ValueError, match="square system"):
        solvers.solve_flat(lambda x, p: jnp.concatenate([x, x]), jnp.ones(2), None,
                           solver=solvers.Newton())
    with pytest.raises(ValueError, match="scalar fraction"):
        solvers.solve_flat(square, jnp.ones(2), 2.0, step_limit=lambda x, dx, p: dx)
