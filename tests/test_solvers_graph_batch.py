"""solve_batch keys and values: every key spelling, checked before tracing, with clear errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simgraph as sg
import solvers
from solvers import _graph


class Slope(sg.ReffableTreeNode):
    value: jax.Array


class Cubic(sg.ReffableTreeNode):
    c: jax.Array
    m: Slope
    x: jax.Array = sg.unknown(default=1.0)

    def residual(self):
        return self.m.value * self.x ** 3 - self.c


class Source(sg.ReffableTreeNode):
    voltage: jax.Array
    offset: jax.Array


class Drop(sg.ReffableTreeNode):
    source: Source
    parts: dict
    v: jax.Array = sg.unknown(default=0.0)

    def residual(self):
        return self.v - self.source.voltage - self.source.offset - self.parts["a"].value


def drop():
    return Drop(Source(jnp.asarray(1.0), jnp.asarray(0.0)), {"a": Slope(jnp.asarray(0.0))})


def cubics():
    slope = Slope(jnp.asarray(2.0))
    return sg.Bundle(Cubic(jnp.asarray(2.0), slope), Cubic(jnp.asarray(16.0), slope))


@pytest.fixture
def no_solve(monkeypatch):
    """Fail the test if anything is solved (or traced): key errors come first."""
    def refuse(*args, **kwargs):
        raise AssertionError("solve_flat_batch was reached")
    monkeypatch.setattr(_graph, "solve_flat_batch", refuse)


VOLTS = jnp.linspace(0.5, 5.0, 7)


@pytest.mark.parametrize("key", ["source.voltage", ".source.voltage", "Source.voltage",
                                 "voltage", " source.voltage "])
def test_attribute_paths_and_class_fields_are_keys(key):
    sol = solvers.solve_batch(drop(), {key: VOLTS})
    assert bool(sol.converged.all())
    np.testing.assert_allclose(sol.x[:, 0], VOLTS)


@pytest.mark.parametrize("key", ["parts['a'].value", ".parts['a'].value", '.parts["a"].value'])
def test_dict_keys_as_keystr_prints_them(key):
    sol = solvers.solve_batch(drop(), {key: VOLTS})
    np.testing.assert_allclose(sol.x[:, 0], 1.0 + VOLTS)


def test_list_indices_and_shared_class_field():
    graph = cubics()
    cs = jnp.asarray([2.0, 54.0])
    one = solvers.solve_batch(graph, {"items[1].c": cs})
    np.testing.assert_allclose(one.x[:, 1], (cs / 2.0) ** (1 / 3))
    np.testing.assert_allclose(one.x[:, 0], 1.0)
    both = solvers.solve_batch(graph, {"Cubic.c": cs})
    np.testing.assert_allclose(both.x, np.repeat(((cs / 2.0) ** (1 / 3))[:, None], 2, 1))
    per_leaf = solvers.solve_batch(graph, {"Cubic.c": jnp.asarray([[2.0, 16.0], [16.0, 2.0]])})
    np.testing.assert_allclose(per_leaf.x, [[1.0, 2.0], [2.0, 1.0]])
    np.testing.assert_allclose(per_leaf.params["Cubic"]["c"], [[2.0, 16.0], [16.0, 2.0]])


def test_single_field_class_and_callable_keys():
    graph = cubics()
    by_class = solvers.solve_batch(graph, {Slope: jnp.asarray([0.25, 16.0])})
    np.testing.assert_allclose(by_class.x[:, 1], [4.0, 1.0])
    by_pred = solvers.solve_batch(graph, {lambda info: info.field == "value": jnp.asarray([16.0])})
    np.testing.assert_allclose(by_pred.x[0], [0.5, 1.0])


def test_unknown_key_names_it_and_suggests_paths(no_solve):
    with pytest.raises(sg.GraphError) as err:
        solvers.solve_batch(drop(), {"sorce.voltage": VOLTS})
    text = str(err.value)
    assert "'sorce.voltage'" in text and "'.source.voltage'" in text
    assert "Class.field" in text and "sg.split" in text
    with pytest.raises(sg.GraphError, match="Did you mean '.items\\[1\\].c'"):
        solvers.solve_batch(cubics(), {"[1].c": jnp.ones(2)})
    with pytest.raises(sg.GraphError, match="'Source.voltage'"):
        solvers.solve_batch(drop(), {"Sourse.voltage": VOLTS})


def test_class_key_with_several_fields_asks_for_one(no_solve):
    with pytest.raises(sg.GraphError, match="offset, voltage.*'Source.offset'"):
        solvers.solve_batch(drop(), {Source: VOLTS})


def test_node_and_unknown_keys_are_explained(no_solve):
    with pytest.raises(sg.GraphError, match="is a node.*'.source.voltage'"):
        solvers.solve_batch(drop(), {"source": VOLTS})
    with pytest.raises(sg.GraphError, match="unknown, not a parameter"):
        solvers.solve_batch(drop(), {".v": VOLTS})


def test_value_shapes_are_checked_first(no_solve):
    with pytest.raises(ValueError, match="'source.voltage': 7, 'Source.offset': 3"):
        solvers.solve_batch(drop(), {"source.voltage": VOLTS, "Source.offset": jnp.ones(3)})
    with pytest.raises(ValueError, match="scalar"):
        solvers.solve_batch(drop(), {"source.voltage": 1.0})
    with pytest.raises(sg.GraphError, match="shape \\(2,\\)"):
        solvers.solve_batch(drop(), {"source.voltage": jnp.ones((7, 2))})
    with pytest.raises(ValueError, match="at least one"):
        solvers.solve_batch(drop(), {})


def test_values_that_would_lose_their_kind_are_refused(no_solve):
    # Int leaves (a graph built from 2 and 16) took swept floats truncated: 16.5 became 16
    # and 0.5 became 0, and the members reported converged at the wrong roots.
    ints = sg.Bundle(Cubic(2, Slope(2)), Cubic(16, Slope(2)))
    with pytest.raises(sg.GraphTypeError, match="float64, but the leaf .items\\[1\\].c .* int64"):
        solvers.solve_batch(ints, {".items[1].c": jnp.asarray([16.5, 0.5])})
    with pytest.raises(sg.GraphTypeError, match="complex128"):
        solvers.solve_batch(cubics(), {".items[1].c": jnp.asarray([16 + 1j, 2.0])})
    system = solvers.System.build(ints)
    with pytest.raises(sg.GraphTypeError, match="e.g. 2.0, not 2"):
        system.set_params(system.params, {".items[1].c": 16.9})
    assert system.set_params(system.params, {".items[1].c": 17})["Cubic"]["c"].tolist() == [2, 17]
    unsigned = solvers.System.build(sg.Bundle(Cubic(np.uint32(2), Slope(2))))
    assert unsigned.set_params(unsigned.params, {".items[0].c": 5})["Cubic"]["c"].tolist() == [5]


@pytest.mark.parametrize("leaf, values, match", [
    (np.float32(2.0), [2.0, 1e300], r"holds 1e\+300, .* \(float32\) .* become inf\. .*float64"),
    (np.float16(2.0), [2.0, 1e5], r"holds 100000\.0, .* \(float16\) .* become inf\. .*<= 65504\)"),
    (np.int8(2), [2, 300], r"holds 300, .* \(int8\) .* become 44\. .*\[-128, 127\]"),
    (np.uint32(2), [2, -1], r"holds -1, .* \(uint32\) .* become 4294967295\. .*\[0, "),
    (np.bool_(True), [1, 2], r"holds 2, .* \(bool\) .* become True\. Pass True/False"),
    # the same width, the other sign: a round trip through the cast wraps back
    (np.uint64(2), [2, -1], r"holds -1, .* \(uint64\) .* become 18446744073709551615\."),
    (np.int64(2), np.asarray([2, 2**63], np.uint64), r"holds 9223372036854775808, .* \(int64\) .* become -9223"),
])
def test_values_the_cast_would_change_are_refused(no_solve, leaf, values, match):
    # Swept values were cast to the leaf's dtype without a word: 1e300 into a float32 leaf
    # became inf, 300 into an int8 one 44, -1 into a uint32 one 4294967295, 2 into a bool True.
    graph = sg.Bundle(Cubic(leaf, Slope(2.0)), Cubic(leaf, Slope(2.0)))
    with pytest.raises(sg.GraphTypeError, match="'.items\\[0\\].c' " + match):
        solvers.solve_batch(graph, {".items[0].c": np.asarray(values)})
    with pytest.raises(sg.GraphTypeError, match=match):  # the same rule for a transient
        solvers.simulate_batch(graph, {".items[0].c": jnp.asarray(values)}, [0.0, 1.0])
    per_leaf = np.column_stack([list(values[:1]) * 2, values])  # one value per leaf: the second's
    with pytest.raises(sg.GraphTypeError, match="leaf .items\\[1\\].c"):
        solvers.solve_batch(graph, {"Cubic.c": per_leaf})
    system = solvers.System.build(graph)
    with pytest.raises(sg.GraphTypeError, match=match):
        system.set_params(system.params, {".items[1].c": np.asarray(values[1])})


def test_values_are_checked_before_jax_narrows_them_with_x64_off(no_solve):
    # x64 off: the float64 values were put on the device as float32 first, 1e300 as inf
    with jax.enable_x64(False):
        graph = sg.Bundle(Cubic(jnp.asarray(2.0), Slope(jnp.asarray(2.0))))
        with pytest.raises(sg.GraphTypeError, match=r"holds 1e\+300, .* \(float32\)"):
            solvers.solve_batch(graph, {".items[0].c": np.asarray([2.0, 1e300])})
        system = solvers.System.build(graph)  # set_params read 1e300 as inf, 2**62 as 0.0
        for value in (1e300, np.float64(1e300)):
            with pytest.raises(sg.GraphTypeError, match=r"holds 1e\+300, .* \(float32\)"):
                system.set_params(system.params, {".items[0].c": value})
        assert system.set_params(system.params, {".items[0].c": 2**62})["Cubic"]["c"].tolist() \
            == [2.0**62]
        # integers into a float leaf are the leaf's floats, not int32 first (3e9 was refused)
        _, (values,) = _graph._sweep_values(system, {".items[0].c": np.asarray([1, 3 * 10**9])})
        assert values.dtype == np.float32 and values.tolist() == [1.0, 3e9]
    signed = jnp.asarray([2, -1], jnp.int32)  # on the device: checked there
    graph = sg.Bundle(Cubic(np.uint32(2), Slope(2.0)))
    with pytest.raises(sg.GraphTypeError, match=r"holds -1, .* \(uint32\) .* become 4294967295"):
        _graph._sweep_values(solvers.System.build(graph), {".items[0].c": signed})


def test_values_are_cast_to_the_leaf_losing_precision_only(no_solve):
    system = solvers.System.build(sg.Bundle(Cubic(np.float32(2.0), Slope(2.0))))
    _, (values,) = _graph._sweep_values(system, {".items[0].c": np.asarray([0.1, np.inf])})
    new = system.set_params(system.params, {".items[0].c": values[0]})["Cubic"]["c"]
    assert new.dtype == np.float32 and new.tolist() == [np.float32(0.1)]  # rounded, allowed
    ints = solvers.System.build(sg.Bundle(Cubic(np.int8(2), Slope(2.0))))
    _graph._sweep_values(ints, {".items[0].c": np.asarray([-128, 127])})  # in range: cast
    # traced values are left to JAX's casts: nothing reads them
    swept = jax.jit(lambda v: _graph._sweep_values(system, {".items[0].c": v})[1][0])
    assert swept(jnp.asarray([2.0, 1e300])).tolist() == [2.0, 1e300]
    put = jax.jit(lambda v: system.set_params(system.params, {".items[0].c": v})["Cubic"]["c"])
    assert np.isinf(put(jnp.asarray(1e300))).all()


def test_one_leaf_swept_by_two_keys_is_refused(no_solve):
    # The last key silently won: the answer depended on the order of the dict.
    for other in ("Cubic.c", "items[1].c"):
        with pytest.raises(ValueError, match="both select .items\\[1\\].c"):
            solvers.solve_batch(cubics(), {".items[1].c": jnp.ones(2), other: jnp.ones(2)})


def test_batch_starts_of_the_wrong_shape_are_named(no_solve):
    for x0 in (jnp.ones(3), jnp.ones((3, 2)), jnp.ones((2, 2, 2)), 1.0):
        with pytest.raises(ValueError, match="give \\(2,\\) .* or \\(2, 2\\)"):
            solvers.solve_batch(cubics(), {".items[1].c": jnp.ones(2)}, x0=x0)


def test_prebuilt_system_is_reused(monkeypatch):
    graph = drop()
    system = solvers.System.build(graph)
    expected = solvers.solve_batch(graph, {"source.voltage": VOLTS})

    def rebuild(*args, **kwargs):
        raise AssertionError("the graph was lowered again")

    monkeypatch.setattr(solvers.System, "build", rebuild)
    sol = solvers.solve_batch(system, {"source.voltage": VOLTS})
    assert sol.lowered is system
    np.testing.assert_allclose(sol.x, expected.x)
    np.testing.assert_allclose(solvers.solve(system).x, [1.0])


def test_batch_inside_jit_keeps_keys():
    graph = drop()
    xs = jax.jit(lambda v: solvers.solve_batch(graph, {"source.voltage": v}).x)(VOLTS)
    np.testing.assert_allclose(xs[:, 0], VOLTS)



def test_a_sweeps_params_compile_once_per_structure_and_keys():
    """``Solution.params`` of a batch sets each member's values in one compiled program (an
    eager vmap compiled every primitive), reused by the next sweep of the structure."""
    from compile_count import compilations

    graph = sg.Bundle(drop(), drop())  # a structure no other test sweeps
    first = solvers.solve_batch(graph, {".items[0].source.voltage": VOLTS,
                                        ".items[1].source.offset": VOLTS})
    with compilations() as count:
        params = first.params
    assert count[0] <= 1
    np.testing.assert_array_equal(params["Source"]["voltage"][:, 0], VOLTS)
    np.testing.assert_array_equal(params["Source"]["offset"][:, 1], VOLTS)
    np.testing.assert_array_equal(params["Source"]["voltage"][:, 1], 1.0)
    again = solvers.solve_batch(graph, {".items[0].source.voltage": VOLTS + 1.0,
                                        ".items[1].source.offset": VOLTS})
    with compilations() as count:
        np.testing.assert_array_equal(again.params["Source"]["voltage"][:, 0], VOLTS + 1.0)
    assert count[0] == 0
    np.testing.assert_allclose(again.system.items[0].v, VOLTS + 1.0)


@pytest.mark.parametrize("as_values", [np.asarray, list])
def test_sweep_values_given_as_numpy_or_lists_compile_nothing_new(as_values):
    # jnp.asarray of a numpy array compiles a staging program per shape in JAX >= 0.8.
    from compile_count import compilations

    graph = drop()
    solvers.solve_batch(graph, {".source.voltage": VOLTS})
    with compilations() as count:
        sol = solvers.solve_batch(graph, {".source.voltage": as_values(np.asarray(VOLTS) + 1.0)})
    assert count[0] == 0
    np.testing.assert_allclose(np.asarray(sol.system.v), np.asarray(VOLTS) + 1.0)


def test_sweep_values_as_a_list_of_traced_values_differentiate():
    # A list holding tracers (the swept values under grad) cannot go through numpy.
    graph = drop()
    loss = lambda v: solvers.solve_batch(graph, {".source.voltage": [v, 2.0 * v]}).system.v.sum()  # noqa: E731
    # v = voltage + offset + a in each member: d(v(v) + v(2 v)) / dv = 3 (exactly: F is
    # linear), what the same batch given as one stacked array gives too
    np.testing.assert_allclose(jax.grad(loss)(1.5), 3.0, rtol=1e-12)


def test_a_vmapped_batch_gives_each_members_graph_and_names_its_worst_member():
    # vmap around solve_batch: .system / .params vmapped once, over the outer axis (a shape
    # error about .c), and members were named "(np.int64(1), np.int64(2))"
    def batch(m):
        return solvers.solve_batch(Cubic(jnp.asarray(2.0), Slope(m)),
                                   {".c": jnp.asarray([2.0, 16.0, 54.0])}, solvers.Newton())

    out = jax.vmap(batch)(jnp.asarray([1.0, 0.0, 2.0]))
    assert out.batch_shape == (3, 3)
    np.testing.assert_array_equal(out.system.c[1], [2.0, 16.0, 54.0])
    np.testing.assert_array_equal(out.system.m.value[:, 0], [1.0, 0.0, 2.0])
    np.testing.assert_allclose(out.system.x[2], (np.asarray([2.0, 16.0, 54.0]) / 2) ** (1 / 3))
    assert out.worst_index() == (1, 2) and "member (1, 2): singular_jacobian" in out.summary()


def test_integer_sweep_values_that_jax_would_wrap_are_refused():
    # With x64 off JAX narrows int64 to int32: 2**40 became 0 and that member "converged"
    # at x = 3e-4 for c = 0 (a wrong answer with no word).
    class IntCubic(sg.ReffableTreeNode):
        c: jax.Array
        x: jax.Array = sg.unknown(default=1.0)

        def residual(self):
            return self.x ** 3 - self.c

    with jax.enable_x64(False):
        graph = IntCubic(jnp.asarray(1, jnp.int32))
        with pytest.raises(sg.GraphTypeError, match=r"'IntCubic.c'.*1099511627776.*int32.*"
                           r"become 0.*jax_enable_x64"):
            solvers.solve_batch(graph, {"IntCubic.c": np.asarray([1, 8, 2**40])})
        with pytest.raises(ValueError, match=r"solve_batch x0 range over.*beyond int32"):
            solvers.solve_batch(graph, {"IntCubic.c": np.asarray([1, 8])},
                                x0=np.asarray([[1], [2**40]]))
        within = solvers.solve_batch(graph, {"IntCubic.c": np.asarray([1, 8, 27])})
        np.testing.assert_allclose(np.asarray(within.x).ravel(), [1.0, 2.0, 3.0], rtol=1e-5)
        # a node's own int64 leaf: gathered into the System's int32 column, wrapped to 0
        with pytest.raises(ValueError, match=r"IntCubic\.c values range over.*beyond int32"):
            solvers.solve(IntCubic(np.asarray(2**40)), solvers.Newton())
        with pytest.raises(ValueError, match=r"IntCubic\.c values range over.*beyond int32"):
            solvers.solve_batch(sg.Bundle(IntCubic(np.asarray(2**40)), IntCubic(np.asarray(1))),
                                {".items[1].c": np.asarray([1, 8])})
        np.testing.assert_allclose(solvers.solve(IntCubic(np.asarray(27))).x, [3.0], rtol=1e-5)
