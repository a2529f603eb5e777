"""Grouped (lowered) evaluation against the object-by-object oracle, and its scaling."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simgraph as sg
from solvers.lowering._system import System
from system_models import (
    VCCS, Circuit, Coupler, CurrentSource, Diode, Equation, Equations, GradientProvider, Ground,
    Node, Pair, Port, Resistor, Shunt, Star, VoltageSource, resistor_chain,
)

SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
values = st.floats(0.2, 2.0)


@st.composite
def circuits(draw):
    """Random circuits: several element kinds, shared nodes, two target classes, self-loops,
    star elements with 1..4 terminals (repeats allowed), two-hop reads through shared ports."""
    nodes = [Ground()] + [Node() for _ in range(draw(st.integers(1, 5)))]
    if draw(st.booleans()):
        nodes.append(Ground())
    pick = st.sampled_from(nodes)
    ports = [Port(draw(pick), draw(pick)) for _ in range(draw(st.integers(1, 2)))]
    elements = []
    for _ in range(draw(st.integers(1, 10))):
        kind = draw(st.sampled_from(["R", "D", "I", "V", "C", "S", "star", "vccs", "pair"]))
        a, b = draw(pick), draw(pick)
        if kind == "R":
            elements.append(Resistor(a, b, draw(values)))
        elif kind == "D":
            elements.append(Diode(a, b, 1e-3 * draw(values), 0.5))
        elif kind == "I":
            elements.append(CurrentSource(a, b, draw(values)))
        elif kind == "V":
            elements.append(VoltageSource(a, b, draw(values), draw(values)))
        elif kind == "C":
            elements.append(Coupler(a, b, draw(values)))
        elif kind == "S":
            elements.append(Shunt(a, b, draw(values)))
        elif kind == "star":
            terms = tuple(draw(st.lists(pick, min_size=1, max_size=4)))
            elements.append(Star(terms, jnp.asarray([draw(values) for _ in terms])))
        elif kind == "vccs":
            elements.append(VCCS(a, b, draw(st.sampled_from(ports)), draw(values)))
        else:
            elements.append(Pair(jnp.asarray([draw(values), draw(values)]), a, draw(values)))
    return Circuit(nodes, elements)


@st.composite
def equation_sets(draw):
    """The founding example with randomly shared gradient providers."""
    providers = [GradientProvider(draw(values)) for _ in range(draw(st.integers(1, 3)))]
    eqs = [Equation(draw(values), draw(st.sampled_from(providers)), draw(values))
           for _ in range(draw(st.integers(1, 6)))]
    return Equations(eqs)


def _pair(graph):
    grouped = System.build(graph, evaluation="grouped", validate=False)
    objectwise = System.build(graph, evaluation="objectwise", validate=False)
    assert grouped.evaluation == "grouped" and objectwise.evaluation == "objectwise"
    return grouped, objectwise


def _evaluate(systems, x, dx):
    """Residual, Jacobian and step limit of each system, all in one compiled call (eager
    dispatch is slower here, and one program per example compiles faster than one per
    system); for a grouped system also the element-by-element Jacobian (F and J as a dense
    matrix)."""
    elements = []
    for system in systems:
        element = pattern = None
        if system.evaluation == "grouped":
            pattern = system.sparsity_pattern()
            element = system.structure.element_jacobian(pattern)
        elements.append((element, pattern))

    def one(system, element, pattern, x, dx):
        f = system.residual(x, system.params)
        j = jax.jacfwd(system.residual)(x, system.params)
        assembled = None
        if element is not None:
            f_e, values = element.linearize(x, system.params)
            dense = jnp.zeros(pattern.shape, values.dtype)
            assembled = f_e, dense.at[pattern.rows, pattern.cols].set(values)
        return f, j, system.step_limit(x, dx, system.params), assembled

    def run(systems, x, dx):
        return [one(s, e, p, x, dx) for s, (e, p) in zip(systems, elements)]

    return jax.jit(run)(list(systems), x, dx)


def _agree(graph, seed):
    grouped, objectwise = _pair(graph)
    assert (grouped.n, grouped.m) == (objectwise.n, objectwise.m)
    np.testing.assert_array_equal(grouped.x0, objectwise.x0)
    # NumPy draws: jax.random would compile a program for every new n
    rng = np.random.default_rng(seed)
    x = np.asarray(grouped.x0) + rng.standard_normal(grouped.n)
    dx = rng.standard_normal(grouped.n)
    (f_g, j_g, s_g, (f_e, j_e)), (f_o, j_o, s_o, _) = _evaluate((grouped, objectwise), x, dx)
    np.testing.assert_allclose(f_g, f_o, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(j_g, j_o, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(f_e, f_o, rtol=1e-12, atol=1e-12)  # assembled element by element
    np.testing.assert_allclose(j_e, j_o, rtol=1e-12, atol=1e-12)
    for system in (grouped, objectwise):
        rows, cols, shape = system.sparsity()
        covered = np.zeros(shape, dtype=bool)
        covered[rows, cols] = True
        assert not np.any((j_o != 0) & ~covered), "sparsity() misses a Jacobian nonzero"
    assert (s_g is None) == (s_o is None)
    if s_g is not None:
        np.testing.assert_allclose(s_g, s_o, rtol=1e-12)
    return grouped


# 10 examples, not 15: each compiles its own program (about 1 s); with up to 10 elements of
# 9 kinds each, every kind still appears in most runs
@settings(SETTINGS, max_examples=10)
@given(circuits(), st.integers(0, 1000))
def test_grouped_matches_objectwise_on_random_circuits(graph, seed):
    _agree(graph, seed)


@SETTINGS
@given(equation_sets(), st.integers(0, 1000))
def test_grouped_matches_objectwise_on_random_equations(graph, seed):
    _agree(graph, seed)


def test_self_loops_and_identity_are_seen_by_the_methods():
    n = Node(0.5)
    graph = Circuit([Ground(), n], [Shunt(n, n, 2.0), Coupler(n, n, 1.0), Resistor(n, n, 3.0)])
    system = _agree(graph, 0)
    f = system.residual(system.x0, system.params)
    # Shunt with a is b: 2 v; Coupler: v^2 + sin v; Resistor: +i - i = 0.
    np.testing.assert_allclose(f[1], 2 * 0.5 + 0.25 + np.sin(0.5))


def test_two_hop_reads_expand_only_where_read():
    graph = resistor_chain(3)
    a, b = graph.nodes[1], graph.nodes[2]
    graph.elements.append(VCCS(a, graph.nodes[0], Port(a, b), 0.3))
    system = _agree(graph, 3)
    groups = system._s.evaluator.groups
    expanded = {system._s.an.kinds[g.kind].cls: g.expanded for g in groups}
    assert expanded[VCCS] == {2}  # the ctrl port's references, read two hops away
    assert expanded[Resistor] == frozenset()


def _jaxpr_size(system) -> int:
    closed = jax.make_jaxpr(system.residual)(system.x0, system.params)
    return len(closed.jaxpr.eqns)


def _diode_chain(n):
    graph = resistor_chain(n)
    graph.elements += [Diode(graph.nodes[k], graph.nodes[0]) for k in range(1, n + 1)]
    return graph


class Sense(sg.ReffableTreeNode):
    """Reads two hops away only through ``isinstance`` and ``is``: the port's first end is
    tested, never read."""

    a: Node
    port: Port

    def contributions(self):
        grounded = 1.0 if isinstance(self.port.a, Ground) else 0.0
        same = 1.0 if self.port.a is self.a else 0.0
        return ((self.a, (1.0 + grounded + 2.0 * same) * self.a.v),)


def test_class_and_identity_tests_two_hops_away_match_objectwise():
    ground, n1, n2 = Ground(), Node(), Node()
    elements = [VoltageSource(n1, ground, 1.0), Resistor(n1, n2, 1.0)]
    elements += [Sense(n2, Port(a, n1)) for a in (ground, n2, n1, n2, ground)]
    graph = Circuit([ground, n1, n2], elements)
    _agree(graph, 0)


class Held(sg.ReffableTreeNode):
    v: jax.Array = sg.unknown(default=0.0)


class Mirror(sg.ReffableTreeNode):
    """Equations of a node it holds no data of: ``node.v = 1``."""

    node: Held

    def residual(self):
        return self.node.v ** 3 - 1.0


class Push(sg.ReffableTreeNode):
    """No data and only a reference to a node with no data: its first probe maps nothing."""

    mirror: Mirror

    def contributions(self):
        return ((self.mirror, 0.5 * self.mirror.node.v),)


def test_elements_whose_neighbours_hold_no_data_are_grouped():
    nodes = [Held(), Held(1.5), Held(2.0)]
    mirrors = [Mirror(n) for n in nodes]
    graph = Circuit(nodes, mirrors + [Push(m) for m in mirrors] + [Push(mirrors[0])])
    _agree(graph, 0)
    assert System.build(graph).evaluation == "grouped"


def test_traced_program_does_not_grow_with_the_number_of_elements():
    small = System.build(_diode_chain(100), evaluation="grouped")
    large = System.build(_diode_chain(10_000), evaluation="grouped")
    assert large.n == 10_001
    assert _jaxpr_size(large) == _jaxpr_size(small)
    step = lambda s: len(jax.make_jaxpr(s.step_limit)(s.x0, s.x0, s.params).jaxpr.eqns)  # noqa: E731
    assert step(large) == step(small)
    objectwise = System.build(_diode_chain(20), evaluation="objectwise")
    assert _jaxpr_size(objectwise) > _jaxpr_size(small)


def test_large_grouped_residual_matches_a_hand_written_one():
    n = 2_000
    system = System.build(_diode_chain(n), evaluation="grouped")
    x = jnp.linspace(0.0, 1.0, n + 1)
    f = np.asarray(jax.jit(system.residual)(x, system.params))
    i_r = x[:-1] - x[1:]
    i_d = 1e-3 * (jnp.exp((x[1:] - x[0]) / 0.5) - 1.0)
    want = np.zeros(n + 1)
    want[0] = x[0]
    np.add.at(want, np.arange(n), np.asarray(i_r))
    np.add.at(want, np.arange(1, n + 1), -np.asarray(i_r) + np.asarray(i_d))
    want[0] -= float(jnp.sum(i_d))
    want[n] += 1.0  # the current source drives 1 A from ground into the last node
    want[0] -= 1.0
    np.testing.assert_allclose(f, want, rtol=1e-12, atol=1e-12)


def test_grouped_residual_under_vmap_over_params():
    system = System.build(resistor_chain(4), evaluation="grouped")
    gs = jnp.linspace(1.0, 2.0, 3)

    def f(g):
        params = system.set_params(system.params, {Resistor: g})
        return system.residual(jnp.ones(system.n), params)

    batched = jax.vmap(f)(gs)
    assert batched.shape == (3, system.m)
    np.testing.assert_allclose(batched[1], f(gs[1]))


def test_auto_falls_back_to_objectwise_for_three_hop_reads():
    class Deep(sg.ReffableTreeNode):
        via: VCCS
        y: jax.Array = sg.unknown(default=0.0)

        def residual(self):
            return self.y - self.via.ctrl.a.v  # three references away

    graph = resistor_chain(2)
    vccs = VCCS(graph.nodes[1], graph.nodes[0], Port(graph.nodes[2], graph.nodes[0]))
    graph.elements += [vccs, Deep(vccs)]
    with pytest.warns(UserWarning, match="three references away"):
        system = System.build(graph)
    assert system.evaluation == "objectwise"
    from solvers.lowering._model_errors import LoweringError

    with pytest.raises(LoweringError, match=r"self\.via\.ctrl\.a"):
        System.build(graph, evaluation="grouped")


def test_auto_falls_back_to_objectwise_when_alike_terms_go_to_residuals_of_two_shapes():
    class Twin(sg.ReffableTreeNode):
        """``held.v = 1``, of whatever shape ``held.v`` has."""

        held: Held

        def residual(self):
            return self.held.v - 1.0

    class Bias(sg.ReffableTreeNode):
        twin: Twin
        k: jax.Array = 0.5

        def contributions(self):
            return ((self.twin, self.k),)  # a scalar term: broadcast to the twin's shape

    pair, triple = Held(jnp.zeros(2)), Held(jnp.zeros(3))
    twins = [Twin(pair), Twin(triple)]
    graph = Equations([pair, triple, *twins, Bias(twins[0]), Bias(twins[1])])
    with pytest.warns(UserWarning, match="one target shape per term"):
        system = System.build(graph)
    assert system.evaluation == "objectwise"
    np.testing.assert_allclose(system.residual(system.x0, system.params), [-0.5] * 5)
    from solvers.lowering._model_errors import LoweringError

    with pytest.raises(LoweringError, match=r"\.equations\[5\].*\.equations\[3\].*objectwise"):
        System.build(graph, evaluation="grouped")


def _hub(spokes: int) -> Circuit:
    """A node joined to ``spokes`` others: its KCL row touches every one of them, so a
    coloured Jacobian needs spokes + 1 JVPs; every element reads just two unknowns."""
    ground, hub = Ground(), Node()
    ends = [Node() for _ in range(spokes)]
    elements = [Resistor(hub, end, 1.0 + k) for k, end in enumerate(ends)]
    elements += [Diode(end, ground, 1e-3, 0.5) for end in ends]
    elements += [Resistor(hub, ground, 0.5), CurrentSource(ground, hub, 2.0)]
    return Circuit([ground, hub] + ends, elements)


def test_sparse_solvers_assemble_a_hub_jacobian_element_by_element():
    import solvers
    from solvers import SparsityPattern

    system = System.build(_hub(12))
    pattern = system.sparsity_pattern()
    fn = system.residual_function
    assert fn == System.build(_hub(12)).residual_function  # hashable: shares compiled programs
    assert fn.element_jacobian(pattern, n_colors=13) is not None
    assert fn.element_jacobian(pattern, n_colors=2) is None  # colouring is as cheap
    dense = np.zeros(pattern.shape, bool)
    dense[pattern.rows, pattern.cols] = True
    r, c = np.argwhere(~dense)[0]
    wider = SparsityPattern(np.append(pattern.rows, r), np.append(pattern.cols, c), pattern.shape)
    assert fn.element_jacobian(wider, n_colors=13) is None  # not this system's pattern
    solver = solvers.SparseHostLU(pattern)
    x = system.x0 + jax.random.normal(jax.random.PRNGKey(0), (system.n,))
    f_e, op_e = jax.jit(lambda x: solver.linearize(fn, x, system.params))(x)
    f_c, op_c = jax.jit(lambda x: solver.linearize(system.residual, x, system.params))(x)
    np.testing.assert_allclose(f_e, f_c, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(solver.values(op_e), solver.values(op_c), rtol=1e-13, atol=1e-13)
    sol = solvers.solve(system, solvers.Newton(linear_solver=solvers.SparseHostLU()))
    assert bool(sol.converged) and float(sol.residual_norm) < 1e-10
