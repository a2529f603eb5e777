"""`System.build` reuses the lowering of graphs of equal structure, never their values."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simgraph as sg
import solvers
from solvers import _system


class Cell(sg.ReffableTreeNode):
    c: jax.Array
    scale: jax.Array = 1.0
    kind: str = sg.static(default="cubic")
    x: jax.Array = sg.unknown(default=1.0)

    def residual(self):
        return self.scale * self.x ** 3 - self.c


class Chain(sg.ReffableTreeNode):
    cells: list


def chain(cs, x0=1.0, kind="cubic"):
    return Chain([Cell(jnp.asarray(c), x=jnp.asarray(x0), kind=kind) for c in cs])


@pytest.fixture(autouse=True)
def empty_cache(monkeypatch):
    monkeypatch.setattr(_system, "_STRUCTURES", type(_system._STRUCTURES)())


def test_equal_structures_share_the_lowering_but_not_the_values():
    first = solvers.System.build(chain([1.0, 8.0]))
    second = solvers.System.build(chain([27.0, 64.0], x0=2.0))
    assert second.structure.evaluator is first.structure.evaluator
    assert len(_system._STRUCTURES) == 1
    np.testing.assert_array_equal(second.x0, [2.0, 2.0])
    np.testing.assert_array_equal(second.params["Cell"]["c"], [27.0, 64.0])
    np.testing.assert_allclose(solvers.solve(second).x, [3.0, 4.0], rtol=1e-12)
    np.testing.assert_allclose(solvers.solve(first).x, [1.0, 2.0], rtol=1e-12)


def test_cached_build_solves_as_a_fresh_build(monkeypatch):
    graph = chain([2.0, 5.0, 11.0], x0=0.5)
    sweep = {"Cell.c": jnp.asarray([[2.0, 5.0, 11.0], [1.0, 3.0, 9.0]])}
    solvers.System.build(chain([1.0, 1.0, 1.0]))          # fills the cache
    cached = solvers.solve_batch(graph, sweep)
    monkeypatch.setattr(_system, "_STRUCTURES", type(_system._STRUCTURES)())
    fresh = solvers.solve_batch(graph, sweep)
    np.testing.assert_array_equal(cached.x, fresh.x)
    np.testing.assert_array_equal(cached.iterations, fresh.iterations)


@pytest.mark.parametrize("other", [
    lambda: chain([1.0, 8.0, 27.0]),             # more nodes
    lambda: chain([1.0, 8.0], kind="other"),     # a different static value
    lambda: Chain([Cell(jnp.asarray([1.0, 8.0]), x=jnp.ones(2)), Cell(jnp.asarray(8.0))]),  # shapes
])
def test_different_structures_miss(other):
    first = solvers.System.build(chain([1.0, 8.0]))
    second = solvers.System.build(other())
    assert second.structure.evaluator is not first.structure.evaluator
    assert len(_system._STRUCTURES) == 2


def test_evaluation_mode_is_part_of_the_key():
    grouped = solvers.System.build(chain([1.0, 8.0]))
    objectwise = solvers.System.build(chain([1.0, 8.0]), evaluation="objectwise")
    assert objectwise.evaluation == "objectwise" and grouped.evaluation == "grouped"


def test_cache_is_bounded_and_holds_no_graph(monkeypatch):
    monkeypatch.setattr(_system, "STRUCTURE_CACHE_SIZE", 3)
    for size in range(1, 7):
        solvers.System.build(chain([1.0] * size))
    assert len(_system._STRUCTURES) == 3
    for entry in _system._STRUCTURES.values():
        assert all(kind.sample is None for kind in entry.evaluator.an.kinds)


def test_a_failed_check_is_not_cached():
    class Free(sg.ReffableTreeNode):
        x: jax.Array = sg.unknown(default=0.0)

    with pytest.raises(solvers.ModelError):
        solvers.System.build(Free())
    assert len(_system._STRUCTURES) == 0
    with pytest.raises(solvers.ModelError):
        solvers.System.build(Free())
