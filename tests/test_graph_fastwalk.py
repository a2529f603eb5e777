"""The C column reads (simgraph/_fastwalk.c) give exactly what the Python walk gives."""

from __future__ import annotations

import dataclasses
import re
import sys
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simgraph as sg
from simgraph import _walk
from simgraph._keys import NodeRef
from test_graph_properties import graphs


def flatten_both(root, monkeypatch):
    fast = _walk.traverse(root)
    with monkeypatch.context() as m:
        m.setattr(_walk, "_fastwalk", None)
        slow = _walk.traverse(root)
    return fast, slow


def same_child(x, y) -> bool:
    """Identical, or (containers rebuilt around NodeRef placeholders) equal in structure."""
    if x is y:
        return True
    (lx, tx), (ly, ty) = jax.tree_util.tree_flatten(x), jax.tree_util.tree_flatten(y)
    same = lambda a, b: a is b or (isinstance(a, NodeRef) and a == b)  # noqa: E731
    return tx == ty and all(map(same, lx, ly))


def assert_same(fast, slow):
    (cf, af, nf), (cs, as_, ns) = fast, slow
    assert af == as_
    assert len(cf) == len(cs) and all(map(same_child, cf, cs))
    assert len(nf) == len(ns) and all(x is y for x, y in zip(nf, ns))


