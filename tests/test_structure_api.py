"""`sg.structure`: a graph's structure as public records, and solvers reading only public API."""

import ast
import pathlib
import random
import sys
import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import simgraph as sg
from graph_models import Mixed, Ring, Shared, make_system
from simgraph import _children
from test_graph_properties import graphs

SOLVERS = pathlib.Path(__file__).resolve().parents[1] / "solvers"


def _records(st):
    """{node id: (class, statics, {field: (kind, refs, leaf positions)})} from the groups."""
    out = {}
    for g in st.groups:
        for i, k in enumerate(g.nodes):
            fields = {f.name: (f.kind, f.refs[i], tuple(f.leaves[i])) for f in g.fields}
            out[k] = (g.cls, dict(zip(g.static_names, g.statics[i])), fields)
    return out


def test_records_name_nodes_references_and_leaf_positions():
    graph = make_system(3, 2)
    assert_records_describe(graph)
    records = _records(sg.structure(graph))
    # equations share providers: equation 0 and 2 reference the same provider id
    eq_ids = [k for k, (cls, _, _) in records.items() if cls.__name__ == "Equation"]
    gradient = [records[k][2]["gradient"][1] for k in eq_ids]
    assert gradient[0] == gradient[2] != gradient[1]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs())
def test_records_of_random_graphs_with_containers_and_sharing(graph):
    assert_records_describe(graph)


def assert_records_describe(graph):
    st = sg.structure(graph)
    leaves = jax.tree_util.tree_leaves(graph)
    nodes = sg.nodes(graph)
    assert st.n_nodes == len(nodes) and st.n_leaves == len(leaves)
    records = _records(st)
    assert sorted(records) == list(range(len(nodes)))
    for k, node in enumerate(nodes):
        cls, statics, fields = records[k]
        assert cls is type(node)
        for name, value in statics.items():
            assert getattr(node, name) == value
        for name, (kind, refs, positions) in fields.items():
            value = getattr(node, name)
            targets = [nodes[r] for r in refs if r >= 0]
            assert targets == [v for v in jax.tree_util.tree_leaves(
                value, is_leaf=lambda v: isinstance(v, sg.ReffableTreeNode)) if isinstance(v, sg.ReffableTreeNode)]
            assert [leaves[p] for p in positions] == [v for v in jax.tree_util.tree_leaves(
                value, is_leaf=lambda v: isinstance(v, sg.ReffableTreeNode)) if not isinstance(v, sg.ReffableTreeNode)]
            assert positions == tuple(range(positions[0], positions[0] + len(positions))) if positions else True


@pytest.mark.parametrize("state", [True, False])
@pytest.mark.parametrize("value", [
    [1.0, 2.0], [1.0, None, {}, (), []], [([0, None], 3.0), {"a": (1, [2])}, None, np.ones(2)],
    [Shared(jnp.asarray(1.0)), 1.0], [None], []])
def test_children_of_the_root_as_children_gives_them(monkeypatch, value, state):
    """The root's children read from the totals or the node table equal ``children()``."""
    monkeypatch.setattr(_children, "_STATE_OK", state)
    treedef = jax.tree_util.tree_structure(tuple(value))
    shapes, starts = _children.read(treedef, len(value))
    expect = treedef.children()
    assert (shapes or [jax.tree_util.tree_structure(0)] * len(value)) == expect
    assert list(starts) == [0] + np.cumsum([c.num_leaves for c in expect], dtype=int).tolist()


def test_field_kinds_and_shapes_of_containers_and_optional_references():
    shared = Shared(jnp.asarray(1.0))
    graph = Mixed(data={"a": jnp.ones(2), "s": shared}, refs=(shared, shared), maybe=None, tag=("t",))
    st = sg.structure(graph)
    root = next(g for g in st.groups if g.cls is Mixed)
    fields = {f.name: f for f in root.fields}
    assert root.static_names == ("tag",) and root.statics == ((("t",),),)
    assert fields["data"].refs[0] == (-1, 1)  # dict leaves in key order: 'a' data, 's' the node
    assert fields["refs"].refs[0] == (1, 1)  # one node referenced twice
    assert fields["maybe"].shapes[0] == jax.tree_util.tree_structure(None)
    assert {f.kind for f in root.fields} == {"state"}


def test_structure_is_keyed_by_the_treedef():
    a, b = make_system(4, 2), make_system(4, 2)
    assert sg.structure(a) is sg.structure(b)  # cached: equal treedefs share one record
    assert sg.structure(jax.tree_util.tree_structure(a)) == sg.structure(a)
    assert hash(sg.structure(a)) == hash(jax.tree_util.tree_structure(b))
    assert sg.structure(make_system(5, 2)) != sg.structure(a)
    ring = Ring(jnp.asarray(1.0), label="x")
    ring.next = ring  # a cycle
    st = sg.structure(ring)
    assert st.n_nodes == 1 and st.groups[0].fields[1].refs == ((0,),)
    with pytest.raises(dataclass_error()):
        st.n_nodes = 2  # frozen records


def test_structure_cache_is_safe_across_threads():
    # A thread's get and move_to_end raced another thread's eviction: KeyError(PyTreeDef).
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, so that the race shows
    treedefs = [jax.tree_util.tree_structure(Ring(1.0, label=str(i))) for i in range(40)]
    errors = []

    def work(seed):
        rng = random.Random(seed)
        try:
            for _ in range(3000):
                sg.structure(treedefs[rng.randrange(len(treedefs))])
        except Exception as e:  # noqa: BLE001 - collected for the assertion
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors


def dataclass_error():
    import dataclasses

    return dataclasses.FrozenInstanceError


def test_structure_needs_a_graph():
    with pytest.raises(TypeError, match="root node of a graph"):
        sg.structure({"a": np.ones(2)})


def _simgraph_imports(path: pathlib.Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("simgraph"):
            found += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("simgraph")]
    return found


def test_solvers_use_only_public_simgraph():
    """solvers reads graphs through `sg.structure`, `sg.fields` and other public names only:
    no private module, no private attribute of node classes (the walk may change freely)."""
    private = []
    for path in sorted(SOLVERS.glob("*.py")):
        private += [f"{path.name}: import {m}" for m in _simgraph_imports(path)
                    if any(part.startswith("_") for part in m.split(".")[1:])]
        text = path.read_text()
        private += [f"{path.name}: {word}" for word in ("__sg_layout__", "__sg_plan__", "__sg_refkinds__",
                                                         "sg._") if word in text]
    assert private == []
