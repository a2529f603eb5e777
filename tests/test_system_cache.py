"""`System.build` reuses the lowering of graphs of equal structure, never their values."""

import gc
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simgraph as sg
import solvers
from solvers.lowering import _system


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
    _empty(monkeypatch)


def _empty(monkeypatch):
    for name in ("_STRUCTURES", "_PLANS"):
        monkeypatch.setattr(_system, name, type(getattr(_system, name))())


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
    _empty(monkeypatch)
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
    assert len(_system._STRUCTURES) == 3 and len(_system._PLANS) == 3
    graph = chain([1.0] * 6)
    system = solvers.System.build(graph)
    solvers.solve(system)
    cell = weakref.ref(graph.cells[0])
    del graph, system
    gc.collect()
    assert cell() is None  # neither cache keeps a node of a graph built from


def test_a_failed_check_is_not_cached():
    class Free(sg.ReffableTreeNode):
        x: jax.Array = sg.unknown(default=0.0)

    with pytest.raises(solvers.ModelError):
        solvers.System.build(Free())
    assert len(_system._STRUCTURES) == 0
    with pytest.raises(solvers.ModelError):
        solvers.System.build(Free())


# -- the cache-hit fast path: a graph costs what its System costs ----------------------------
from system_models import Circuit, CurrentSource, Diode, Ground, Node, Resistor  # noqa: E402

_COMPILES: list = []
jax.monitoring.register_event_duration_secs_listener(
    lambda name, *_, **__: _COMPILES.append(name) if name == "/jax/core/compile/backend_compile_duration" else None)


def diode_ladder(n, g=1.0, drive=1.0, leaf=float):
    """Resistors along a chain of nodes, a diode from each node to ground, a current source."""
    ground = Ground()
    nodes = [Node() for _ in range(n)]
    chain = [ground] + nodes
    elements = [Resistor(chain[k], chain[k + 1], leaf(g * (1 + k % 3))) for k in range(n)]
    elements += [Diode(node, ground) for node in nodes]
    elements.append(CurrentSource(ground, nodes[-1], leaf(drive)))
    return Circuit(chain, elements)


def test_solve_of_a_graph_equals_solve_of_its_system():
    graph = diode_ladder(10)
    by_graph, by_system = solvers.solve(graph), solvers.solve(solvers.System.build(graph))
    np.testing.assert_array_equal(by_graph.x, by_system.x)
    np.testing.assert_array_equal(by_graph.iterations, by_system.iterations)
    assert by_graph.converged and by_graph.lowered.structure is by_system.lowered.structure


@pytest.mark.parametrize("leaf", [float, jnp.asarray, np.asarray])
def test_new_values_hit_the_cache_and_compile_nothing(monkeypatch, leaf):
    first = solvers.solve(diode_ladder(6, leaf=leaf))
    calls = {"analyse": 0, "structure": 0}
    for name, module in (("analyse", solvers.lowering._analyse), ("structure", sg)):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _real=real, _name=name, **k: (
            calls.__setitem__(_name, calls[_name] + 1), _real(*a, **k))[1])
    del _COMPILES[:]
    second = solvers.solve(diode_ladder(6, g=2.0, drive=3.0, leaf=leaf))
    assert calls == {"analyse": 0, "structure": 0}  # no walk over node descriptions
    assert _COMPILES == []  # nothing compiled: the gather and the solve are reused
    assert second.lowered.structure is first.lowered.structure
    assert second.converged and not np.allclose(second.x, first.x)
    fresh = solvers.System.build(diode_ladder(6, g=2.0, drive=3.0))
    np.testing.assert_array_equal(second.lowered.x0, fresh.x0)
    for label, cols in fresh.params.items():
        for name, value in cols.items():
            np.testing.assert_array_equal(second.lowered.params[label][name], value)


