"""Default staged on the host: Newton alone first, each fallback only for the members still
failing, in fixed-size buckets (no recompilation when the number of failures changes).

The staged (eager) answer must equal the single traced program's (under jit) in every field.
"""

import jax
import jax.numpy as jnp
from jax.extend.core import jaxprs_in_params
import numpy as np
import pytest

import simgraph as sg
import solvers
from solvers import _graph
from solvers.roots import _solve, _staging

from compile_count import compilations


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
    batch, single = _graph.solve_flat_batch, _solve._solve_jit

    def spy_batch(fn, x0, params, *, solver, **kw):
        seen.append((solver, int(params[1][0].shape[0])))
        return batch(fn, x0, params, solver=solver, **kw)

    def spy_single(problem, method, x0, params):
        seen.append((method, None))
        return single(problem, method, x0, params)

    monkeypatch.setattr(_graph, "solve_flat_batch", spy_batch)
    monkeypatch.setattr(_solve, "_solve_jit", spy_single)
    return seen


def test_staged_batch_equals_traced_default(calls):
    graph = Square(jnp.asarray(2.0))
    eager = solvers.solve_batch(graph, {"c": CS}, SHORT)
    assert [type(m).__name__ for m, _ in calls] == ["Newton", "TrustRegion"]
    assert calls[1][1] == 7  # one bucket: the two members Newton failed, padded to the batch
    traced = jax.jit(lambda c: solvers.solve_batch(graph, {"c": c}, SHORT).flat)(CS)
    assert_same(eager.flat, traced)
    assert np.asarray(eager.result).tolist() == [0, 0, 0, int(solvers.RESULTS.nonfinite_input),
                                                 0, 0, 0]
    assert int(eager.iterations[1]) > 5  # Newton's 5 iterations plus the trust region's


def test_staged_batch_retries_in_fixed_buckets(calls, monkeypatch):
    monkeypatch.setattr(_staging, "BUCKET", 2)
    cs = jnp.concatenate([jnp.full(3, 1e6), jnp.arange(1.0, 6.0)])
    sol = solvers.solve_batch(Square(jnp.asarray(2.0)), {"c": cs}, SHORT, x0=jnp.ones((8, 1)))
    assert [size for _, size in calls] == [8, 2, 2] and bool(sol.converged.all())
    np.testing.assert_allclose(sol.x[:, 0], jnp.sqrt(cs))


def test_new_failure_counts_compile_nothing():
    graph, rng = Square(jnp.asarray(2.0)), np.random.default_rng(0)
    cs = rng.uniform(0.5, 4.0, 64)
    solvers.solve_batch(graph, {"c": -cs})  # every stage compiled: no member has a root
    for failing in (1, 7, 30, 64, 0):
        values = np.where(np.arange(64) < failing, -cs, rng.uniform(0.5, 4.0, 64))
        with compilations() as count:
            sol = solvers.solve_batch(graph, {"c": values})
        assert int((~np.asarray(sol.converged)).sum()) == failing
        assert count[0] == 0, f"{count[0]} compilations with {failing} failing members"


def test_no_fallback_compiled_when_newton_converges(calls):
    sol = solvers.solve_batch(Square(jnp.asarray(2.0)), {"c": jnp.arange(1.0, 5.0)})
    assert bool(sol.converged.all()) and len(calls) == 1
    assert isinstance(calls[0][0], solvers.Newton)
    compiled = solvers.Default(traced_fallbacks="compiled")
    assert isinstance(solvers.solve(Square(jnp.asarray(9.0)), compiled).flat,
                      solvers.FlatSolution)
    assert len(calls) == 2 and isinstance(calls[1][0], solvers.Newton)


def test_staged_single_solve_equals_traced(calls):
    staged = solvers.Default(methods=SHORT.methods, traced_fallbacks="compiled")
    eager = solvers.solve(Square(jnp.asarray(1e6)), staged)
    assert [type(m).__name__ for m, _ in calls] == ["Newton", "TrustRegion"]
    traced = jax.jit(lambda c: solvers.solve(Square(c), staged).flat)(1e6)
    assert_same(eager.flat, traced)
    assert float(eager.system.x) == pytest.approx(1e3)


def test_single_solve_on_cpu_runs_the_program_that_calls_back(calls):
    # The program holds Newton and calls back for the trust region itself (on CPU, where
    # `traced_fallbacks="auto"` means "callback"): one compiled call, the staged answer.
    one = solvers.solve(Square(jnp.asarray(1e6)), SHORT)
    assert calls == [(SHORT, None)]
    staged = solvers.Default(methods=SHORT.methods, traced_fallbacks="compiled")
    assert_same(one.flat, solvers.solve(Square(jnp.asarray(1e6)), staged).flat)


def test_eager_grad_runs_the_stages_and_jit_or_vmap_one_traced_program(calls):
    root = lambda c: solvers.solve(Square(c), SHORT).system.x
    grad = jax.grad(root)(1e6)  # the values are there: stage by stage, derivative attached
    assert [type(m).__name__ for m, _ in calls] == ["Newton", "TrustRegion"]
    assert grad == pytest.approx(0.5e-3, rel=1e-12)
    assert jax.jacfwd(root)(1e6) == pytest.approx(0.5e-3, rel=1e-12)
    calls.clear()
    assert jax.jit(jax.grad(root))(1e6) == pytest.approx(0.5e-3, rel=1e-12)
    xs = jax.vmap(root)(jnp.asarray([4.0, 1e6]))
    np.testing.assert_allclose(xs, [2.0, 1e3])
    assert calls and all(m is SHORT for m, _ in calls)


