"""The column-at-a-time `analyse` gives what a node-by-node pass over `sg.structure` gives."""

from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simgraph as sg
import solvers
from solvers.lowering import _analyse, _kinds
from test_graph_properties import graphs

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _field_key(shape, refs, span, leaves, keys, where):
    """The node-by-node reference: one field's kind key."""
    if shape == jax.tree_util.tree_structure(0):
        return ("ref",) if refs[0] >= 0 else keys.leaf(leaves[span.start], where)
    if shape == jax.tree_util.tree_structure(None):
        return ("none",)
    data = iter(span)
    return (shape, tuple(("ref",) if r >= 0 else keys.leaf(leaves[next(data)], where) for r in refs))


def reference(st, leaves) -> dict:
    """{kind key: (members, positions, slots)} found node by node, kinds in first-seen order."""
    keys, by_key = _kinds._Keys(), {}
    for g in st.groups:
        for i, k in enumerate(g.nodes):
            fkeys, pos, refs = [], [], []
            for f in g.fields:
                fkeys.append(_field_key(f.shapes[i], f.refs[i], f.leaves[i], leaves, keys, (g.cls, f.name)))
                pos.extend(f.leaves[i])
                refs.extend(r for r in f.refs[i] if r >= 0)
            entry = by_key.setdefault((g.cls, g.statics[i], tuple(fkeys)), ([], [], []))
            for part, value in zip(entry, (k, pos, refs)):
                part.append(value)
    return by_key


def assert_same_analysis(root):
    leaves, treedef = jax.tree_util.tree_flatten(root)
    st = sg.structure(treedef)
    an, positions = _analyse.analyse(st, leaves)
    expected = reference(st, leaves)
    assert [k.key for k in an.kinds] == list(expected)
    for ki, (kind, pos) in enumerate(zip(an.kinds, positions)):
        members, where, slots = expected[kind.key]
        np.testing.assert_array_equal(kind.members, members)
        np.testing.assert_array_equal(pos, np.reshape(where, pos.shape))
        np.testing.assert_array_equal(kind.slots, np.reshape(slots, kind.slots.shape))
        assert kind.slots.shape == (len(members), len(kind.slot_paths))
        assert (an.kind_of[kind.members] == ki).all()
        np.testing.assert_array_equal(an.pos_of[kind.members], np.arange(kind.count))
    assert sorted(np.concatenate([k.members for k in an.kinds]).tolist()) == list(range(st.n_nodes))


@SETTINGS
@given(graphs())
def test_kinds_of_random_graphs_with_sharing_and_containers(g):
    assert_same_analysis(g)


class Cell(sg.ReffableTreeNode):
    value: object
    other: object
    link: Optional[sg.ReffableTreeNode] = None
    unit: object = sg.static(default=None)


class Root(sg.ReffableTreeNode):
    cells: list


class _NoData:
    """A leaf that is no data (a string is refused already where it is assigned)."""


_VALUES = st.sampled_from([1.0, 2, True, None, (1.0, 2.0), [3.0], {"a": 1.0}, _NoData(),
                           np.float32(1.0), np.ones(2), np.ones(3, np.int32), jnp.zeros(())])


@st.composite
def cells(draw):
    """Float-leaf graphs (every child one leaf) and mixtures: references or data in one field,
    containers, None, numpy and jax leaves, static units, leaves that are no data."""
    n = draw(st.integers(1, 12))
    plain = draw(st.booleans())
    nodes = [Cell(1.0, 2.0) for _ in range(n)]
    for cell in nodes:
        for name in ("value", "other"):
            if plain:
                setattr(cell, name, draw(st.sampled_from([1.0, 2.5])))
            else:
                node = draw(st.one_of(st.none(), st.integers(0, n - 1)))
                setattr(cell, name, draw(_VALUES) if node is None else nodes[node])
        cell.link = draw(st.one_of(st.none(), st.sampled_from(nodes)))
        cell.unit = draw(st.sampled_from([None, "V", ("A", 1)]))
    return Root(nodes)


def _outcome(fn):
    try:
        return fn()
    except sg.GraphTypeError as e:
        return e


@SETTINGS
@given(cells())
def test_kinds_of_leaf_graphs_and_mixtures_and_the_first_error(root):
    leaves, treedef = jax.tree_util.tree_flatten(root)
    st_ = sg.structure(treedef)
    expected = _outcome(lambda: reference(st_, leaves))
    if isinstance(expected, Exception):
        with pytest.raises(sg.GraphTypeError) as err:
            _analyse.analyse(st_, leaves)
        assert str(err.value) == str(expected)  # same node class and field, same wording
    else:
        assert_same_analysis(root)


def test_a_built_system_of_many_kinds_matches_the_reference():
    from system_models import resistor_chain

    assert_same_analysis(resistor_chain(7))
    system = solvers.System.build(resistor_chain(7))
    assert system.n == 8 and system.m == 8


class _Keyed(sg.ReffableTreeNode):
    key: jax.Array
    c: jax.Array
    x: jax.Array = sg.unknown(default=0.0)

    def residual(self):
        return self.x - self.c


def test_a_prng_key_leaf_is_refused_with_the_field_and_the_fix():
    graph = sg.Bundle(_Keyed(jnp.zeros(2), 1.0), _Keyed(jax.random.key(0), 1.0))
    with pytest.raises(sg.GraphTypeError, match=r"_Keyed\.key: holds a PRNG key array of "
                       r"dtype key<fry>.*jax\.random\.key_data"):
        solvers.System.build(graph)
    # its numbers are data like any other: the same graph with key_data lowers and solves
    graph.items[1].key = jax.random.key_data(graph.items[1].key)
    assert np.asarray(solvers.solve(graph, throw=True).x).tolist() == [1.0, 1.0]


@pytest.mark.parametrize("wrap", [lambda a: [a], lambda a: {"a": a}, np.ma.masked_array])
@pytest.mark.parametrize("node", [True, False])
def test_a_numpy_object_array_inside_a_container_is_refused_with_the_field(wrap, node):
    # A field set to one directly is refused where it is set; inside a list or a dict (or as
    # an ndarray subclass) it reached JAX, which failed naming solve_core's arguments. One
    # holding nodes is refused by the graph walk (sg.nodes and tree_map too), one without
    # by the lowering.
    table = np.empty(2, dtype=object)
    table[:] = [_Keyed(jnp.zeros(2), 1.0) if node else "b", "a"]
    graph = sg.Bundle(_Keyed(jnp.zeros(2), 1.0), _Keyed(wrap(table), 1.0))
    expect = (r"\.items\[1\]\.key: a numpy array of dtype object holds nodes" if node else
              r"_Keyed\.key: holds a numpy array of dtype object.*plain list")
    with pytest.raises(sg.GraphTypeError, match=expect):
        solvers.solve(graph)


def test_a_static_field_may_hold_an_object_array_message_of_its_own():
    # The object-array refusal is for data fields: a static one keeps its own rule (hashable)
    class Named(sg.ReffableTreeNode):
        names: object = sg.static(default=())

    named = Named(np.asarray(["a", "b"], dtype=object))
    with pytest.raises(sg.GraphTypeError, match="static field 'names' holds an unhashable "
                       "ndarray.*use a tuple"):
        jax.tree_util.tree_flatten(named)