def test_accelerator_is_built():
    assert _walk._fastwalk is not None, (
        "simgraph._fastwalk is not built: reinstall with a C compiler (pip install -e .); "
        "the Python walk still works but passing graphs into jit costs more"
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(graphs(max_nodes=14))
def test_random_graphs_flatten_identically(monkeypatch, g):
    assert_same(*flatten_both(g, monkeypatch))


class Leafy(sg.ReffableTreeNode):
    value: object
    other: Optional["Leafy"] = None


class Root(sg.ReffableTreeNode):
    items: list


def test_mixed_and_unusual_columns_flatten_identically(monkeypatch):
    shared = Leafy(jnp.ones(2))
    items = [Leafy(1.0, shared), Leafy(jnp.zeros(()), None), Leafy(shared, shared), Leafy(None),
             Leafy({"a": shared, "b": 2.0}), Leafy([shared, Leafy(3)]), Leafy((1, 2))]
    assert_same(*flatten_both(Root(items), monkeypatch))


def test_tracers_are_leaves_in_both_paths(monkeypatch):
    def f(x):
        root = Root([Leafy(x), Leafy(x * 2)])
        assert_same(*flatten_both(root, monkeypatch))
        return x

    jax.jit(f)(1.0)
    jax.vmap(f)(jnp.ones(3))


def test_errors_are_the_same_in_both_paths(monkeypatch):
    class Needs(sg.ReffableTreeNode):
        target: Leafy

    nodes = [Needs(Leafy(1.0)) for _ in range(3)]
    nodes[2].target = 5.0  # set after construction: only the flatten can catch it
    messages = []
    for fast in (True, False):
        with monkeypatch.context() as m:
            if not fast:
                m.setattr(_walk, "_fastwalk", None)
            with pytest.raises(sg.GraphTypeError, match=r"\.items\[2\]\.target") as err:
                jax.tree_util.tree_leaves(Root(nodes))
            messages.append(str(err.value))
    assert messages[0] == messages[1]


def test_missing_field_named_in_both_paths(monkeypatch):
    nodes = [Leafy(1.0) for _ in range(3)]
    del nodes[1].__dict__["value"]
    for fast in (True, False):
        with monkeypatch.context() as m:
            if not fast:
                m.setattr(_walk, "_fastwalk", None)
            with pytest.raises(sg.GraphError, match=r"\.items\[1\].*'value'"):
                jax.tree_util.tree_leaves(Root(nodes))


class Wide(sg.ReffableTreeNode):
    mixed: object  # nodes in some members, data in others: handled member by member
    data: jax.Array  # uniform, but after a mixed column: must keep its place in the order
    ref: Leafy


def test_uniform_columns_after_a_mixed_one_keep_their_order(monkeypatch):
    shared = Leafy(jnp.ones(2))
    root = Root([Wide(shared if k % 2 else float(k), jnp.full(2, float(k)), Leafy(float(k)))
                 for k in range(5)])
    assert_same(*flatten_both(root, monkeypatch))
    leaves, treedef = jax.tree_util.tree_flatten(root)
    back = jax.tree_util.tree_unflatten(treedef, leaves)
    assert [float(w.data[0]) for w in back.items] == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert [float(w.ref.value) for w in back.items] == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert back.items[1].mixed is back.items[3].mixed and back.items[1].mixed is not shared


def test_consecutive_ids_are_ranges_in_both_paths(monkeypatch):
    """Runs of consecutive ids are ``range`` objects (O(1) for jit's treedef hash and
    equality); other id sequences are tuples; both walks agree."""
    providers = [Leafy(float(k)) for k in range(3)]
    root = Root([Leafy(1.0, providers[k % 3]) for k in range(6)])
    for _, aux, _ in flatten_both(root, monkeypatch):
        root_group, users, targets = aux
        assert root_group[3] == ((_walk.MIXED, ((list, range(1, 7)),)),)
        assert users[1] == range(1, 7) and users[3][1] == (7, 8, 9, 7, 8, 9)
        assert type(users[3][1]) is tuple and targets[1] == range(7, 10)
    assert _walk.id_sequence([4]) == (4,) and _walk.id_sequence([2, 3, 4]) == range(2, 5)
    assert _walk.id_sequence([1, 3, 2, 4]) == (1, 3, 2, 4)
    assert _walk.id_sequence(range(5, 6)) == (5,) and _walk.id_sequence(range(0)) == ()
    assert _walk.id_sequence(range(2, 9)) == range(2, 9)


def test_node_classes_compare_by_identity():
    with pytest.raises(sg.GraphTypeError, match="compare and hash by identity"):
        class ByValue(sg.ReffableTreeNode):  # noqa: F841
            x: float

            def __eq__(self, other):
                return True


def test_a_dataclass_decorator_on_a_node_class_is_named_at_construction():
    # @dataclasses.dataclass adds a value __eq__ (and __hash__ = None) after the class body:
    # the walk raised "unhashable type" from inside.
    @dataclasses.dataclass
    class Decorated(sg.ReffableTreeNode):
        x: float

    with pytest.raises(sg.GraphTypeError, match="remove a @dataclasses.dataclass decorator"):
        Decorated(1.0)


class Leaf(sg.ReffableTreeNode):
    value: jax.Array


class Holder(sg.ReffableTreeNode):
    parts: dict


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=6), min_size=1, max_size=12, unique=True))
def test_string_keyed_dicts_order_their_nodes_as_jax_does(st_keys):
    """The fast path for dicts of nodes with string keys (Python's sort, a cached treedef)
    gives JAX's own order and treedef, whatever the insertion order."""
    leaves = {k: Leaf(jnp.asarray(float(i))) for i, k in enumerate(st_keys)}
    root = Holder(leaves)
    children, aux, nodes = _walk.traverse(root)
    order, treedef = jax.tree_util.tree_flatten(dict(zip(leaves, range(len(leaves)))))
    (_, _, _, (spec,)) = aux[0]  # the root alone: a column of one ("mixed", (its spec,))
    assert spec == (_walk.MIXED, ((treedef, _walk.id_sequence(range(1, len(leaves) + 1))),))
    assert nodes[1:] == [list(leaves.values())[i] for i in order]
    back = jax.tree_util.tree_unflatten(*reversed(jax.tree_util.tree_flatten(root)))
    assert sorted(back.parts) == sorted(leaves)
    assert [float(back.parts[k].value) for k in st_keys] == [float(i) for i in range(len(st_keys))]


def unflatten_both(root, monkeypatch):
    leaves, treedef = jax.tree_util.tree_flatten(root)
    fast = jax.tree_util.tree_unflatten(treedef, leaves)
    with monkeypatch.context() as m:
        m.setattr(_walk, "_fastwalk", None)
        slow = jax.tree_util.tree_unflatten(treedef, leaves)
    return fast, slow


def assert_same_graph(fast, slow, monkeypatch):
    """Equal structure, the same leaf objects, fields in the same order, node for node."""
    (cf, af, nf), (cs, as_, ns) = flatten_both(fast, monkeypatch)[1], flatten_both(slow, monkeypatch)[1]
    assert af == as_ and len(nf) == len(ns)
    assert len(cf) == len(cs) and all(map(same_child, cf, cs))
    assert [list(vars(x)) for x in nf] == [list(vars(y)) for y in ns]
    assert not set(map(id, nf)) & set(map(id, ns))  # two new graphs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(graphs(max_nodes=14))
