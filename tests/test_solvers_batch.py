"""Batched solves: chunking, per-member freezing, mixed batched/shared inputs, devices."""

import json
import os
import pathlib
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simgraph as sg
import solvers
from solvers import RESULTS

ROOT = pathlib.Path(__file__).resolve().parents[1]


def cubic(x, p):
    return x ** 3 + p["a"] * x - p["b"]


def params(n):
    return {"a": jnp.linspace(0.5, 2.0, n), "b": jnp.linspace(-3.0, 3.0, n)}


def test_chunks_equal_one_vmap_and_compile_once():
    p = params(11)
    whole = solvers.solve_flat_batch(cubic, jnp.zeros(1), {k: v[:, None] for k, v in p.items()},
                                     chunk_size=100)
    chunked = solvers.solve_flat_batch(cubic, jnp.zeros(1),
                                       {k: v[:, None] for k, v in p.items()}, chunk_size=4)
    assert chunked.x.shape == (11, 1) and chunked.result.shape == (11,)
    np.testing.assert_array_equal(chunked.x, whole.x)
    np.testing.assert_array_equal(chunked.iterations, whole.iterations)
    assert bool(jnp.all(chunked.converged))
    np.testing.assert_allclose(cubic(chunked.x, {k: v[:, None] for k, v in p.items()}), 0,
                               atol=1e-10)


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "100"])
def test_a_chunk_size_that_is_not_a_positive_count_is_refused(bad):
    p = {k: v[:, None] for k, v in params(3).items()}
    with pytest.raises(ValueError, match=r"chunk_size must be a positive number of members"):
        solvers.solve_flat_batch(cubic, jnp.zeros(1), p, chunk_size=bad)
    assert solvers.solve_flat_batch(cubic, jnp.zeros(1), p, chunk_size=np.int64(2)).x.shape == (3, 1)


def test_each_member_stops_at_its_own_convergence():
    # Member 0 converges at once, member 1 needs many steps: batching must not change
    # either member's iterations, evaluations or answer.
    starts = jnp.array([[2.0], [300.0]])
    batch = solvers.solve_flat_batch(lambda x, p: x ** 2 - p, starts, jnp.array([4.0]),
                                     params_axes=None, solver=solvers.Newton())
    for i in range(2):
        alone = solvers.solve_flat(lambda x, p: x ** 2 - p, starts[i], jnp.array([4.0]),
                                   solver=solvers.Newton())
        assert int(batch.iterations[i]) == int(alone.iterations)
        assert int(batch.num_fev[i]) == int(alone.num_fev)
        np.testing.assert_array_equal(batch.x[i], alone.x)
    assert int(batch.iterations[0]) == 0 < int(batch.iterations[1])


def test_prefix_params_axes_mix_batched_and_shared_leaves():
    p = {"a": jnp.array([1.0]), "b": jnp.array([[0.0], [2.0], [10.0]])}
    sol = solvers.solve_flat_batch(cubic, jnp.zeros(1), p, params_axes={"a": None, "b": 0})
    np.testing.assert_allclose(sol.x[:, 0] ** 3 + sol.x[:, 0], [0.0, 2.0, 10.0], atol=1e-9)
    with pytest.raises(ValueError, match="batch size"):
        solvers.solve_flat_batch(cubic, jnp.zeros((2, 1)), p, params_axes={"a": None, "b": 0})
    with pytest.raises(ValueError, match="nothing is batched"):
        solvers.solve_flat_batch(cubic, jnp.zeros(1), p, params_axes=None)
    with pytest.raises(ValueError, match=r"x0 of solve_batch has shape \(3, 1, 1\): give "
                       r"\(n,\) .* or \(B, n\)"):  # said F must be (n,) -> (m,)
        solvers.solve_flat_batch(cubic, jnp.zeros((3, 1, 1)), p, params_axes={"a": None, "b": 0})
    with pytest.raises(ValueError, match=r"params_axes \{'b': 0\} is not a prefix of the "
                       r"structure of params"):  # was JAX's tree_map error about "tree_map tree"
        solvers.solve_flat_batch(cubic, jnp.zeros(1), p, params_axes={"b": 0})


