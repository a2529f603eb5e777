"""Node classes shared by the core tests (importable, so save/load finds them)."""

from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp

import simgraph as sg


class GradientProvider(sg.ReffableTreeNode):
    value: jax.Array


class Equation(sg.ReffableTreeNode):
    constant: jax.Array
    gradient: GradientProvider
    x: jax.Array
    name: str = sg.static(default="")

    def error(self):
        return (self.constant - self.gradient.value * self.x) ** 2


class System(sg.ReffableTreeNode):
    equations: list
    providers: list

    def loss(self):
        return sum(eq.error() for eq in self.equations)


class Shared(sg.ReffableTreeNode):
    v: jax.Array


class Child(sg.ReffableTreeNode):
    shared: Shared


class Parent(sg.ReffableTreeNode):
    left: Child
    right: Child


class Ring(sg.ReffableTreeNode):
    value: jax.Array
    next: Optional[Ring] = None
    label: str = sg.static(default="")


class Mixed(sg.ReffableTreeNode):
    """A node whose fields mix data and references in containers."""

    data: dict
    refs: tuple
    maybe: Optional[Shared] = None
    tag: tuple = sg.static(default=())


def make_system(n: int, n_providers: int) -> System:
    providers = [GradientProvider(jnp.asarray(1.0 + k)) for k in range(n_providers)]
    equations = [
        Equation(jnp.asarray(float(i)), providers[i % n_providers], jnp.asarray(0.5), name=f"e{i}")
        for i in range(n)
    ]
    return System(equations, providers)
