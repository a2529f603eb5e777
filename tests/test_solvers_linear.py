"""Linear solvers: DenseLU and the matrix-free Krylov solvers against numpy."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import solvers

RNG = np.random.default_rng(0)
A = RNG.normal(size=(6, 6)) + 6.0 * np.eye(6)
B = RNG.normal(size=6)


def linear_fn(x, p):
    return p["a"] @ x - p["b"]


PARAMS = {"a": jnp.asarray(A), "b": jnp.asarray(B)}
X = jnp.asarray(RNG.normal(size=6))


@pytest.mark.parametrize("ls", [solvers.DenseLU(), solvers.GMRES(), solvers.BiCGStab()],
                         ids=lambda s: type(s).__name__)
def test_solve_transpose_matvec_match_numpy(ls):
    f, op = ls.linearize(linear_fn, X, PARAMS)
    np.testing.assert_allclose(f, A @ np.asarray(X) - B, rtol=1e-12)
    np.testing.assert_allclose(ls.solve(op, jnp.asarray(B)), np.linalg.solve(A, B), rtol=1e-8)
    np.testing.assert_allclose(ls.solve_transpose(op, jnp.asarray(B)),
                               np.linalg.solve(A.T, B), rtol=1e-8)
    np.testing.assert_allclose(ls.matvec(op, jnp.asarray(B)), A @ B, rtol=1e-12)
    np.testing.assert_allclose(ls.rmatvec(op, jnp.asarray(B)), A.T @ B, rtol=1e-12)


def test_dense_operator_is_a_pytree_that_vmaps():
    ls = solvers.DenseLU()
    xs = jnp.stack([X, 2.0 * X])
    f, op = jax.vmap(lambda x: ls.linearize(lambda y, p: y ** 2 - p, x, 1.0))(xs)
    out = jax.vmap(ls.solve)(op, f)
    np.testing.assert_allclose(out, (xs ** 2 - 1.0) / (2.0 * xs), rtol=1e-12)


def test_dense_rcond_flags_a_singular_jacobian():
    ls = solvers.DenseLU()
    singular = lambda x, p: jnp.stack([x[0] + x[1], 2.0 * x[0] + 2.0 * x[1]])
    _, op = ls.linearize(singular, jnp.ones(2), None)
    assert float(ls.rcond(op)) == 0.0
    assert not np.all(np.isfinite(ls.solve(op, jnp.ones(2))))
    _, op = ls.linearize(linear_fn, X, PARAMS)
    assert 1e-3 < float(ls.rcond(op)) <= 1.0


def test_dense_non_square_jacobian_says_what_to_use():
    ls = solvers.DenseLU()
    _, op = ls.linearize(lambda x, p: jnp.concatenate([x, x]), jnp.ones(2), None)
    assert ls.to_dense(op).shape == (4, 2)
    with pytest.raises(ValueError, match="LevenbergMarquardt"):
        ls.solve(op, jnp.ones(4))


def test_krylov_refuses_non_square_and_has_no_dense_form():
    with pytest.raises(ValueError, match="square"):
        solvers.GMRES().linearize(lambda x, p: jnp.concatenate([x, x]), jnp.ones(2), None)
    _, op = solvers.GMRES().linearize(linear_fn, X, PARAMS)
    with pytest.raises(NotImplementedError, match="dense"):
        solvers.GMRES().to_dense(op)