def test_batch_inside_jit_is_a_plain_vmap():
    p = {k: v[:, None] for k, v in params(5).items()}
    inside = jax.jit(lambda q: solvers.solve_flat_batch(cubic, jnp.zeros(1), q).x)(p)
    outside = solvers.solve_flat_batch(cubic, jnp.zeros(1), p).x
    np.testing.assert_allclose(inside, outside, rtol=1e-14)


def test_progress_bar_only_when_asked_or_on_a_terminal(capsys):
    p = {k: v[:, None] for k, v in params(6).items()}
    solvers.solve_flat_batch(cubic, jnp.zeros(1), p, chunk_size=2)
    assert capsys.readouterr().err == ""  # stderr is not a terminal under pytest
    solvers.solve_flat_batch(cubic, jnp.zeros(1), p, chunk_size=2, progress=True)
    assert "3/3" in capsys.readouterr().err


SHARDED = """
import json, sys
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
import solvers
from solvers.batch._batch import batch_devices
p = {"a": jnp.linspace(0.5, 2.0, 10)[:, None], "b": jnp.linspace(-3.0, 3.0, 10)[:, None]}
p["b"] = p["b"].at[3, 0].set(jnp.nan)
fn = lambda x, q: x ** 3 + q["a"] * x - q["b"]
sol = solvers.solve_flat_batch(fn, jnp.zeros(1), p, chunk_size=6)
print(json.dumps({"devices": len(batch_devices()), "x": sol.x.tolist(),
                  "result": sol.result.tolist(), "iterations": sol.iterations.tolist()}))
"""


def test_sharded_over_four_devices_equals_one_device():
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4",
           "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", SHARDED], capture_output=True, text=True,
                          env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    multi = json.loads(proc.stdout.strip().splitlines()[-1])
    assert multi["devices"] == 4
    p = {"a": jnp.linspace(0.5, 2.0, 10)[:, None], "b": jnp.linspace(-3.0, 3.0, 10)[:, None]}
    p["b"] = p["b"].at[3, 0].set(jnp.nan)
    single = solvers.solve_flat_batch(cubic, jnp.zeros(1), p, chunk_size=6)
    assert multi["result"] == single.result.tolist()
    assert multi["result"][3] == int(RESULTS.nonfinite_input)
    assert multi["iterations"] == single.iterations.tolist()
    x_multi = np.array(multi["x"], dtype=float)
    keep = np.arange(10) != 3
    np.testing.assert_allclose(x_multi[keep], np.asarray(single.x)[keep], rtol=1e-13)


def test_cache_sized_blocks_equal_one_vmap(monkeypatch):
    from solvers.batch import _batch

    monkeypatch.setattr(_batch, "BLOCK_BYTES", 1)  # the smallest blocks: MIN_BLOCK members
    _batch._block_for.cache_clear()
    p = {k: v[:, None] for k, v in params(40).items()}
    blocked = solvers.solve_flat_batch(cubic, jnp.zeros(1), p)
    assert _batch.block_size(_batch.FlatProblem(cubic), solvers.Default(), jnp.zeros(1), p,
                             _batch._axes_leaves(p, 0)) == _batch.MIN_BLOCK
    plain = jax.jit(lambda q: solvers.solve_flat_batch(cubic, jnp.zeros(1), q))(p)  # one vmap
    _batch._block_for.cache_clear()
    assert blocked.x.shape == (40, 1)
    np.testing.assert_allclose(blocked.x, plain.x, rtol=1e-14, atol=1e-14)
    np.testing.assert_array_equal(blocked.iterations, plain.iterations)
    assert bool(jnp.all(blocked.converged))


