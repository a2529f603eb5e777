"""split/merge, stack/unstack, update, save/load, and the errors for bad input."""

import re

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import simgraph as sg
from simgraph import _io as sg_io
from graph_models import Equation, GradientProvider, Mixed, Ring, Shared, make_system


def test_split_merge_by_type_field_and_callable():
    system = make_system(4, 2)
    state, structure = sg.split(system, GradientProvider)
    assert sorted(state) == [".providers[0].value", ".providers[1].value"]
    state = {k: v * 10.0 for k, v in state.items()}
    merged = sg.merge(structure, state)
    assert merged.equations[1].gradient is merged.providers[1]
    np.testing.assert_allclose(merged.equations[1].gradient.value, 20.0)

    state, _ = sg.split(system, "constant")
    assert len(state) == 4 and all(k.endswith(".constant") for k in state)
    state, _ = sg.split(system, "Equation.x")
    assert len(state) == 4
    state, _ = sg.split(system, lambda info: info.path.startswith(".equations[0]"))
    assert sorted(state) == [".equations[0].constant", ".equations[0].x"]


def test_split_state_works_with_grad_and_jit():
    system = make_system(3, 1)
    state, structure = sg.split(system, "value")
    g = jax.jit(jax.grad(lambda st: sg.merge(structure, st).loss()))(state)
    assert list(g) == [".providers[0].value"]


def test_merge_rejects_a_foreign_state():
    _, structure = sg.split(make_system(3, 1), "value")
    with pytest.raises(sg.GraphError, match="missing"):
        sg.merge(structure, {".nope": 1.0})


def test_unknown_fields_filter():
    class Node(sg.ReffableTreeNode):
        v: jax.Array = sg.unknown(default=0.0)
        load: jax.Array = 1.0

    state, _ = sg.split(sg.Bundle(Node(), Node()), sg.is_unknown)
    assert sorted(state) == [".items[0].v", ".items[1].v"]
    assert [i.kind for i in sg.fields(Node)] == ["unknown", "state"]


def test_stack_unstack_roundtrip_keeps_sharing():
    graphs = [make_system(3, 2) for _ in range(4)]
    for k, g in enumerate(graphs):
        g.providers[0].value = jnp.asarray(float(k))
    batched = sg.stack(graphs)
    assert batched.equations[2].gradient is batched.providers[0]
    assert jnp.shape(batched.providers[0].value) == (4,)
    back = sg.unstack(batched)
    assert len(back) == 4 and back[3].equations[0].gradient is back[3].providers[0]
    np.testing.assert_allclose(back[3].providers[0].value, 3.0)
    # a Python float stacks with a float array (it was refused: 'float' vs 'float64')
    graphs[0].providers[0].value = 5.0
    np.testing.assert_allclose(sg.stack(graphs).providers[0].value, [5.0, 1.0, 2.0, 3.0])


def test_unstack_stack_update_refuse_what_they_cannot_split_by_key_path():
    # These raised IndexError (no batch axis) or KeyError '__sg_plan__' (not a node).
    batched = sg.stack([make_system(3, 2), make_system(3, 2)])
    with pytest.raises(sg.StructureMismatchError, match=r"\.equations\[0\]\.constant "
                       r"\(shape \(2,\)\) has no axis 5\."):
        sg.unstack(batched, axis=5)
    batched.providers[1].value = jnp.ones(3)
    with pytest.raises(sg.StructureMismatchError, match=r"\.providers\[1\]\.value \(shape "
                       r"\(3,\)\) has size 3 on axis 0, where \.equations\[0\]\.constant has 2"):
        sg.unstack(batched)
    with pytest.raises(sg.StructureMismatchError, match=r"\(shape \(\)\) has no axis 0"):
        sg.unstack(make_system(3, 2))  # not batched
    for call in (lambda: sg.unstack([1, 2]), lambda: sg.stack([1.0, 2.0]),
                 lambda: sg.update(1.0, 2.0), lambda: sg.update(make_system(3, 2), [1.0])):
        with pytest.raises(sg.GraphTypeError, match="ReffableTreeNode.*sg.Bundle"):
            call()