def test_random_graphs_unflatten_identically(monkeypatch, g):
    fast, slow = unflatten_both(g, monkeypatch)
    assert_same_graph(fast, slow, monkeypatch)
    assert_same(*flatten_both(fast, monkeypatch))


class Keyed(sg.ReffableTreeNode):
    by_name: dict
    by_number: dict
    empty: dict
    data: dict
    label: str = sg.static(default="k")


class _Key(str):
    """A str subclass: not a plain string key, so ordered the general way."""


def test_dicts_of_nodes_flatten_and_unflatten_identically(monkeypatch):
    shared = Leafy(jnp.ones(2))
    names = {"b": Leafy(1.0), "a": shared, "c10": Leafy(2.0), "c9": shared}
    for by_number in ({3: Leafy(3.0), 1: shared}, {_Key("z"): shared, _Key("y"): Leafy(4.0)}):
        root = Keyed(names, by_number, {}, {"x": shared, "w": 5.0}, label="k2")
        fast, slow = flatten_both(root, monkeypatch)
        assert_same(fast, slow)
        assert_same_graph(*unflatten_both(root, monkeypatch), monkeypatch)
        again = jax.tree_util.tree_map(lambda x: x, root)
        assert again.by_name["a"] is again.by_name["c9"] is again.data["x"]
        assert list(again.by_name) == sorted(names) and again.label == "k2"


needs_c = pytest.mark.skipif(_walk._fastwalk is None, reason="simgraph._fastwalk is not built")


@needs_c
def test_malformed_aux_is_an_error_not_a_crash():
    leaves, treedef = jax.tree_util.tree_flatten(Root([Leafy(1.0), Leafy(2.0)]))
    aux = treedef.node_data()[1]
    bad_ids = tuple((cls, (7,) if i else members, statics, specs)
                    for i, (cls, members, statics, specs) in enumerate(aux))
    with pytest.raises(ValueError, match="not in this structure"):
        _walk._fastwalk.unflatten(bad_ids, leaves, 3, None)
    with pytest.raises(ValueError, match="too few children"):
        _walk._fastwalk.unflatten(aux, leaves[:1], 3, None)
    for cls, message in [(int, "not safe"), ("Leafy", "not a type")]:  # as object.__new__
        bad_class = ((cls,) + aux[0][1:],) + aux[1:]
        with pytest.raises(TypeError, match=message):
            _walk._fastwalk.unflatten(bad_class, leaves, 3, None)


def test_a_large_rebuild_runs_without_garbage_collections():
    # Thousands of new objects triggered a cyclic collection every 700 allocations (a
    # 2000-node ladder's unflatten: most of its time): now one, deferred to the end.
    import gc

    from graph_models import make_system

    big = make_system(3000, 7)
    leaves, treedef = jax.tree_util.tree_flatten(big)
    collections = []
    gc.collect()
    gc.callbacks.append(lambda phase, info: collections.append(phase))
    try:
        rebuilt = jax.tree_util.tree_unflatten(treedef, leaves)
    finally:
        gc.callbacks.pop()
    assert collections.count("start") <= 1 and gc.isenabled()
    assert rebuilt.equations[7].gradient is rebuilt.providers[0]
    gc.disable()  # a caller's own pause is left as it was
    try:
        jax.tree_util.tree_unflatten(treedef, leaves)
        assert not gc.isenabled()
    finally:
        gc.enable()


# The whole walk in C (_fastwalk.traverse, simgraph/_fasttraverse.c) against the Python walk:
# random graphs whose fields hold every kind of value the walk reads (leaves, None, nodes,
# lists/tuples/dicts of nodes, containers mixing nodes and data, other containers), so columns
# are uniform in some levels and mixed in others, levels hold one node or several classes, and
# (in the second test) one node holds a value the walk refuses.

class PNode(sg.ReffableTreeNode):
    a: object
    b: object
    ref: Optional[sg.ReffableTreeNode]
    tag: object = sg.static(default=None)


class QNode(sg.ReffableTreeNode):
    a: object
    b: object
    ref: Optional[sg.ReffableTreeNode]
    tag: object = sg.static(default=None)


class RNode(sg.ReffableTreeNode):
    target: sg.ReffableTreeNode
    a: object


class _Name(str):
    """A str subclass as a dict key: ordered the general way, not the str fast path."""


_ARRAY = jnp.arange(3.0)