def test_block_size_reads_one_member_from_the_shapes_and_compiles_nothing():
    from compile_count import compilations
    from solvers.batch import _batch

    p = {"a": jnp.linspace(0.5, 2.0, 37)[:, None], "b": jnp.asarray([1.5])}  # b shared
    axes = (0, None)
    assert _batch._axes_leaves(p, {"a": 0, "b": None}) == axes
    x0 = jnp.zeros((37, 1))
    _batch._block_for.cache_clear()
    try:
        with compilations() as count:
            size = _batch.block_size(_batch.FlatProblem(cubic), solvers.Default(), x0, p, axes)
        assert count[0] == 0  # no member sliced out on the device
        one = {"a": jnp.zeros(1), "b": jnp.zeros(1)}  # what one member's F sees
        assert size == _batch._block_for(_batch.FlatProblem(cubic), solvers.DenseLU(),
                                         ((1,), jnp.zeros(1).dtype),
                                         jax.tree_util.tree_structure(one),
                                         (((1,), jnp.zeros(1).dtype),) * 2) > 0
    finally:
        _batch._block_for.cache_clear()


def test_finished_members_do_not_backtrack():
    from solvers.roots._line_search import backtrack

    def fn(x, p):
        return jnp.atleast_1d(jnp.arctan(x[0] - p))  # a full Newton step from far overshoots

    x = jnp.asarray([[10.0], [10.0]])
    dx = jnp.asarray([[-50.0], [-50.0]])
    phi0 = 0.5 * jnp.arctan(10.0) ** 2
    slope = -2.0 * phi0 * jnp.ones(2)
    out = jax.vmap(lambda xi, di, s, a: backtrack(fn, xi, di, 0.0, phi0, s, active=a))(
        x, dx, slope, jnp.asarray([True, False]))
    assert bool(out.ok[0]) and int(out.num_fev[0]) > 1  # the active member backtracked
    assert not bool(out.ok[1]) and int(out.num_fev[1]) == 1  # the finished one did not


class Square(sg.ReffableTreeNode):
    c: jax.Array
    x: jax.Array = sg.unknown(default=1.0)

    def residual(self):
        return self.x ** 2 - self.c


class Meter:
    def __init__(self):
        self.counts = []

    def update(self, n):
        self.counts.append(n)


def test_a_progress_meter_counts_each_member_once(capsys):
    # a meter object was truthy: a new tqdm bar was drawn and the meter never updated; and
    # Default's fallbacks for the failing member (-1) must not count it again
    meter = Meter()
    sol = solvers.solve_flat_batch(lambda x, p: x ** 2 - p, jnp.ones(1),
                                   jnp.asarray([[4.0], [-1.0], [9.0]]), chunk_size=2,
                                   progress=meter)
    assert meter.counts == [2, 1] and sol.result.tolist() == [0, 3, 0]
    meter = Meter()
    solvers.solve_batch(Square(jnp.asarray(4.0)), {"Square.c": [4.0, -1.0, 9.0]},
                        progress=meter)
    assert meter.counts == [3]
    assert capsys.readouterr().err == ""


def test_a_scalar_batched_leaf_is_named():
    # a float or a list of floats as params was an IndexError from inside the batch sizing
    with pytest.raises(ValueError, match=r"params\[1\] is a scalar but batched .* np.asarray"):
        solvers.solve_flat_batch(cubic, jnp.zeros(1), [jnp.ones(2), 4.0])
    with pytest.raises(ValueError, match=r"params is a scalar but batched"):
        solvers.solve_flat_batch(cubic, jnp.zeros(1), 4.0)


