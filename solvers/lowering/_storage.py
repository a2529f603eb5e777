"""What a transient adds to a lowered system: stored quantities ``Q(x, params)``, the time
``t`` that reaches elements through a shared :class:`Clock`, and the sources' breakpoints.

An element's ``charge()`` returns ``(node, Q)`` pairs, like ``contributions()``: ``dQ/dt`` is
added to the target's equations (the target may be the element itself), so the system
becomes ``F(x, p, t) + dQ(x, p)/dt = 0``. ``Q`` is lowered exactly as the residual is (groups
of alike elements under ``vmap``, one scatter-add into the residual's layout), so its
Jacobian's pattern comes from the same data-flow analysis.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import simgraph as sg

from . import _grouped, _groups, _pattern
from ._model_errors import ContributionError, LoweringError, MethodError


class Clock(sg.ReffableTreeNode):
    """The simulation time ``t`` (s) for elements that depend on it: reference one shared
    clock and read ``self.clock.t``. A transient sets ``t`` at every step; a DC solve sees
    the value stored here (default 0)."""

    t: jax.Array = 0.0


def charge_fn(an, group, record: dict):
    """``fn(data) -> [Q terms]`` for one element of ``group`` (targets go to ``record``)."""
    kind = an.kinds[group.kind]
    direct = range(1 + kind.n_slots)

    def fn(data):
        views = _groups.make_views(an, group, data)
        outs, targets = [], []
        for i, (node, term) in enumerate(_grouped._pairs(views[0].charge(), kind.cls, "charge")):
            j = next((group.slots[j].alias for j in direct if views[j] is node), None)
            if j is None:
                raise ContributionError(
                    f"{kind.cls.__name__}.charge() term {i} targets {node!r}, which is neither "
                    "the element nor a node it references directly.")
            targets.append(j)
            outs.append(_grouped.as_output(term, kind.cls, "charge"))
        record["targets"] = tuple(targets)
        return outs

    return fn


def _probe_charge(an, group):
    record = {}
    try:
        outs = jax.eval_shape(_grouped.vmap(charge_fn(an, group, record), group),
                              _groups.abstract_data(an, group))
    except _groups.NeedHop as need:
        return need.slot
    except Exception as err:
        raise _grouped.traced_error(an, group, "charge", err) from err
    group.out_dtypes = tuple(np.dtype(o.dtype) for o in outs)
    group.con_targets, group.con_shapes = record["targets"], tuple(tuple(o.shape[1:]) for o in outs)
    group.res_shape, group.has_step = None, False
    return None


class ChargeEvaluator(_grouped.Grouped):
    """Evaluates ``Q(x, params)`` into the residual's layout (``residual`` returns Q)."""

    def __init__(self, an, eq):
        groups = _grouped.plan(an, ("charge",), _probe_charge)
        super().__init__(an, groups, eq)
        self.fns = {id(g): charge_fn(an, g, {}) for g in groups}


class Lowered:
    """The transient parts of one system structure, built once and kept on its evaluator."""

    def __init__(self, system):
        s = system.structure
        if system.evaluation != "grouped":
            raise LoweringError("a transient needs grouped evaluation (evaluation='grouped'); "
                                "this graph could only be evaluated node by node.")
        an = s.an
        self.charge = ChargeEvaluator(an, s.evaluator.eq)
        self.clocks = tuple(k.label for k in an.kinds if issubclass(k.cls, Clock))
        self.breaks = _breakpoint_groups(an)
        self.an = an
        rows, cols, _ = system.sparsity()
        q_rows, q_cols = _pattern.grouped(an, self.charge)
        self.pattern = _pattern.unique([rows, q_rows], [cols, q_cols], system.m, system.n)
        #: the unknowns the stored quantities depend on (the differential ones): the
        #: integrator's error test looks at these only, as SPICE's looks at charges and fluxes
        self.differential = np.zeros(system.n, bool)
        self.differential[q_cols] = True

    def with_time(self, params: dict, t) -> dict:
        """``params`` with every clock set to ``t``."""
        if not self.clocks:
            return params
        out = dict(params)
        for label in self.clocks:
            col = dict(out[label])
            col["t"] = jnp.full(jnp.shape(col["t"]), t, jnp.result_type(col["t"]))
            out[label] = col
        return out

    def next_breakpoint(self, params: dict, t):
        """The earliest breakpoint strictly after ``t`` over all elements (inf if none); an
        element's answer that is not after ``t`` (``t`` itself, NaN) is no breakpoint, and
        hides no other element's."""
        stores = _grouped.Stores(self.an, jnp.zeros(self.an.n), params)
        best = jnp.asarray(jnp.inf, jnp.result_type(float))
        for g, fn in self.breaks:
            times = _grouped.vmap(fn, g, in_axes=(0, None))(_grouped.gather(g, stores), t)
            best = jnp.minimum(best, jnp.min(jnp.where(times > t, times, jnp.inf)))
        return best


def lowered(system) -> Lowered:
    """The transient lowering of ``system``'s structure (cached on its shared evaluator)."""
    evaluator = system.structure.evaluator
    found = getattr(evaluator, "transient_lowering", None)
    if found is None:
        found = Lowered(system)
        evaluator.transient_lowering = found
    return found


def _breakpoint_groups(an) -> list:
    def probe(an, group):
        try:
            jax.eval_shape(_grouped.vmap(_breakpoint_fn(an, group), group, in_axes=(0, None)),
                           _groups.abstract_data(an, group), jax.ShapeDtypeStruct((), jnp.result_type(float)))
        except _groups.NeedHop as need:
            return need.slot
        return None

    groups = _grouped.plan(an, ("next_breakpoint",), probe)
    return [(g, _breakpoint_fn(an, g)) for g in groups]


def _breakpoint_fn(an, group):
    kind = an.kinds[group.kind]

    def fn(data, t):
        out = jnp.asarray(_groups.make_views(an, group, data)[0].next_breakpoint(t))
        if out.shape != ():
            raise MethodError(f"{kind.cls.__name__}.next_breakpoint(t) must return a scalar "
                              f"time, got shape {out.shape}.")
        return out

    return fn