def test_read_helpers_refuse_a_root_that_is_not_a_node():
    # nodes/split/leaves_with_owners/structure_difference raised KeyError '__sg_plan__' (or
    # "unhashable type: 'list'"), merge an AttributeError, stack(node) "not iterable".
    g = make_system(3, 2)
    for call in (lambda: sg.nodes(3.0), lambda: sg.split([g]), lambda: sg.leaves_with_owners([g]),
                 lambda: sg.structure_difference(g, 3.0), lambda: sg.structure_difference(1, g)):
        with pytest.raises(sg.GraphTypeError, match="ReffableTreeNode.*sg.Bundle"):
            call()
    state, structure = sg.split(g)
    with pytest.raises(sg.GraphTypeError, match=r"merge\(structure, state\); got \(dict, Graph"):
        sg.merge(state, structure)  # arguments swapped
    with pytest.raises(sg.GraphTypeError, match=r"sg.stack\(\[graph_a"):
        sg.stack(g)
    with pytest.raises(sg.GraphTypeError, match="not a simgraph.ReffableTreeNode subclass"):
        sg.fields(int)
    with pytest.raises(sg.GraphTypeError, match="sg.structure needs the root node"):
        sg.structure([g])


def test_a_difference_in_containers_of_references_shows_the_containers():
    # Both sides read "a container of references [1, 2]": the keys or type that differ were
    # not shown.
    def holder(container):
        return Mixed(container, ())

    a, b = GradientProvider(jnp.asarray(1.0)), GradientProvider(jnp.asarray(2.0))
    c, d = GradientProvider(jnp.asarray(1.0)), GradientProvider(jnp.asarray(2.0))
    with pytest.raises(sg.StructureMismatchError, match=re.escape(
            "references {'a': <node #1>, 'b': <node #2>} vs references {'a': <node #1>, 'c': <node #2>}")):
        sg.stack([holder({"a": a, "b": b}), holder({"a": c, "c": d})])
    assert sg.structure_difference(holder([a, b]), holder((c, d))).endswith(
        "references [<node #1>, <node #2>] vs references (<node #1>, <node #2>)")


def test_stack_names_the_leaf_an_axis_does_not_fit():
    # A scalar leaf and axis=1 raised numpy's "axis 1 is out of bounds for array of dimension
    # 1", naming no leaf.
    graphs = [make_system(3, 2), make_system(3, 2)]
    with pytest.raises(sg.GraphError, match=r"axis 1: \.equations\[0\]\.constant \(shape \(\)\) has 1 "):
        sg.stack(graphs, axis=1)
    assert sg.stack(graphs, axis=-1).equations[0].constant.shape == (2,)


def test_stack_says_where_structures_differ():
    a, b = make_system(3, 2), make_system(3, 2)
    b.equations[1].gradient = b.providers[0]  # different sharing pattern
    with pytest.raises(sg.StructureMismatchError, match=r"graphs\[1\].*\.equations\[1\]\.gradient"):
        sg.stack([a, b])
    c = make_system(3, 2)
    c.equations[2].name = "other"
    with pytest.raises(sg.StructureMismatchError, match=r"\.equations\[2\]\.name: static value differs"):
        sg.stack([a, c])
    d = make_system(3, 2)
    d.equations[0].x = jnp.zeros(2)
    with pytest.raises(sg.StructureMismatchError, match=r"\.equations\[0\]\.x"):
        sg.stack([a, d])


def test_update_in_place_keeps_identity():
    system = make_system(3, 2)
    eq0, prov0 = system.equations[0], system.providers[0]
    out = jax.jit(lambda s: jax.tree_util.tree_map(lambda x: x + 1.0, s))(system)
    assert sg.update(system, out) is system
    assert system.equations[0] is eq0 and eq0.gradient is prov0
    np.testing.assert_allclose(prov0.value, 2.0)


