"""The C column reads (simgraph/_fastwalk.c) give exactly what the Python walk gives."""

from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp
import pytest
from hypothesis import HealthCheck, given, settings

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
