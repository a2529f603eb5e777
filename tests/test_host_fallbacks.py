"""A traced ``Default`` on a graph: the program holds Newton, the fallback stages run from the
host only when a member needs them (``Default.traced_fallbacks``), with the answer of the
program that compiles every stage; a batch keeps its stages in the program."""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simgraph as sg
import solvers
from solvers.roots import _homotopy, _host_fallback, _polyalgorithm, _trust_region

from compile_count import compilations

FIELDS = ("x", "result", "converged", "iterations", "num_fev", "num_jev", "residual_norm",
          "relative_step")


class Cubic(sg.ReffableTreeNode):
    """x^3 - 2x + c from x = 0: c = 3 needs the monotone Newton (the watchdog's full steps
    cycle), c = 2 fails in every stage, c = -1 is Newton's."""

    c: jax.Array
    x: jax.Array = sg.unknown(default=0.0)

    def residual(self):
        return self.x ** 3 - 2 * self.x + self.c


class Square(sg.ReffableTreeNode):
    c: jax.Array
    x: jax.Array = sg.unknown(default=1.0)

    def residual(self):
        return self.x ** 2 - self.c


# Newton with 5 steps fails for large c; the trust region then solves it.
SHORT = dict(methods=(solvers.Newton(max_steps=5), solvers.TrustRegion(max_steps=200)))


def _solved(method, graph_class=Cubic):
    return jax.jit(lambda c: solvers.solve(graph_class(c), method).flat)


def _assert_same(a, b):
    for field in FIELDS:
        np.testing.assert_array_equal(np.asarray(getattr(a, field)),
                                      np.asarray(getattr(b, field)), err_msg=field)


@pytest.fixture
def fallback_runs(monkeypatch):
    """Count the trust region's and the homotopy's runs: traces and host calls alike."""
    runs = []
    for cls in (_trust_region.TrustRegion, _polyalgorithm.TrustRegionRestarts,
                _homotopy.Homotopy):
        original = cls.run

        def spy(self, *args, _original=original):
            runs.append(type(self).__name__)
            return _original(self, *args)

        monkeypatch.setattr(cls, "run", spy)
    return runs


def test_a_graph_newton_solves_traces_no_fallback(fallback_runs):
    method = solvers.Default(rtol=1e-11)
    sol = _solved(method)(-1.0)
    assert bool(sol.converged) and fallback_runs == []
    compiled = _solved(solvers.Default(rtol=1e-11, traced_fallbacks="compiled"))(-1.0)
    assert fallback_runs == ["TrustRegionRestarts", "Homotopy"]
    _assert_same(sol, compiled)


@pytest.mark.parametrize("c", [3.0, 2.0, jnp.nan])
def test_host_fallbacks_answer_as_the_compiled_stages(c):
    host = _solved(solvers.Default(traced_fallbacks="callback"))(c)
    compiled = _solved(solvers.Default(traced_fallbacks="compiled"))(c)
    _assert_same(host, compiled)
    _assert_same(host, solvers.solve(Cubic(jnp.asarray(c))).flat)  # the eager stages too


def test_host_fallbacks_compile_each_stage_once(fallback_runs):
    solve = _solved(solvers.Default(traced_fallbacks="callback", **SHORT), Square)
    assert float(solve(1e6).x[0]) == pytest.approx(1e3) and fallback_runs == ["TrustRegion"]
    with compilations() as count:
        assert float(solve(4e6).x[0]) == pytest.approx(2e3)
        assert float(solve(4.0).x[0]) == pytest.approx(2.0)
    assert count[0] == 0 and fallback_runs == ["TrustRegion"]


def test_gradients_through_a_host_fallback():
    method = solvers.Default(traced_fallbacks="callback", **SHORT)
    root = lambda c: solvers.solve(Square(c), method).system.x  # noqa: E731
    assert float(jax.jit(jax.grad(root))(1e6)) == pytest.approx(0.5e-3, rel=1e-12)
    assert float(jax.jacfwd(root)(1e6)) == pytest.approx(0.5e-3, rel=1e-12)


def test_a_batch_keeps_its_stages_in_the_program(fallback_runs):
    method = solvers.Default(traced_fallbacks="callback", **SHORT)
    batched = jax.jit(jax.vmap(lambda c: solvers.solve(Square(c), method).flat))
    cs = jnp.asarray([4.0, 1e6, 9.0])
    assert "callback" not in batched.lower(cs).as_text()
    sol = batched(cs)
    np.testing.assert_allclose(sol.x[:, 0], [2.0, 1e3, 3.0])
    for k, c in enumerate(cs):
        one = _solved(method, Square)(c)
        np.testing.assert_array_equal(sol.x[k], one.x)
        assert int(sol.result[k]) == int(one.result)


def test_callbacks_only_where_chosen(monkeypatch):
    def has_callback(method):
        return "callback" in _solved(method).lower(3.0).as_text()

    assert has_callback(solvers.Default(rtol=1e-9))  # auto on this CPU
    assert not has_callback(solvers.Default(rtol=1e-9, traced_fallbacks="compiled"))
    # A flat function closing over a traced value keeps its stages in the program ...
    flat = jax.jit(lambda c: solvers.solve(lambda x, p: x ** 3 - 2 * x + c, jnp.zeros(1)).x)
    assert "callback" not in flat.lower(3.0).as_text()
    assert float(flat(3.0)[0]) == pytest.approx(-1.8932892, abs=1e-6)
    # ... and one that takes its values as params calls back, with the same answers
    flat = jax.jit(lambda c: solvers.solve(_cubic, jnp.zeros(1), c).x)
    assert "callback" in flat.lower(3.0).as_text()
    assert float(flat(3.0)[0]) == pytest.approx(-1.8932892, abs=1e-6)
    vmapped = jax.jit(jax.vmap(lambda c: solvers.solve(lambda x, p: x ** 3 - 2 * x + c,
                                                       jnp.zeros(1)).x))
    np.testing.assert_allclose(vmapped(jnp.asarray([-1.0, 3.0]))[:, 0], [-0.618034, -1.8932892],
                               atol=1e-6)