def test_update_rejects_other_structure_and_leaves_graph_untouched():
    system, other = make_system(3, 2), make_system(4, 2)
    before = float(system.providers[0].value)
    with pytest.raises(sg.StructureMismatchError):
        sg.update(system, other)
    assert float(system.providers[0].value) == before


def test_update_refuses_a_batched_copy_and_leaves_graph_untouched():
    system = make_system(3, 2)
    batched = sg.stack([system, system])  # what vmap or solve_batch's .system hold
    with pytest.raises(sg.StructureMismatchError, match=r"\.equations\[0\]\.constant has shape "
                       r"\(\) but the transformed graph holds shape \(2,\)"):
        sg.update(system, batched)
    assert all(jnp.shape(leaf) == () for leaf in jax.tree_util.tree_leaves(system))
    assert sg.update(system, sg.unstack(batched)[1]) is system  # one member goes in


def test_update_mixed_container_references_point_to_live_nodes():
    s1 = Shared(jnp.asarray(1.0))
    m = Mixed({"w": jnp.ones(2), "ref": s1}, (s1,))
    out = jax.tree_util.tree_map(lambda x: x * 3.0, m)
    sg.update(m, out)
    assert m.data["ref"] is s1 and m.refs[0] is s1
    np.testing.assert_allclose(m.data["w"], 3.0)
    np.testing.assert_allclose(s1.v, 3.0)


def test_save_load_roundtrip(tmp_path):
    a, b = Ring(jnp.asarray(1.0, dtype=jnp.float32), label="a"), Ring(np.arange(3, dtype=np.int16), label="b")
    a.next, b.next = b, a
    s = Shared(jnp.asarray(2.0))
    m = Mixed({"w": np.ones((2, 2)), "ref": s, "py": 3, "none": None}, (s, a), maybe=s, tag=("t", 1, 2.5))
    sg.save(tmp_path / "g.npz", m)
    r = sg.load(tmp_path / "g.npz")
    assert r.refs[1].next.next is r.refs[1] and r.refs[1].label == "a"
    assert r.data["ref"] is r.refs[0] is r.maybe and r.tag == ("t", 1, 2.5)
    assert r.refs[1].value.dtype == np.float32 and r.refs[1].next.value.dtype == np.int16
    assert r.data["py"] == 3 and isinstance(r.data["py"], int) and r.data["none"] is None
    assert jax.tree_util.tree_structure(r) == jax.tree_util.tree_structure(m)


def test_load_finds_each_array_without_scanning_the_archive(tmp_path, monkeypatch):
    # Each array was looked up in the archive's list of names: loading 48000 arrays took 12 s
    # (4.5 s now), growing with the square of their number.
    class Names(list):
        scans = 0

        def __contains__(self, name):
            Names.scans += 1
            return super().__contains__(name)

    read = sg_io._read

    def read_counting(path):
        meta, data = read(path)
        data.files = Names(data.files)
        return meta, data

    monkeypatch.setattr(sg_io, "_read", read_counting)
    sg.save(tmp_path / "g.npz", make_system(40, 4))
    loaded = sg.load(tmp_path / "g.npz")
    assert Names.scans == 0 and len(jax.tree_util.tree_leaves(loaded)) == 2 * 40 + 4


def test_save_load_keeps_an_ordered_dict_and_refuses_other_dict_types(tmp_path):
    import collections

    s = Shared(jnp.asarray(2.0))
    ordered = collections.OrderedDict([("z", np.ones(2)), ("a", s)])
    m = Mixed(ordered, (s,))
    sg.save(tmp_path / "g.npz", m)
    r = sg.load(tmp_path / "g.npz")
    assert type(r.data) is collections.OrderedDict and list(r.data) == ["z", "a"]
    assert r.data["a"] is r.refs[0]
    assert jax.tree_util.tree_structure(r) == jax.tree_util.tree_structure(m)  # was a dict
    m.data = collections.defaultdict(list, z=np.ones(2))
    with pytest.raises(sg.GraphFileError, match=r"\.data: cannot save a defaultdict \(convert "
                       r"it to a plain dict\)"):
        sg.save(tmp_path / "d.npz", m)


