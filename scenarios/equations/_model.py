"""The founding example as element classes: linear equations ``m * x = c`` sharing slopes.

Many equations reference one ``GradientProvider``: changing (or differentiating with respect
to) the provider's ``value`` changes every equation that shares it, because the reference is
shared in the graph, not copied. Names live on the root (a static tuple) rather than on each
equation, so that all equations stay one kind and are evaluated together with ``vmap``.
"""
from __future__ import annotations

import jax

import simgraph as sg

__all__ = ["GradientProvider", "Equation", "EquationSet"]


class GradientProvider(sg.ReffableTreeNode):
    """A slope ``value`` (the ``m`` of ``m * x = c``) that many equations may share."""

    value: jax.Array


class Equation(sg.ReffableTreeNode):
    """``gradient.value * x - constant = 0``: one unknown ``x``, one equation."""

    constant: jax.Array
    gradient: GradientProvider
    x: jax.Array = sg.unknown(default=0.0)

    def residual(self):
        return self.gradient.value * self.x - self.constant


class EquationSet(sg.ReffableTreeNode):
    """Root of an equations graph: the equations, their providers, and both lists' names.

    Key paths are stable: ``.equations[i].constant`` and ``.providers[j].value``.
    """

    equations: list
    providers: list
    equation_names: tuple = sg.static(default=())
    provider_names: tuple = sg.static(default=())

    def equation(self, name: str) -> Equation:
        """The equation called ``name`` (``KeyError`` listing the names if there is none)."""
        return self.equations[_index(self.equation_names, name, "equation")]

    def provider(self, name: str) -> GradientProvider:
        """The gradient provider called ``name``."""
        return self.providers[_index(self.provider_names, name, "provider")]


def _index(names: tuple, name: str, what: str) -> int:
    try:
        return names.index(name)
    except ValueError:
        raise KeyError(f"no {what} named {name!r}; the {what}s are {', '.join(names)}") from None