def _value(kind: int, picks: list, nodes: list):
    """A field value of the given kind, referencing the nodes at positions `picks`."""
    refs = [nodes[k] for k in picks]
    return [
        lambda: 1.5, lambda: _ARRAY, lambda: None, lambda: refs[0], lambda: refs,
        lambda: tuple(refs), lambda: {f"k{k}": r for k, r in zip(picks, refs)},
        lambda: {k % 3 - 10 * i: r for i, (k, r) in enumerate(zip(picks, refs))},
        lambda: {}, lambda: {"w": 2.0, "n": refs[0]}, lambda: [refs[0], 3.0], lambda: (1.0, 2.0),
        lambda: {(1, "a"): refs[0], (0, "b"): refs[-1]}, lambda: [], lambda: np.float64(4.0),
        lambda: 7, lambda: {"w": 1.0}, lambda: {_Name(f"z{k}"): r for k, r in zip(picks, refs)},
    ][kind]()


N_KINDS = 18
KINDS = st.integers(0, N_KINDS - 1) | st.sampled_from([0, 3])  # leaves and nodes more often


@st.composite
def mixed_graphs(draw, max_nodes=12):
    """Nodes; the first is the root: with `wide`, a Root listing all others (wide levels of
    several classes), else a node of the graph (levels of one node are common)."""
    n = draw(st.integers(1, max_nodes))
    classes = [draw(st.sampled_from([PNode, QNode, RNode])) for _ in range(n)]
    nodes = [cls.__new__(cls) for cls in classes]
    pick = st.lists(st.integers(0, n - 1), min_size=1, max_size=3)
    for node, cls in zip(nodes, classes):
        fields = {"a": _value(draw(KINDS), draw(pick), nodes)}
        if cls is RNode:
            fields["target"] = nodes[draw(st.integers(0, n - 1))]
        else:
            fields["b"] = _value(draw(KINDS), draw(pick), nodes)
            ref = draw(st.one_of(st.none(), st.integers(0, n - 1)))
            fields["ref"] = None if ref is None else nodes[ref]
            fields["tag"] = draw(st.sampled_from([None, "a", ("b", 1), 2.5]))
        node.__dict__.update({f.name: fields[f.name] for f in sg.fields(cls)})  # in order
    return [Root(nodes)] + nodes if draw(st.booleans()) else nodes


def _outcome(root, fast: bool, monkeypatch):
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(_walk, "_fastwalk", None)
        try:
            return _walk.traverse(root)
        except Exception as e:  # noqa: BLE001 - compared below
            return type(e), str(e)


def _c_walk(root):
    """The C walk itself, with no fallback to the Python walk."""
    return _walk._fastwalk.traverse(root, _walk._node_base(), _walk._LEAF_TYPES,
                                    _walk._ARRAY_TYPES, _walk._HELPERS)


@needs_c
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mixed_graphs())
def test_random_mixed_graphs_flatten_identically_in_c(monkeypatch, nodes):
    root = nodes[0]
    slow = _outcome(root, False, monkeypatch)
    assert_same(_c_walk(root), slow)  # no fallback taken
    assert_same(_walk.traverse(root), slow)
    assert_same(_walk._traverse(root), slow)  # the column reads in C, the driver in Python
    assert_same_graph(*unflatten_both(root, monkeypatch), monkeypatch)


def _break(node, how: int, other):
    """Make `node` hold something the walk refuses (set behind the constructor's checks)."""
    d = node.__dict__
    if how == 0:
        d["a"] = {"a": other, 0: other}  # keys that cannot be sorted
    elif how == 1:
        d["a"] = {other: 1.0}  # a node as a key
    elif how == 2:
        del d["a"]  # a missing field
    elif type(node) is RNode:
        d["target"] = 5.0 if how == 3 else None  # not a node in a reference field
    elif how == 3:
        d["ref"] = 2.0  # not a node or None in an optional reference field
    elif how == 4:
        d["tag"] = [1, 2]  # an unhashable static
    else:
        del d["tag"]  # a missing static


@needs_c
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mixed_graphs(), st.data())
def test_random_refused_graphs_raise_identically(monkeypatch, nodes, data):
    root = nodes[0]
    reachable = _walk.traverse(root)[2]
    broken = data.draw(st.sampled_from([node for node in reachable if type(node) is not Root]))
    _break(broken, data.draw(st.integers(0, 5)), data.draw(st.sampled_from(reachable)))
    fast, slow = _outcome(root, True, monkeypatch), _outcome(root, False, monkeypatch)
    if isinstance(slow, tuple) and isinstance(slow[0], type):
        assert fast == slow
        assert slow[0] in (sg.GraphError, sg.GraphTypeError), slow
    else:  # a value the walk reads as data after all (e.g. a dict holding no node)
        assert_same(fast, slow)
        assert_same(_c_walk(root), slow)


