"""Implicit differentiation of roots against central finite differences."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from benchmarks import nonlinear_problems as nlp
import solvers

TIGHT = solvers.Newton(atol=1e-13, rtol=1e-14, max_steps=100)
CASES = ["rosenbrock", "powell_badly_scaled", "dennis_schnabel",
         "freudenstein_roth", "chandrasekhar"]


def root(problem, params, x0, solver=TIGHT):
    sol = solvers.solve_flat(problem.fn, x0, params, solver=solver)
    return sol.x, sol


def loss_of(problem, x_star, weights):
    def loss(params):
        return jnp.sum(weights * root(problem, params, x_star)[0])

    return loss


def central_differences(loss, params, h=1e-5):
    """d loss / d params leaf by leaf, entry by entry, with relative steps."""
    leaves, treedef = jax.tree_util.tree_flatten(params)
    grads = []
    for k, leaf in enumerate(leaves):
        leaf = np.asarray(leaf, dtype=np.float64)
        g = np.zeros_like(leaf)
        for idx in np.ndindex(leaf.shape):
            step = h * max(abs(leaf[idx]), 1.0)
            values = []
            for sign in (1.0, -1.0):
                moved = leaf.copy()
                moved[idx] += sign * step
                trial = [jnp.asarray(moved) if j == k else v for j, v in enumerate(leaves)]
                values.append(float(loss(jax.tree_util.tree_unflatten(treedef, trial))))
            g[idx] = (values[0] - values[1]) / (2.0 * step)
        grads.append(g)
    return jax.tree_util.tree_unflatten(treedef, grads)


@pytest.mark.parametrize("name", CASES)
def test_gradient_matches_finite_differences(name):
    problem = nlp.BY_NAME[name]
    params = nlp.params_of(problem)
    x_star, sol = root(problem, params, jnp.asarray(problem.x0), solvers.Default())
    assert bool(sol.converged)
    weights = jnp.asarray(np.random.default_rng(1).normal(size=x_star.shape))
    loss = loss_of(problem, x_star, weights)
    grad = jax.grad(loss)(params)
    expected = central_differences(loss, params)
    for key in params:
        np.testing.assert_allclose(grad[key], expected[key], rtol=2e-5, atol=1e-8 * (
            1.0 + np.max(np.abs(expected[key]))), err_msg=f"{name}: d/d{key}")


def test_forward_and_reverse_mode_agree_under_jit():
    problem = nlp.BY_NAME["chandrasekhar"]
    x0 = jnp.asarray(problem.x0)
    f = lambda c: root(problem, {"c": c}, x0)[0]
    forward = jax.jit(jax.jacfwd(f))(0.9)
    reverse = jax.jit(jax.jacrev(f))(0.9)
    np.testing.assert_allclose(forward, reverse, rtol=1e-10)
    assert np.all(forward > 0)  # H grows with the albedo c


def test_gradients_under_vmap_match_finite_differences():
    problem = nlp.BY_NAME["dennis_schnabel"]
    s = jnp.array([3.0, 4.0, 5.0])

    def member(si):
        x = root(problem, {"s": si}, jnp.array([1.0, 5.0]) * si / 3.0)[0]
        return x[1] ** 2 + jnp.sin(x[0])

    grads = jax.vmap(jax.grad(member))(s)
    h = 1e-5
    fd = (jax.vmap(member)(s + h) - jax.vmap(member)(s - h)) / (2 * h)
    np.testing.assert_allclose(grads, fd, rtol=1e-6)
    np.testing.assert_allclose(grads, 2.0 * s, rtol=1e-8)  # root (0, s)


def test_gradient_through_batch_solve_and_closures():
    c = 0.7

    def loss(scale, cs, solver=None):
        # fn closes over the traced `scale`: its derivative flows too.
        fn = lambda x, p: solvers_chandrasekhar(x, p) * scale
        sol = solvers.solve_flat_batch(fn, jnp.ones(5), {"c": cs}, solver=solver)
        return jnp.sum(sol.x)

    cs = jnp.array([c, 0.8])
    g_scale, g_cs = jax.grad(loss, argnums=(0, 1))(2.0, cs)  # the default method
    assert abs(float(g_scale)) < 1e-8  # the root does not depend on a scaling of F
    h = 1e-6
    # the reference values: one compilation for the four evaluations (each call makes a new
    # fn), of plain Newton (the same roots; a fraction of the default method's compile time)
    value = jax.jit(lambda scale, cs: loss(scale, cs, solvers.Newton()))
    fd = [(value(2.0, cs.at[i].add(h)) - value(2.0, cs.at[i].add(-h))) / (2 * h) for i in range(2)]
    np.testing.assert_allclose(g_cs, fd, rtol=1e-6)


def solvers_chandrasekhar(x, p):
    return nlp.chandrasekhar(x, p)


def test_failed_member_can_be_masked_without_nan_gradients():
    def loss(p, solver=None):
        sol = solvers.solve_flat_batch(lambda x, q: x ** 2 - q, jnp.array([1.0]), p[:, None],
                                       solver=solver)
        return jnp.sum(jnp.where(sol.converged[:, None], sol.x, 0.0))

    p = jnp.array([4.0, -1.0, 9.0])  # member 1 has no real root
    g = jax.grad(loss)(p)
    np.testing.assert_allclose(g, [0.25, 0.0, 1.0 / 6.0], rtol=1e-8)
    # Second derivatives too: the failed member's NaN stays on its (masked) first derivative.
    hessian = jax.hessian(lambda q: loss(q, solvers.Newton()))(p)  # Newton: a smaller program
    np.testing.assert_allclose(hessian, np.diag([-4.0 ** -1.5, 0.0, -9.0 ** -1.5]) / 4,
                               rtol=1e-8, atol=1e-15)


def _cubic_root(p):
    """The root near 2 of x^3 - p0 x - p1 (p = [1, 5]: x* = 1.90416)."""
    fn = lambda x, q: x ** 3 - q[0] * x - q[1]
    return solvers.solve(fn, jnp.full(1, 2.0), p, solver=solvers.Newton()).x[0]


def test_second_derivatives_match_differenced_gradients():
    # The derivative rule's own derivative must see x* move with p: it used x* as a
    # constant, and every Hessian through a solve came out 0 (for x^2 = p: 0, not -p^-1.5/4).
    p, h = jnp.asarray([1.0, 5.0]), 1e-5
    grad = jax.jit(jax.grad(_cubic_root))  # one compilation for the four gradients
    differenced = np.stack([(grad(p + h * e) - grad(p - h * e)) / (2 * h) for e in np.eye(2)],
                           axis=1)
    for hessian in (jax.hessian(_cubic_root), jax.jacrev(jax.jacrev(_cubic_root)),
                    jax.jacfwd(jax.jacfwd(_cubic_root))):
        np.testing.assert_allclose(hessian(p), differenced, rtol=1e-6)
    assert abs(float(differenced[0, 0])) > 1e-3


def test_second_derivatives_through_solves_inside_a_loop():
    # A reverse pass partially evaluates a lax.map's (a scan's) body and drops the custom
    # derivative rule there: x* did not move with p, and jax.hessian of sum(x*^2) over
    # solves of x^3 = p inside lax.map came out 0 (exact: -(2/9) p^(-4/3)).
    def loss(p):
        return jnp.sum(jax.lax.map(lambda q: solvers.solve(
            lambda x, c: x ** 3 - c, jnp.ones(1), q, solver=solvers.Newton()).x[0], p) ** 2)

    p = jnp.asarray([8.0, 27.0])
    exact = np.diag(-(2.0 / 9.0) * np.asarray(p) ** (-4.0 / 3.0))
    for hessian in (jax.hessian(loss), jax.jacrev(jax.jacrev(loss))):
        np.testing.assert_allclose(hessian(p), exact, rtol=1e-8, atol=1e-15)


def test_matrix_free_gradient_equals_dense():
    problem = nlp.BY_NAME["discrete_integral_equation"]
    x0 = jnp.asarray(problem.x0)
    fn = lambda x, p: problem.fn(x, None) - p
    grads = []
    for ls in (solvers.DenseLU(), solvers.GMRES(rtol=1e-13)):
        f = lambda p, ls=ls: jnp.sum(solvers.solve_flat(
            fn, x0, p, solver=solvers.Newton(linear_solver=ls)).x ** 2)
        grads.append(jax.grad(f)(jnp.linspace(0.0, 0.1, 10)))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-8)


class _DoubledTranspose(solvers.DenseLU):
    """A back end whose transposed solve is marked (doubled), to see which solve runs."""

    def solve_transpose(self, operator, b):
        return 2.0 * super().solve_transpose(operator, b)


def test_reverse_mode_uses_the_linear_solvers_transposed_solve():
    method = solvers.Newton(linear_solver=_DoubledTranspose())
    f = lambda p: solvers.solve_flat(lambda x, q: x ** 3 - q, jnp.ones(2), p, solver=method).x
    p = jnp.array([8.0, 27.0])
    exact = 1.0 / (3.0 * np.array([2.0, 3.0]) ** 2)
    np.testing.assert_allclose(jnp.diag(jax.jacfwd(f)(p)), exact, rtol=1e-10)  # solve
    np.testing.assert_allclose(jnp.diag(jax.jacrev(f)(p)), 2 * exact, rtol=1e-10)  # solve_T


def _chain(x, p):
    """A lower-bidiagonal system (a ladder's Jacobian shape): x0^3 + x0 = p0, ..."""
    return jnp.concatenate([x[:1] ** 3 + x[:1] - p[:1], x[1:] ** 3 + x[1:] - x[:-1] - p[1:]])


_CHAIN_PATTERN = solvers.SparsityPattern.from_dense(np.tri(5) * np.tri(5, k=1).T)


@pytest.mark.parametrize("linear", ["BandedLU", "SparseLU", "SparseHostLU"])
def test_forward_mode_through_sparse_and_banded_solvers_equals_dense(linear):
    # jacfwd (a vmap over tangents) of a solve on these back ends failed: the result code,
    # an aux output of custom_linear_solve, was batched, and with it the Newton loop and the
    # primal root ("got axis spec None but output was batched").
    def total(p, ls):
        return solvers.solve(_chain, jnp.zeros(5), p, solver=solvers.Newton(linear_solver=ls),
                             sparsity=_CHAIN_PATTERN).x.sum()

    p = jnp.linspace(1.0, 2.0, 5)
    dense = lambda q: total(q, solvers.DenseLU())  # noqa: E731
    sparse = lambda q: total(q, getattr(solvers, linear)())  # noqa: E731
    np.testing.assert_allclose(jax.jacfwd(sparse)(p), jax.grad(dense)(p), rtol=1e-12)
    if linear == "BandedLU":  # second order (the rule's own derivative) once: compiles long
        np.testing.assert_allclose(jax.hessian(sparse)(p), jax.hessian(dense)(p), rtol=1e-10)


def test_derivatives_through_solve_with_result_use_the_linear_algebra():
    ls = solvers.SparseLU().bind(_CHAIN_PATTERN)
    x = jnp.linspace(0.5, 1.0, 5)

    def solved(scale, b):
        _, op = ls.linearize(lambda y, s: s * _chain(y, jnp.zeros(5)), x, scale)
        return ls.solve_with_result(op, b).value

    dense = lambda scale, b: jnp.linalg.solve(  # noqa: E731
        scale * jax.jacfwd(_chain)(x, jnp.zeros(5)), b)
    b, scale = jnp.arange(1.0, 6.0), jnp.asarray(2.0)
    expected = jax.jacfwd(dense, (0, 1))(scale, b)
    # forward mode one argument at a time (the other's tangent a symbolic zero); reverse mode
    # both at once (one backward pass gives both; one compilation fewer)
    got = {"jacfwd": [jax.jit(jax.jacfwd(solved, argnum))(scale, b) for argnum in (0, 1)],
           "jacrev": jax.jit(jax.jacrev(solved, (0, 1)))(scale, b)}
    for mode, jacobians in got.items():
        for argnum in (0, 1):
            np.testing.assert_allclose(jacobians[argnum], expected[argnum], rtol=1e-12,
                                       err_msg=f"{mode} argnum {argnum}")