def test_a_batch_axis_other_than_the_leading_one_is_refused():
    # params_axes=1 was taken as batched, sized and chunked along axis 0 but vmapped along
    # axis 1: a (3, 4) batch in chunks of 2 gave 3 members, the last x = 7.6e-6 (sum 0)
    p = jnp.asarray([[1.0, 4.0, 8.0, 1.0], [3.0, 5.0, 8.0, 1.0], [0.0, 0.0, 0.0, 0.0]])
    fn = lambda x, q: x ** 2 - jnp.sum(q)  # noqa: E731
    with pytest.raises(ValueError, match=r"params_axes holds 1: .*jnp.moveaxis\(p, 1, 0\)"):
        solvers.solve_flat_batch(fn, jnp.ones(1), p, params_axes=1, chunk_size=2)
    with pytest.raises(ValueError, match=r"params_axes holds True: give 0"):
        solvers.solve_flat_batch(fn, jnp.ones(1), {"q": p.T}, params_axes={"q": True})
    sol = solvers.solve_flat_batch(lambda x, q: fn(x, q["q"]), jnp.ones(1), {"q": p.T},
                                   params_axes={"q": 0}, chunk_size=2)
    np.testing.assert_allclose(sol.x[:, 0], [2.0, 3.0, 4.0, np.sqrt(2.0)], rtol=1e-10)


def test_integer_params_that_jax_would_wrap_are_refused_naming_the_leaf():
    # With x64 off JAX narrows int64 to int32: c = 2**40 became 0 and that member
    # "converged" at x = 4.5e-4, a wrong answer with no word; an int64 x0 wrapped the same.
    fn = lambda x, p: x ** 3 - p["c"]  # noqa: E731
    with jax.enable_x64(False):
        with pytest.raises(ValueError, match=r"params\['c'\] range over \[1, 1099511627776\], "
                                             r"beyond int32.*jax_enable_x64"):
            solvers.solve_batch(fn, jnp.ones(1), {"c": np.asarray([[1], [8], [2**40]])})
        with pytest.raises(ValueError, match=r"solve_batch x0 range over.*beyond int32"):
            solvers.solve_batch(fn, np.asarray([[1], [2**40]]), {"c": np.ones((2, 1))})
        with pytest.raises(ValueError, match=r"solve params\['c'\] range over.*beyond int32"):
            solvers.solve(fn, jnp.ones(1), {"c": np.asarray([2**40])})
        # Python ints: JAX's own OverflowError, without the leaf or the fix
        with pytest.raises(ValueError, match=r"solve params\['c'\] range over.*beyond int32"):
            solvers.solve(fn, jnp.ones(1), {"c": 2**40})
        with pytest.raises(ValueError, match=r"solve x0 range over.*beyond int32"):
            solvers.solve(fn, [2**40], {"c": 8.0})
        within = solvers.solve_batch(fn, jnp.ones(1), {"c": np.asarray([[1], [8], [27]])},
                                     solver=solvers.Newton())
        np.testing.assert_allclose(np.asarray(within.x).ravel(), [1.0, 2.0, 3.0], rtol=1e-5)
    assert jax.config.jax_enable_x64  # restored for the other tests
    wide = solvers.solve_batch(fn, jnp.ones(1), {"c": np.asarray([[1], [2**40]])},
                               solver=solvers.Newton(max_steps=200))
    np.testing.assert_allclose(np.asarray(wide.x).ravel(), [1.0, 2.0 ** (40 / 3)], rtol=1e-9)


@pytest.mark.parametrize("batched", [False, True])
def test_throw_under_jit_raises_jax_runtime_error_after_a_call_that_succeeded(batched):
    # A jitted function whose first call succeeded runs from JAX's C++ fast path, which
    # turned the SolveError of a later call into a plain ValueError (jax-ml/jax#34083).
    fn = lambda x, p: x ** 2 - p  # noqa: E731
    if batched:
        run = jax.jit(lambda p: solvers.solve_batch(fn, jnp.ones(1), p, throw=True).x)
        good, bad = jnp.asarray([[4.0], [9.0]]), jnp.asarray([[4.0], [-9.0]])
    else:
        run = jax.jit(lambda p: solvers.solve(fn, jnp.ones(1), p, throw=True).x)
        good, bad = jnp.asarray([9.0]), jnp.asarray([-9.0])
    np.testing.assert_allclose(np.abs(run(good)), np.sqrt(good))
    for _ in range(2):
        with pytest.raises(jax.errors.JaxRuntimeError, match="SolveError"):
            run(bad).block_until_ready()
    np.testing.assert_allclose(np.abs(run(good)), np.sqrt(good))