@pytest.mark.parametrize("hook", ["residual", "step_limit"])
def test_a_method_reassigned_after_a_solve_is_lowered_and_compiled_again(hook):
    class Square(sg.ReffableTreeNode):
        p: jax.Array
        x: jax.Array = sg.unknown(default=1.0)

        def residual(self):
            return self.x ** 2 - self.p

    graph = Square(jnp.asarray(4.0))
    np.testing.assert_allclose(solvers.solve(graph).x, [2.0], rtol=1e-12)
    if hook == "residual":
        Square.residual = lambda self: self.x - self.p
        np.testing.assert_allclose(solvers.solve(graph).x, [4.0], rtol=1e-12)
        np.testing.assert_allclose(solvers.solve_batch(graph, {"p": jnp.asarray([3.0, 5.0])}).x,
                                   [[3.0], [5.0]], rtol=1e-12)
    else:  # a hook the class did not have: found on the next build
        Square.step_limit = lambda self, dx: 0.5
        assert solvers.System.build(graph).has_step_limit
    assert len(_system._STRUCTURES) == 2


def test_a_reassigned_next_breakpoint_is_where_a_transient_steps_next():
    # next_breakpoint was not among the hooks: a simulate after reassigning it reused the
    # old lowering and stepped over the new corners (162 steps, 173 from a fresh process).
    class Pulse(sg.ReffableTreeNode):
        clock: solvers.Clock
        c: jax.Array
        v: jax.Array = sg.unknown(default=0.0)

        def residual(self):
            return self.v - jnp.where(self.clock.t < 1e-3, 0.0, 1.0)

        def charge(self):
            return ((self, self.c * self.v),)

        def next_breakpoint(self, t):
            return jnp.where(t < 1e-3, 1e-3, jnp.inf)

    t = np.linspace(0.0, 2e-3, 3)
    first = solvers.simulate(Pulse(solvers.Clock(), 1e-4), t)
    Pulse.next_breakpoint = lambda self, t: jnp.where(t < 7e-4, 7e-4, jnp.inf)
    moved = solvers.simulate(Pulse(solvers.Clock(), 1e-4), t)
    assert len(_system._STRUCTURES) == 2  # lowered again for the new function
    for name in ("_STRUCTURES", "_PLANS"):
        getattr(_system, name).clear()
    fresh = solvers.simulate(Pulse(solvers.Clock(), 1e-4), t)
    assert int(moved.n_steps) == int(fresh.n_steps) != int(first.n_steps)


def test_a_base_class_method_reassigned_under_an_override_is_analysed_once(monkeypatch):
    # The probe saw the base's namespace change, the new key equalled the old (the subclass
    # overrides the method), and the stale probe sent every later build to a full analysis.
    from solvers.lowering import _analyse

    class Base(sg.ReffableTreeNode):
        p: jax.Array
        x: jax.Array = sg.unknown(default=1.0)

        def residual(self):
            return self.x - self.p

    class Square(Base):
        def residual(self):
            return self.x ** 2 - self.p

    graph = Square(jnp.asarray(4.0))
    solvers.System.build(graph)
    Base.residual = lambda self: self.x - 2.0 * self.p
    calls = []
    real = _analyse.analyse
    monkeypatch.setattr(_analyse, "analyse", lambda *a: calls.append(1) or real(*a))
    for _ in range(3):
        system = solvers.System.build(graph)
    assert len(calls) == 1
    np.testing.assert_allclose(solvers.solve(system).x, [2.0], rtol=1e-12)


def test_system_build_of_a_root_that_is_not_a_node_says_what_to_pass():
    with pytest.raises(sg.GraphTypeError, match=r"root node of a graph.*sg.Bundle"):
        solvers.System.build([chain([1.0])])


def test_a_changed_leaf_shape_or_dtype_is_analysed_again():
    first = solvers.System.build(chain([1.0, 8.0]))
    ints = Chain([Cell(jnp.asarray(1.0)), Cell(jnp.asarray(8, dtype=jnp.int32))])  # same treedef
    second = solvers.System.build(ints)
    assert second.structure != first.structure
    assert [k.count for k in second.structure.an.kinds] == [1, 1, 1]