_ML_DTYPES = ["bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "int4", "uint4"]


@pytest.mark.parametrize("name", [n for n in _ML_DTYPES if hasattr(ml_dtypes, n)])
def test_save_load_roundtrip_ml_dtypes(tmp_path, name):
    # .npy has no code for ml_dtypes types: without their names they came back as raw '|V2'
    dtype = np.dtype(getattr(ml_dtypes, name))
    values = np.arange(-2, 4).astype(dtype).reshape(2, 3)
    s = Shared(jnp.asarray(values))
    m = Mixed({"w": values[::2], "s": values[1, 2], "f": np.ones(2)}, (s,), maybe=s)
    sg.save(tmp_path / "g.npz", m)
    r = sg.load(tmp_path / "g.npz")
    assert r.maybe is r.refs[0] and r.maybe.v.dtype == dtype and r.data["w"].dtype == dtype
    assert type(r.data["s"]) is dtype.type and r.data["s"] == values[1, 2]
    np.testing.assert_array_equal(r.maybe.v.astype(float), values.astype(float))
    np.testing.assert_array_equal(r.data["w"].astype(float), values[::2].astype(float))
    assert r.data["f"].dtype == np.float64  # other arrays are stored as before


def test_load_errors(tmp_path):
    system = make_system(2, 1)
    path = tmp_path / "g.npz"
    sg.save(path, system)
    raw = path.read_bytes()
    (tmp_path / "trunc.npz").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(sg.GraphFileError, match="truncated"):
        sg.load(tmp_path / "trunc.npz")
    np.savez(tmp_path / "plain.npz", a=np.ones(2))
    with pytest.raises(sg.GraphFileError, match="no simgraph description"):
        sg.load(tmp_path / "plain.npz")

    import json
    data = dict(np.load(path))
    meta = json.loads(bytes(data["__simgraph__"]).decode())
    meta["version"] = 99
    data["__simgraph__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez(tmp_path / "v99.npz", **data)
    with pytest.raises(sg.GraphFileError, match="version 99"):
        sg.load(tmp_path / "v99.npz")

    class Equation(sg.ReffableTreeNode):  # same name, other fields
        constant: jax.Array

    with pytest.raises(sg.GraphFileError, match="fields"):
        sg.load(path, classes={"Equation": Equation})


def test_save_rejects_unsupported_values(tmp_path):
    m = Mixed({"bad": {1, 2}}, ())
    with pytest.raises(sg.GraphFileError, match=r"\.data\['bad'\]"):
        sg.save(tmp_path / "x.npz", m)


def test_bad_input_errors_name_the_path():
    p = GradientProvider(jnp.asarray(1.0))
    with pytest.raises(sg.GraphTypeError, match="Equation.gradient is a reference field"):
        Equation(1.0, 2.0, 0.0)
    eq = Equation(1.0, p, 0.0)
    eq.gradient = 3.0  # made invalid after construction
    bundle = sg.Bundle(Equation(1.0, p, 0.0), eq)
    with pytest.raises(sg.GraphTypeError, match=r"\.items\[1\]\.gradient"):
        jax.jit(lambda b: b)(bundle)
    assert eq.gradient == 3.0  # untouched
    with pytest.raises(sg.GraphTypeError, match="sg.static"):
        Equation(1.0, p, "not traced")


def test_unhashable_static_names_path():
    system = make_system(3, 1)
    system.equations[2].name = {"a": 1}
    with pytest.raises(sg.GraphTypeError, match=r"\.equations\[2\]\.name.*unhashable dict"):
        jax.jit(lambda s: s)(system)


def test_missing_field_value():
    eq = object.__new__(Equation)
    with pytest.raises(sg.GraphError, match="no value for field 'constant'"):
        jax.tree_util.tree_flatten(eq)