def test_throw_after_staging():
    with pytest.raises(solvers.SolveError, match="member 1"):
        solvers.solve_batch(Square(jnp.asarray(2.0)), {"c": jnp.asarray([4.0, -1.0])}, throw=True)


def test_default_split():
    newton, rest = solvers.Default().split(3, 3)
    assert isinstance(newton, solvers.Newton) and isinstance(rest, solvers.Default)
    assert len(rest.stages()) == len(solvers.Default().stages()) - 1 and rest.atol == solvers.Default().atol
    assert solvers.Default().split(4, 3) is None  # least squares: one stage
    assert solvers.Default(methods=(solvers.Newton(),)).split(3, 3) is None


def _while_loops(jaxpr) -> int:
    count = 0
    for eqn in jaxpr.eqns:
        count += eqn.primitive.name == "while"
        for sub in jaxprs_in_params(eqn.params):
            count += _while_loops(sub)
    return count


def test_traced_default_runs_both_newton_stages_as_one_loop(monkeypatch):
    from solvers.roots._polyalgorithm import NewtonRestarts
    merged = NewtonRestarts.of(solvers.Default().stages())
    assert [type(s).__name__ for s in merged] == ["NewtonRestarts", "TrustRegionRestarts",
                                                  "Homotopy"]
    assert merged[0].watchdogs == (4, 0) and merged[0].newton.watchdog == 0
    for stages in [(solvers.Newton(), solvers.TrustRegion()),
                   (solvers.Newton(watchdog=4), solvers.Newton(max_steps=7))]:
        assert NewtonRestarts.of(stages) == stages  # nothing to merge
    fn = lambda x, p: x ** 3 - 2 * x + p
    every_stage = solvers.Default(traced_fallbacks="compiled")
    count = lambda: _while_loops(jax.make_jaxpr(
        lambda p: solvers.solve_flat(fn, jnp.zeros(1), p, solver=every_stage).x)(3.0).jaxpr)
    one_loop = count()
    monkeypatch.setattr(NewtonRestarts, "of", classmethod(lambda cls, stages: stages))
    jax.clear_caches()  # trace again
    assert count() > one_loop  # the stages one by one: a second copy of Newton's loops


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


def test_later_stages_compiled_only_when_reached(calls):
    # x^3 - 2x + 3 from 0: the watchdog's full steps fail, the monotone Newton succeeds, so
    # the trust region and the homotopy are never built.
    sol = solvers.solve_batch(Cycle(jnp.asarray(3.0)), {"c": jnp.asarray([3.0, 3.0])})
    assert bool(sol.converged.all())
    assert [type(m).__name__ for m, _ in calls] == ["Newton", "Newton"]
    assert calls[1][0].watchdog == 0


def test_flat_batch_runs_the_stages_and_equals_traced(monkeypatch):
    from solvers.batch import _batch

    fn, ps = (lambda x, p: x ** 3 - 2 * x + p), jnp.asarray([2.0, -1.0, 3.0, jnp.nan])
    seen, chunked = [], _batch._chunked

    def spy(problem, method, *args):
        seen.append(type(method).__name__)
        return chunked(problem, method, *args)

    monkeypatch.setattr(_batch, "_chunked", spy)
    eager = solvers.solve_batch(fn, jnp.zeros(1), ps)
    assert seen == ["Newton", "Newton", "TrustRegionRestarts", "Homotopy"]  # member 0 cycles
    assert_same(eager, jax.jit(lambda p: solvers.solve_batch(fn, jnp.zeros(1), p))(ps))
    seen.clear()
    assert bool(solvers.solve_batch(fn, jnp.zeros(1), jnp.asarray([-1.0, 0.0])).converged.all())
    assert seen == ["Newton"]  # nothing failed: no fallback compiled


def test_staging_is_true_only_where_a_program_is_staged():
    from solvers._concrete import staging

    seen = {}

    def probe(x, key):
        seen[key] = staging()
        return x

    probe(jnp.ones(2), "eager")
    jax.jit(lambda x: probe(x, "jit"))(jnp.ones(2))
    jax.vmap(lambda x: probe(x, "vmap"))(jnp.ones(2))
    jax.grad(lambda x: probe(x, "grad").sum())(jnp.ones(2))
    jax.lax.fori_loop(0, 1, lambda i, x: probe(x, "loop"), jnp.ones(2))
    assert seen == {"eager": False, "jit": True, "vmap": False, "grad": False, "loop": True}


def test_staging_answers_the_same_without_jax_s_trace_state(monkeypatch):
    # On a JAX without the private trace-state predicate, the probe alone decides.
    from solvers import _concrete

    monkeypatch.setattr(_concrete, "_outside_transforms", _concrete._no_transform_check)
    assert _concrete.staging() is False
    assert jax.jit(lambda x: x + float(_concrete.staging()))(jnp.zeros(())) == 1.0
    assert jax.vmap(lambda x: x + float(_concrete.staging()))(jnp.zeros(2)).tolist() == [0.0, 0.0]