def _cubic(x, c):
    return x ** 3 - 2 * x + c


@pytest.mark.parametrize("c", [3.0, 2.0, float("nan")])
def test_flat_host_fallbacks_answer_as_the_compiled_stages(c):
    # c = 3: Newton alone fails from 0 (a fallback solves it); c = 2: every stage fails
    def solved(method):
        return jax.jit(lambda c: solvers.solve(_cubic, jnp.zeros(1), c, solver=method))(c)

    host = solved(solvers.Default(traced_fallbacks="callback"))
    compiled = solved(solvers.Default(traced_fallbacks="compiled"))
    eager = solvers.solve(_cubic, jnp.zeros(1), jnp.asarray(c))
    _assert_same(host, compiled)
    _assert_same(host, eager)


def test_a_weakly_typed_parameter_keeps_its_type_on_the_host():
    # A Python-number parameter takes x's float type in the program (weak typing); the host
    # stages must compute in that type too (a float32 x stays float32), eagerly and traced.
    x0 = jnp.zeros(1, jnp.float32)
    eager = solvers.solve(_cubic, x0, 3.0)
    host = jax.jit(lambda c: solvers.solve(_cubic, x0, c))(3.0)
    compiled = jax.jit(lambda c: solvers.solve(
        _cubic, x0, c, solver=solvers.Default(traced_fallbacks="compiled")))(3.0)
    assert eager.x.dtype == host.x.dtype == jnp.float32 and bool(host.converged)
    assert int(host.num_fev) > 20  # a fallback stage ran (Newton alone cycles from 0)
    _assert_same(host, compiled)
    _assert_same(host, eager)


def test_auto_compiles_every_stage_with_the_persistent_cache(tmp_path):
    # JAX never stores a program with a host callback: with its cache on, every stage.
    problem = solvers.roots.FlatProblem(lambda x, p: x, host_callable=True)
    assert _host_fallback.sends_fallbacks_to_host("auto", problem)
    jax.config.update("jax_compilation_cache_dir", str(tmp_path))
    try:
        assert not _host_fallback.sends_fallbacks_to_host("auto", problem)
        assert _host_fallback.sends_fallbacks_to_host("callback", problem)
    finally:
        jax.config.update("jax_compilation_cache_dir", None)
    assert _host_fallback.sends_fallbacks_to_host("auto", problem)


def test_auto_compiles_every_stage_on_an_accelerator(monkeypatch):
    problem = solvers.roots.FlatProblem(lambda x, p: x, host_callable=True)
    assert _host_fallback.sends_fallbacks_to_host("auto", problem)
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert not _host_fallback.sends_fallbacks_to_host("auto", problem)
    assert _host_fallback.sends_fallbacks_to_host("callback", problem)
    assert not _host_fallback.sends_fallbacks_to_host("callback", problem._replace(
        host_callable=False))
    # A fresh trace (another method: no cached program) compiles the stages in.
    gpu_style = _solved(solvers.Default(rtol=2e-10)).lower(3.0).as_text()
    assert "callback" not in gpu_style


def test_traced_fallbacks_is_checked():
    with pytest.raises(ValueError, match="traced_fallbacks"):
        solvers.Default(traced_fallbacks="host")


def test_a_transient_operating_point_with_host_fallbacks(monkeypatch):
    from test_transient import CFG, T, rc

    taken, original = [], _host_fallback.with_host_fallbacks

    def spy(*args):
        taken.append(args[1])
        return original(*args)

    monkeypatch.setattr(_polyalgorithm, "with_host_fallbacks", spy)
    runs = {mode: solvers.simulate(rc(), T, integrator=CFG, dc_solver=solvers.Default(
        atol=1e-12, traced_fallbacks=mode)) for mode in ("callback", "compiled")}
    assert len(taken) == 1 and taken[0].host_callable  # the operating point: a pure problem
    np.testing.assert_array_equal(np.asarray(runs["callback"].x), np.asarray(runs["compiled"].x))
    assert int(runs["callback"].result) == int(solvers.TRANSIENT_RESULTS.successful)


class Law(sg.ReffableTreeNode):
    """A residual reached through a static callable: it may close over a traced value."""

    law: Any = sg.static()
    x: jax.Array = sg.unknown(default=0.0)

    def residual(self):
        return self.law(self.x)


def test_a_model_closing_over_a_traced_value_compiles_every_stage():
    # The host calls the residual after the trace has ended: a traced value it closed over
    # would be gone, so such a model keeps its fallbacks in the program.
    def solved(c, method=solvers.Default(traced_fallbacks="callback")):
        return solvers.solve(Law(lambda x: x ** 3 - 2 * x + c), method).flat.x

    assert "callback" not in jax.jit(solved).lower(3.0).as_text()
    assert float(jax.jit(solved)(3.0)[0]) == pytest.approx(-1.8932892, abs=1e-6)
    xs = jax.jit(jax.vmap(solved))(jnp.asarray([-1.0, 3.0]))
    np.testing.assert_allclose(xs[:, 0], [-0.618034, -1.8932892], atol=1e-6)
    pure = jax.jit(lambda c: solvers.solve(Law(lambda x: x ** 3 - 2 * x + 3.0)).flat.x)
    assert "callback" in pure.lower(3.0).as_text()  # a closure over constants is fine