def test_jit_outputs_refer_to_their_own_graph_and_keep_no_graph_alive():
    f = jax.jit(lambda system: system)
    graph_a, graph_b = chain([1.0, 8.0]), chain([27.0, 64.0])
    out_a, out_b = f(solvers.System.build(graph_a)), f(solvers.System.build(graph_b))
    np.testing.assert_array_equal(out_b.params["Cell"]["c"], [27.0, 64.0])
    assert out_b.locate(".cells[1]") == slice(1, 2)  # key paths need no graph
    with pytest.raises(sg.GraphError, match="not a node of the graph"):
        out_b.locate(graph_a.cells[1])  # never graph A's objects
    built_b = solvers.System.build(graph_b)
    assert built_b.locate(graph_b.cells[1]) == slice(1, 2)
    cell = weakref.ref(graph_a.cells[0])
    del graph_a, out_a
    gc.collect()
    assert cell() is None  # the jit cache (keyed by the structure) does not keep A alive


@pytest.mark.parametrize("platform", ["cpu", "accelerator"])
def test_device_leaves_give_the_host_leaves_x0_and_params(platform, monkeypatch):
    # x0 and params gathered from device arrays (read on the host on CPU; on an accelerator
    # one compiled scatter and stack) equal the ones gathered from numbers on the host,
    # including unknowns that do not start at 0.
    from solvers.lowering import _gather
    if platform == "accelerator":
        monkeypatch.setattr(_gather, "readable_on_host", lambda values: False)
    stacked, stack = [], _gather._stack_on_device
    monkeypatch.setattr(_gather, "_stack_on_device",
                        lambda *args: stacked.append(1) or stack(*args))
    graph = diode_ladder(5)
    for k, node in enumerate(sg.nodes(graph)):
        if isinstance(node, Node):
            node.v = 0.1 * k
    host, device = solvers.System.build(graph), solvers.System.build(jax.device_put(graph))
    assert np.abs(np.asarray(host.x0)).sum() > 0
    np.testing.assert_array_equal(device.x0, host.x0)
    for label, cols in host.params.items():
        for name, value in cols.items():
            np.testing.assert_array_equal(device.params[label][name], value)
    assert bool(stacked) == (platform == "accelerator")


def test_node_objects_locate_as_their_key_paths_and_only_in_their_own_graph():
    # node objects are found through an id map built once per System (not a scan per call)
    graph, twin = diode_ladder(30), diode_ladder(30)
    system, twin_system = solvers.System.build(graph), solvers.System.build(twin)
    assert system.structure is twin_system.structure
    for k, node in enumerate(graph.nodes):
        assert system.locate(node) == system.locate(f".nodes[{k}]") == slice(k, k + 1)
        assert twin_system.locate(twin.nodes[k]) == slice(k, k + 1)
        with pytest.raises(sg.GraphError, match="not a node of the graph"):
            twin_system.locate(node)
    resistor = system.locate(graph.elements[3])  # no unknowns of its own
    assert resistor.start == resistor.stop == system.locate(".elements[3]").start


def test_node_objects_locate_as_built_after_the_graph_is_relinked():
    # A Solution's System maps node objects to x as the graph was when it was built: it
    # walked the graph again on first use, and a reorder of same-class nodes went unseen.
    a, b = Cell(jnp.asarray(1.0)), Cell(jnp.asarray(8.0))
    graph = Chain([a, b])
    sol = solvers.solve(graph)
    graph.cells = [b, a]
    np.testing.assert_allclose(sol.value(a), [1.0], rtol=1e-12)
    np.testing.assert_allclose(sol.value(b), [2.0], rtol=1e-12)
    with pytest.raises(sg.GraphError, match="not a node of the graph"):
        sol.value(Cell(jnp.asarray(27.0)))


