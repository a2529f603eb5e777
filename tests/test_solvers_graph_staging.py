"""Default staged on the host: Newton alone first, fallbacks only for the members it failed.

The staged (eager) answer must equal the single traced program's (under jit) in every field.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simgraph as sg
import solvers
from solvers import _graph


class Square(sg.ReffableTreeNode):
    c: jax.Array
    x: jax.Array = sg.unknown(default=1.0)

    def residual(self):
        return self.x ** 2 - self.c


# Newton with 5 steps fails for large c; the trust region then solves those members.
SHORT = solvers.Default(methods=(solvers.Newton(max_steps=5), solvers.TrustRegion(max_steps=200)))
CS = jnp.asarray([2.0, 1e6, 3.0, jnp.nan, 1e8, 4.0, 5.0])
FIELDS = ("x", "result", "converged", "iterations", "num_fev", "num_jev", "residual_norm")


def assert_same(a, b):
    for field in FIELDS:
        np.testing.assert_array_equal(np.asarray(getattr(a, field)), np.asarray(getattr(b, field)),
                                      err_msg=field)


@pytest.fixture
def calls(monkeypatch):
    """Record (method, batch size) of every flat solve the graph entry points make."""
    seen = []
    batch, single = _graph.solve_flat_batch, _graph.solve_flat

    def spy_batch(fn, x0, params, *, solver, **kw):
        seen.append((solver, int(params[1][0].shape[0])))
        return batch(fn, x0, params, solver=solver, **kw)

    def spy_single(fn, x0, params, *, solver, **kw):
        seen.append((solver, None))
        return single(fn, x0, params, solver=solver, **kw)

    monkeypatch.setattr(_graph, "solve_flat_batch", spy_batch)
    monkeypatch.setattr(_graph, "solve_flat", spy_single)
    return seen


def test_staged_batch_equals_traced_default(calls):
    graph = Square(jnp.asarray(2.0))
    eager = solvers.solve_batch(graph, {"c": CS}, SHORT)
    assert [type(m).__name__ for m, _ in calls] == ["Newton", "Default"]
    assert calls[1][1] == 2  # only the two members Newton failed (NaN is not retried)
    traced = jax.jit(lambda c: solvers.solve_batch(graph, {"c": c}, SHORT).flat)(CS)
    assert_same(eager.flat, traced)
    assert np.asarray(eager.result).tolist() == [0, 0, 0, int(solvers.RESULTS.nonfinite_input),
                                                 0, 0, 0]
    assert int(eager.iterations[1]) > 5  # Newton's 5 iterations plus the trust region's


def test_staged_batch_pads_failures_to_few_shapes(calls):
    cs = jnp.concatenate([jnp.full(3, 1e6), jnp.arange(1.0, 6.0)])
    sol = solvers.solve_batch(Square(jnp.asarray(2.0)), {"c": cs}, SHORT, x0=jnp.ones((8, 1)))
    assert calls[1][1] == 4 and bool(sol.converged.all())
    np.testing.assert_allclose(sol.x[:, 0], jnp.sqrt(cs))


def test_no_fallback_compiled_when_newton_converges(calls):
    sol = solvers.solve_batch(Square(jnp.asarray(2.0)), {"c": jnp.arange(1.0, 5.0)})
    assert bool(sol.converged.all()) and len(calls) == 1
    assert isinstance(calls[0][0], solvers.Newton)
    assert isinstance(solvers.solve(Square(jnp.asarray(9.0))).flat, solvers.FlatSolution)
    assert len(calls) == 2 and isinstance(calls[1][0], solvers.Newton)


def test_staged_single_solve_equals_traced(calls):
    eager = solvers.solve(Square(jnp.asarray(1e6)), SHORT)
    assert [type(m).__name__ for m, _ in calls] == ["Newton", "Default"]
    traced = jax.jit(lambda c: solvers.solve(Square(c), SHORT).flat)(1e6)
    assert_same(eager.flat, traced)
    assert float(eager.system.x) == pytest.approx(1e3)


def test_under_transforms_one_traced_program(calls):
    grad = jax.grad(lambda c: solvers.solve(Square(c), SHORT).system.x)(1e6)
    assert grad == pytest.approx(0.5e-3)
    xs = jax.vmap(lambda c: solvers.solve(Square(c), SHORT).system.x)(jnp.asarray([4.0, 1e6]))
    np.testing.assert_allclose(xs, [2.0, 1e3])
    assert all(m is SHORT for m, _ in calls)


def test_throw_after_staging():
    with pytest.raises(solvers.SolveError, match="member 1"):
        solvers.solve_batch(Square(jnp.asarray(2.0)), {"c": jnp.asarray([4.0, -1.0])}, throw=True)


def test_default_split():
    newton, rest = solvers.Default().split(3, 3)
    assert isinstance(newton, solvers.Newton) and isinstance(rest, solvers.Default)
    assert len(rest.stages()) == len(solvers.Default().stages()) - 1 and rest.atol == solvers.Default().atol
    assert solvers.Default().split(4, 3) is None  # least squares: one stage
    assert solvers.Default(methods=(solvers.Newton(),)).split(3, 3) is None


class Cycle(sg.ReffableTreeNode):
    """x^3 - 2x + c: from x = 0 with c = 2, Newton cycles and every stage of Default fails."""

    c: jax.Array
    x: jax.Array = sg.unknown(default=0.0)

    def residual(self):
        return self.x ** 3 - 2 * self.x + self.c


def test_real_default_staged_equals_traced():
    graph, cs = Cycle(jnp.asarray(2.0)), jnp.asarray([2.0, -1.0, 3.0])
    eager = solvers.solve_batch(graph, {"c": cs})
    traced = jax.jit(lambda c: solvers.solve_batch(graph, {"c": c}).flat)(cs)
    assert_same(eager.flat, traced)
    assert np.asarray(eager.converged).tolist() == [False, True, True]
    assert "line_search_failed" in eager.message(0)
