"""Per-call cost of passing a graph into an already-compiled ``jax.jit`` function.

N equations (3 small arrays each) share N/10 gradient providers. Baselines, timed in
alternating batches in the same run: a flat dict-of-arrays with the same leaves (``plain``),
and the same data as nested dicts, one per equation and provider (``nested``, what a user
would write without simgraph). ``python_walk`` is the graph with the C column reads switched
off. Peer: Flax NNX's ``nnx.jit`` on the same object graph (skipped with a note when flax is
not installed).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

import simgraph as sg

from ._timing import interleaved_medians, median_time


class Provider(sg.ReffableTreeNode):
    value: jax.Array


class Equation(sg.ReffableTreeNode):
    constant: jax.Array
    gradient: Provider
    x: jax.Array
    weight: jax.Array


class Model(sg.ReffableTreeNode):
    equations: list


def make_graph(n: int) -> Model:
    providers = [Provider(jnp.ones(2) * k) for k in range(max(1, n // 10))]
    return Model([
        Equation(jnp.ones(2) * i, providers[i % len(providers)], jnp.zeros(2), jnp.ones(2))
        for i in range(n)
    ])


def as_dict(model: Model) -> dict:
    """The same leaves as a plain pytree (what a user would otherwise pass)."""
    return {k: v for k, v in zip(range(10**9), jax.tree_util.tree_leaves(model))}


def first_leaf(tree):
    return jax.tree_util.tree_leaves(tree)[0]


def _nnx_case(n: int):
    try:
        from flax import nnx
    except ImportError:
        return None

    class NProvider(nnx.Module):
        def __init__(self, k):
            self.value = nnx.Param(jnp.ones(2) * k)

    class NEquation(nnx.Module):
        def __init__(self, i, provider):
            self.constant = nnx.Param(jnp.ones(2) * i)
            self.gradient = provider
            self.x = nnx.Param(jnp.zeros(2))
            self.weight = nnx.Param(jnp.ones(2))

    class NModel(nnx.Module):
        def __init__(self):
            providers = [NProvider(k) for k in range(max(1, n // 10))]
            self.equations = nnx.List([NEquation(i, providers[i % len(providers)]) for i in range(n)]) \
                if hasattr(nnx, "List") else [NEquation(i, providers[i % len(providers)]) for i in range(n)]

    model = NModel()
    f = nnx.jit(lambda m: m.equations[0].constant.value)
    return lambda: jax.block_until_ready(f(model))


def as_nested(model: Model) -> dict:
    """The same data as a user would write it without simgraph: a dict per equation and per
    provider (shared providers appear once, referenced by index)."""
    providers = list({id(e.gradient): e.gradient for e in model.equations}.values())
    slot = {id(p): k for k, p in enumerate(providers)}
    return {
        "equations": [{"constant": e.constant, "x": e.x, "weight": e.weight,
                       "gradient": slot[id(e.gradient)]} for e in model.equations],
        "providers": [{"value": p.value} for p in providers],
    }


def _python_walk(call):
    """``call`` with the C column reads switched off (the pure-Python fallback walk)."""
    from simgraph import _walk

    def run():
        saved, _walk._fastwalk = _walk._fastwalk, None
        try:
            return call()
        finally:
            _walk._fastwalk = saved

    return run


def run(sizes=(10, 100, 1000, 10_000), repeats: int = 7) -> list[dict]:
    rows = []
    f = jax.jit(first_leaf)
    for n in sizes:
        graph = make_graph(n)
        plain, nested = as_dict(graph), as_nested(graph)
        graph_call = lambda: jax.block_until_ready(f(graph))  # noqa: E731
        t = interleaved_medians({
            "plain": lambda: jax.block_until_ready(f(plain)),
            "nested": lambda: jax.block_until_ready(f(nested)),
            "graph": graph_call,
            "python_walk": _python_walk(graph_call),
        }, repeats=repeats)
        nnx_call = _nnx_case(n)
        t_nnx = median_time(nnx_call, repeats=max(3, repeats // 2)) if nnx_call else None
        rows.append({
            "N": n, "leaves": len(jax.tree_util.tree_leaves(plain)),
            "plain_us": t["plain"] * 1e6, "graph_us": t["graph"] * 1e6,
            "graph_vs_plain": t["graph"] / t["plain"],
            "graph_vs_nested": t["graph"] / t["nested"],
            "python_walk_vs_plain": t["python_walk"] / t["plain"],
            "nnx_us": None if t_nnx is None else t_nnx * 1e6,
            "nnx_vs_graph": None if t_nnx is None else t_nnx / t["graph"],
        })
    return rows


if __name__ == "__main__":
    for row in run():
        print(row)