@needs_c
def test_single_node_levels_and_classes_in_order_of_first_appearance(monkeypatch):
    chain = PNode(1.0, None, None)
    for k in range(4):  # levels of one node each
        chain = QNode(float(k), {"x": 1.0}, chain) if k % 2 else PNode([chain], (), None, tag=k)
    mixed = [QNode(1.0, 2.0, None), PNode(1.0, None, None), RNode(chain, 1.0),
             QNode(_ARRAY, {}, chain), PNode({3: chain, 1: chain}, 1.0, None)]
    root = Root(mixed)
    slow = _outcome(root, False, monkeypatch)
    assert_same(_c_walk(root), slow)
    assert [g[0] for g in slow[1][1:4]] == [QNode, PNode, RNode]
    assert slow[1][1][1] == (1, 4) and slow[1][2][1] == (2, 5)  # members: tuples, not ranges


# Object arrays inside containers (_outside.hiding): where the accelerator is built, one C pass
# (_fastwalk.any_object_array) passes over the numeric arrays beside them; the Python walk reads
# each array's dtype.hasobject. Both refuse the same containers.

class _Flagged(np.ndarray):
    """An ndarray subclass: the C pass reads its dtype by getattr, not ndarray's own getter."""


def _object_array(*items):
    table = np.empty(len(items), dtype=object)
    table[:] = items
    return table


@needs_c
def test_object_arrays_are_found_in_c_as_in_python():
    numeric = [np.zeros(2), np.arange(3), np.zeros(2, ">f8"), np.array(["a"]), np.float64(1.0)]
    hiding = [_object_array(1.0, "a"), np.zeros(1, [("a", "O"), ("b", "f8")]),
              _object_array(1.0).view(_Flagged), np.ma.masked_array(_object_array(2.0))]
    others = [1.0, None, Leafy(1.0), jnp.zeros(2), np.zeros(2).view(_Flagged),
              np.ma.masked_array([1.0])]
    for leaves in [[], others, numeric + others, *([x] + numeric for x in hiding),
                   *(numeric + others + [x] for x in hiding)]:
        expect = any(isinstance(x, np.ndarray) and x.dtype.hasobject for x in leaves)
        assert _walk._fastwalk.any_object_array(leaves, np.ndarray) is expect


@needs_c
def test_the_c_pass_over_arrays_passes_errors_on_and_keeps_no_reference():
    class NoDtype(np.ndarray):
        @property
        def dtype(self):
            raise RuntimeError("no dtype here")

    arrays = [np.zeros(2), np.zeros(3).view(NoDtype), _object_array(1.0)]
    f8, obj = arrays[0].dtype, arrays[2].dtype
    counts = lambda: [sys.getrefcount(x) for x in (*arrays, f8, obj)]  # noqa: E731
    before = counts()
    for _ in range(100):
        with pytest.raises(RuntimeError, match="no dtype here"):
            _walk._fastwalk.any_object_array(arrays, np.ndarray)
        assert _walk._fastwalk.any_object_array(arrays[::2], np.ndarray) is True
        assert _walk._fastwalk.any_object_array(arrays[:1] * 3, np.ndarray) is False
    assert counts() == before


@pytest.mark.parametrize("make", [
    lambda t: [np.zeros(2), t], lambda t: [Leafy(1.0), np.zeros(2), t],
    lambda t: {"rows": (np.zeros(2), Leafy(2.0), t)}, lambda t: [np.zeros(2), t.view(_Flagged)],
    lambda t: [Leafy(1.0), np.ma.masked_array(t)]])
def test_object_arrays_beside_numeric_arrays_and_nodes_are_refused_in_both_paths(monkeypatch, make):
    root = Root([Leafy(make(_object_array(Leafy(3.0), Leafy(4.0))))])
    fast, slow = _outcome(root, True, monkeypatch), _outcome(root, False, monkeypatch)
    assert fast == slow and slow[0] is sg.GraphTypeError
    assert re.search(r"\.items\[0\]\.value: a numpy array of dtype object holds nodes", slow[1])
    data = Root([Leafy(make(_object_array(1.0, "a")))])  # no nodes: data to the walk, as before
    assert_same(*flatten_both(data, monkeypatch))