@pytest.mark.parametrize("leaves", ["floats", "ints", "mixed types", "arrays"])
def test_number_leaves_gather_as_every_other_leaf_does(leaves, monkeypatch):
    # Graphs of Python numbers or CPU scalars take the precomputed ScalarLayout (one numpy
    # array, one index per column); anything else the general path: both give the same x0 and params,
    # including unknowns that do not start at 0 and int leaves promoted to float unknowns.
    from solvers.lowering import _gather
    make = {"floats": float, "ints": int, "arrays": jnp.asarray,
            "mixed types": lambda v: np.float64(v) if v == 2 else float(v)}[leaves]
    graph = Chain([Cell(make(c), scale=make(s), x=make(x)) for c, s, x in [(1, 2, 3), (4, 5, 6)]])
    general = {}
    with monkeypatch.context() as m:
        m.setattr(_gather, "ScalarLayout", type("Off", (), {"of": staticmethod(lambda *a: None)}))
        _empty(m)
        general = solvers.System.build(graph)
    _empty(monkeypatch)
    calls = []
    real = _gather.ScalarLayout.gather
    monkeypatch.setattr(_gather.ScalarLayout, "gather",
                        lambda self, lv: calls.append(real(self, lv)) or calls[-1])
    for _ in range(2):  # the second build is a cache hit
        system = solvers.System.build(graph)
        assert system.x0.dtype == general.x0.dtype == jnp.float64
        np.testing.assert_array_equal(system.x0, general.x0)
        assert jax.tree_util.tree_structure(system.params) == jax.tree_util.tree_structure(general.params)
        for got, want in zip(jax.tree_util.tree_leaves(system.params), jax.tree_util.tree_leaves(general.params)):
            assert np.asarray(got).dtype == np.asarray(want).dtype
            np.testing.assert_array_equal(got, want)
    assert np.asarray(system.x0).tolist() == [3.0, 6.0]
    assert len(calls) == 2 and all(c is not None for c in calls)  # gathered by the layout
    # traced leaves (a build inside jit) fall back to the general path, with the same values
    traced = jax.jit(lambda g: solvers.System.build(g).x0)(graph)
    assert calls[-1] is None
    np.testing.assert_array_equal(traced, general.x0)


def test_solve_prepares_a_method_once_per_structure_and_method(monkeypatch):
    # solve(graph) keeps the bound, checked method and the flat problem on the structure:
    # a second graph of the structure does not choose or bind a linear solver again, and
    # another method (or another structure) gets its own preparation.
    from solvers import _graph
    prepared = []
    real = _graph._prepare
    monkeypatch.setattr(_graph, "_prepare", lambda s, m: prepared.append(m) or real(s, m))
    for cs in ([1.0, 8.0], [27.0, 64.0]):
        np.testing.assert_allclose(solvers.solve(chain(cs)).x, np.cbrt(cs), rtol=1e-12)
    assert prepared == [None]
    lean = solvers.Newton(atol=1e-3, rtol=0.0)
    loose = solvers.solve(chain([1.0, 8.0], x0=1.5), lean)
    assert prepared == [None, lean]
    assert float(loose.residual_norm) > 1e-12 and bool(loose.converged)  # Newton's atol, not Default's
    solvers.solve(chain([1.0, 8.0, 27.0]), lean)  # another structure
    assert prepared == [None, lean, lean]


def test_prepared_methods_per_structure_are_bounded(monkeypatch):
    from solvers import _graph
    monkeypatch.setattr(_graph, "PREPARED_PER_STRUCTURE", 2)
    graph = chain([1.0, 8.0])
    for atol in (1e-9, 1e-10, 1e-11):
        assert bool(solvers.solve(graph, solvers.Newton(atol=atol)).converged)
    memo = solvers.System.build(graph).structure.prepared
    assert [m.atol for m in memo] == [1e-10, 1e-11]


def test_a_system_read_inside_jit_keeps_no_tracer():
    # System.x0 moves a host-gathered start to the device on first read; read first inside
    # a jit that closes over the System, it kept the tracer, and the next eager solve failed
    # with an UnexpectedTracerError.
    system = solvers.System.build(chain([1.0, 8.0]))
    inside = jax.jit(lambda c: solvers.solve(system).x * c)(2.0)
    np.testing.assert_allclose(inside, [2.0, 4.0], rtol=1e-12)
    assert not isinstance(system.x0, jax.core.Tracer)
    np.testing.assert_allclose(solvers.solve(system).x, [1.0, 2.0], rtol=1e-12)
    np.testing.assert_array_equal(jax.jit(lambda s: s.x0)(system), [1.0, 1.0])
