"""System: layout of x and params, names, updates, transforms, and the model checks."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simgraph as sg
from solvers.lowering._model_errors import (
    ContributionError, EquationCountError, MethodError, ModelError, SingularComponentError,
    StructurallySingularError,
)
from solvers.lowering._system import System
from system_models import (
    Circuit, CurrentSource, Diode, Equation, Equations, GradientProvider, Ground, Node, Pair,
    Resistor, VoltageSource, resistor_chain,
)


def _equations():
    shared = GradientProvider(2.0)
    eqs = [Equation(1.0, shared, 0.5), Equation(3.0, shared, 0.25), Equation(8.0, GradientProvider(4.0), 1.0)]
    return Equations(eqs), shared


def test_x0_and_params_are_stacked_per_kind():
    graph, _ = _equations()
    system = System.build(graph)
    np.testing.assert_array_equal(system.x0, [0.5, 0.25, 1.0])
    np.testing.assert_array_equal(system.params["GradientProvider"]["value"], [2.0, 4.0])
    np.testing.assert_array_equal(system.params["Equation"]["constant"], [1.0, 3.0, 8.0])
    np.testing.assert_allclose(system.residual(system.x0, system.params), [0.0, -2.5, -4.0])


def test_to_graph_keeps_sharing_and_leaves_the_input_alone():
    graph, shared = _equations()
    system = System.build(graph)
    new = system.to_graph(jnp.array([10.0, 20.0, 30.0]))
    assert new is not graph and new.equations[0].gradient is new.equations[1].gradient
    assert new.equations[0].gradient is not shared
    assert [float(e.x) for e in new.equations] == [10.0, 20.0, 30.0]
    assert float(graph.equations[0].x) == 0.5
    params = system.set_params(system.params, {".equations[1].gradient.value": 7.0})  # any path works
    assert float(system.to_graph(system.x0, params).equations[0].gradient.value) == 7.0


def test_to_graph_with_batched_x_gives_a_batched_graph():
    graph, _ = _equations()
    system = System.build(graph)
    xs = jnp.arange(6.0).reshape(2, 3)
    batched = system.to_graph(xs)
    np.testing.assert_array_equal(batched.equations[2].x, [2.0, 5.0])
    assert np.shape(batched.equations[2].constant) == ()
    for wrong in (jnp.ones(4), jnp.ones((2, 2)), jnp.asarray(1.0)):  # too long was accepted
        with pytest.raises(ValueError, match="this System has 3 unknowns: give shape \\(3,\\)"):
            system.to_graph(wrong)


def test_paths_and_labels_name_every_entry():
    circuit = resistor_chain(2)
    circuit.elements.append(Pair(jnp.array([1.0, 2.0]), circuit.nodes[1]))
    circuit.elements.append(VoltageSource(circuit.nodes[2], circuit.nodes[0], 1.0))
    system = System.build(circuit, validate=False)
    assert system.unknown_paths() == [".nodes[0].v", ".nodes[1].v", ".nodes[2].v", ".elements[3].x[0]",
                                      ".elements[3].x[1]", ".elements[4].i"]
    assert system.residual_labels()[:3] == [".nodes[0].residual", ".nodes[1].residual", ".nodes[2].residual"]
    assert system.residual_labels()[3:] == [".elements[3].residual[0]", ".elements[3].residual[1]",
                                            ".elements[4].residual"]
    assert system.locate(circuit.elements[3]) == slice(3, 5)
    assert system.locate("elements[4].i") == slice(5, 6)
    assert system.locate(".nodes[2]") == slice(2, 3)
    assert system.locate(".elements[1].b") == slice(2, 3)  # through a reference
    assert system.locate_equations(circuit.elements[3]) == slice(3, 5)
    with pytest.raises(sg.GraphError, match="Did you mean"):
        system.locate(".nodes[2].w")


def test_set_params_by_path_field_class_and_callable():
    circuit = resistor_chain(3)
    system = System.build(circuit)
    p = system.params
    assert float(system.set_params(p, {"elements[1].g": 5.0})["Resistor"]["g"][1]) == 5.0
    assert float(system.set_params(p, {".elements[1].g": 5.0})["Resistor"]["g"][1]) == 5.0
    np.testing.assert_array_equal(system.set_params(p, {"g": 3.0})["Resistor"]["g"], [3.0] * 3)
    np.testing.assert_array_equal(system.set_params(p, {"Resistor.g": jnp.array([1.0, 2.0, 3.0])})
                                  ["Resistor"]["g"], [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(system.set_params(p, {CurrentSource: 4.0})["CurrentSource"]["i"], [4.0])
    picked = system.set_params(p, {lambda info: info.node is circuit.elements[2]: 9.0})
    np.testing.assert_array_equal(picked["Resistor"]["g"], [1.0, 1.0, 9.0])
    np.testing.assert_array_equal(p["Resistor"]["g"], [1.0, 1.0, 1.0])  # input untouched
    with pytest.raises(sg.GraphError, match="unknown, not a parameter"):
        system.set_params(p, {".nodes[1].v": 1.0})
    with pytest.raises(sg.GraphError, match="shape"):
        system.set_params(p, {"g": jnp.ones(2)})
    with pytest.raises(sg.GraphError, match="selects no parameter"):
        system.set_params(p, {"nothing": 1.0})


def test_set_params_inside_vmap_sweeps_a_parameter():
    circuit = resistor_chain(2)
    system = System.build(circuit)
    sweep = jnp.linspace(1.0, 3.0, 4)
    fs = jax.vmap(lambda i: system.residual(system.x0 + 1.0, system.set_params(system.params, {"elements[2].i": i})))(sweep)
    np.testing.assert_allclose(fs[:, -1], sweep)  # equal potentials: only the source current flows


def test_build_inside_jit_grad_and_vmap():
    graph, _ = _equations()

    def loss(g):
        system = System.build(g)
        return jnp.sum(system.residual(system.x0, system.params) ** 2)

    value = jax.jit(loss)(graph)
    np.testing.assert_allclose(value, 0.0 + 2.5**2 + 4.0**2)
    grads = jax.grad(loss)(graph)
    # d/d(shared value) of sum (v x_i - c_i)^2 over the two equations sharing it
    np.testing.assert_allclose(grads.equations[0].gradient.value, 2 * (0.0 * 0.5 + -2.5 * 0.25))
    assert grads.equations[0].gradient is grads.equations[1].gradient
    np.testing.assert_allclose(grads.equations[2].x, 2 * -4.0 * 4.0)
    batch = sg.stack([graph, graph])
    np.testing.assert_allclose(jax.vmap(loss)(batch), [value, value])


def test_structure_is_static_and_equal_for_equal_graphs():
    a = System.build(resistor_chain(4))
    b = System.build(resistor_chain(4))
    c = System.build(resistor_chain(5))
    tree = jax.tree_util.tree_structure
    assert tree(a) == tree(b) and tree(a) != tree(c)
    assert len(jax.tree_util.tree_leaves(a)) == 3  # x0 and one stacked array per parameter column


def test_sparsity_of_a_chain_is_tridiagonal():
    system = System.build(resistor_chain(5))
    rows, cols, shape = system.sparsity()
    assert shape == (6, 6)
    assert set(zip(rows.tolist(), cols.tolist())) == {(i, j) for i in range(6) for j in range(6) if abs(i - j) <= 1}


def test_step_limit_is_the_minimum_or_none():
    circuit = resistor_chain(2)
    assert System.build(circuit).step_limit(jnp.zeros(3), jnp.ones(3), System.build(circuit).params) is None
    circuit.elements.append(Diode(circuit.nodes[2], circuit.nodes[0], 1e-3, 0.5))
    system = System.build(circuit)
    dx = jnp.array([0.0, 0.0, 4.0])
    np.testing.assert_allclose(system.step_limit(jnp.zeros(3), dx, system.params), 2 * 0.5 / 4.0)


def test_counts_are_checked_and_explained():
    class Free(sg.ReffableTreeNode):
        y: jax.Array = sg.unknown(default=0.0)

    graph, _ = _equations()
    graph.equations.append(Free())
    with pytest.raises(EquationCountError, match=r"3 equations but 4 unknowns.*Free\.y 1.*Equation\.residual 3"):
        System.build(graph)
    assert System.build(graph, square=False, validate=False).n == 4


def test_contribution_to_a_node_without_residual_names_both_nodes():
    class Terminal(sg.ReffableTreeNode):
        v: jax.Array = sg.unknown(default=0.0)

    t = Terminal()
    circuit = Circuit([Ground(), t], [Resistor(t, t, 1.0)])
    circuit.elements.insert(0, CurrentSource(circuit.nodes[0], circuit.nodes[0], 1.0))
    with pytest.raises(ContributionError, match=r"\.elements\[1\].*\.nodes\[1\].*Terminal"):
        System.build(circuit)


def test_contribution_to_an_unreferenced_node_is_refused():
    class Leaky(sg.ReffableTreeNode):
        a: Node

        def contributions(self):
            return ((elsewhere, self.a.v),)

    elsewhere = Node()
    circuit = Circuit([Ground(), elsewhere], [Leaky(circuit_node := Node())])
    circuit.nodes.append(circuit_node)
    for mode in ("grouped", "objectwise"):
        with pytest.raises(ContributionError, match="not referenced"):
            System.build(circuit, evaluation=mode, validate=False)


def test_floating_node_is_structurally_singular_and_named():
    circuit = resistor_chain(2)
    circuit.nodes.append(Node())  # nothing connected
    with pytest.raises(StructurallySingularError, match=r"\.nodes\[3\]") as info:
        System.build(circuit)
    assert "depend on no unknown" in str(info.value) and "appear in no equation" in str(info.value)


def test_method_failures_name_the_node_and_the_method():
    class Branchy(sg.ReffableTreeNode):
        y: jax.Array = sg.unknown(default=0.0)

        def residual(self):
            return self.y if self.y > 0 else -self.y  # Python control flow on a traced value

    for mode in ("grouped", "objectwise"):
        with pytest.raises(MethodError, match=r"Branchy\.residual\(\).*\.equations\[0\]|\.equations\[0\].*Branchy\.residual") as info:
            System.build(Equations([Branchy()]), evaluation=mode)
        assert "0 similar" not in str(info.value)  # "(and 0 similar nodes)" for a lone node
    with pytest.raises(MethodError, match=r"\.equations\[0\] \(and 1 similar node\) when"):
        System.build(Equations([Branchy(), Branchy()]), evaluation="grouped")
    assert issubclass(MethodError, ModelError) and issubclass(ModelError, sg.GraphError)


def test_a_residual_that_returns_nothing_names_the_node_in_both_evaluations():
    class Forgot(sg.ReffableTreeNode):
        y: jax.Array = sg.unknown(default=0.0)

        def residual(self):
            self.y - 1.0  # noqa: B018 (the `return` is missing)

    for mode in ("grouped", "objectwise"):
        with pytest.raises(MethodError, match=r"\.equations\[0\].*Forgot\.residual\(\) returned None"):
            System.build(Equations([Forgot()]), evaluation=mode)


def test_contributions_of_one_bare_pair_name_the_element_in_both_evaluations():
    class Bare(sg.ReffableTreeNode):
        a: Node

        def contributions(self):
            return (self.a, self.a.v)  # one pair, not a sequence of pairs

    circuit = resistor_chain(1)
    circuit.elements.append(Bare(circuit.nodes[1]))
    for mode in ("grouped", "objectwise"):
        with pytest.raises(MethodError, match=r"^\.elements\[2\]: Bare\.contributions\(\) must return"):
            System.build(circuit, evaluation=mode)


def test_no_unknowns_is_reported():
    with pytest.raises(EquationCountError, match="no unknowns"):
        System.build(Circuit([], []))


class Link(sg.ReffableTreeNode):
    """A pipe-like branch with its own flow unknown and head-loss equation."""

    a: Node
    b: Node
    q: jax.Array = sg.unknown(default=0.0)

    def residual(self):
        return self.a.v - self.b.v - self.q ** 3 - self.q

    def contributions(self):
        return ((self.a, -self.q), (self.b, self.q))


def test_diagnose_names_islands_that_structure_cannot_see():
    circuit = resistor_chain(2)
    a, b, c, d = Node(), Node(), Node(), Node()
    circuit.nodes += [a, b, c, d]
    circuit.elements += [Resistor(a, b, 2.0), Link(c, d), Link(c, d)]  # two floating islands
    system = System.build(circuit)  # structurally fine
    message = system.diagnose(system.x0 + 0.1)
    assert ".nodes[3]" in message and ".nodes[4]" in message and "sum to zero" in message
    assert ".nodes[5]" in message and ".elements[5]" in message and "rank 3 of 4" in message
    assert ".nodes[1]" not in message
    assert System.build(resistor_chain(3)).diagnose() is None
    with pytest.raises(SingularComponentError, match="reference"):
        system.validate(numeric=True, x=system.x0 + 0.1)


def test_a_start_of_another_float_type_is_refused_with_the_fix():
    """The residual computes in the type the System was lowered for: a float32 start for a
    float64 System is refused (not a JAX carry-type error deep in Newton), and the System
    still solves from its own start afterwards."""
    import solvers
    system = System.build(_equations()[0])
    x32 = np.asarray(system.x0, np.float32)
    bad = System(x32, system.params, system.structure)
    with pytest.raises(TypeError, match=r"x0 is float32.*lowered .* float64.*astype\('float64'\)"):
        solvers.solve(bad)
    with pytest.raises(TypeError, match="x0 is float32"):
        jax.jit(solvers.solve)(bad)
    with pytest.raises(TypeError, match="x0 is float32"):
        solvers.solve_batch(system, {"Equation.constant": np.ones((2, 3))},
                            x0=np.stack([x32, x32]))
    assert bool(solvers.solve(system).converged)


def test_a_residual_promoted_past_the_unknowns_type_is_refused_with_the_fix():
    """float32 unknowns with float64 parameters: the residual computes in float64 while
    Newton iterates in float32; refused at the build (not a carry-type error deep in the
    solver's loop), naming the unknowns and the fix, eagerly and under jit."""
    import solvers

    class Cubic(sg.ReffableTreeNode):
        c: jax.Array
        x: jax.Array = sg.unknown(default=0.0)

        def residual(self):
            return self.x ** 3 - 2 * self.x + self.c

    mixed = Cubic(np.float64(-1.0), np.float32(0.0))
    with pytest.raises(sg.GraphError, match=r"float64 but the unknowns \(Cubic.x\) are float32"):
        System.build(mixed)
    with pytest.raises(sg.GraphError, match="parameters as float32"):
        jax.jit(lambda g: solvers.solve(g).x)(mixed)
    one_type = Cubic(np.float32(-1.0), np.float32(0.0))
    assert System.build(one_type).x0.dtype == np.float32
    assert bool(solvers.solve(one_type).converged)


def test_a_large_solved_graph_is_rebuilt_without_garbage_collections():
    # Solution.system rebuilt a 3000-node ladder with a cyclic collection every 700 new
    # objects (two thirds of its time): now one, deferred to the end.
    import gc

    from scenarios.circuits import build_circuit, diode_ladder_netlist

    system = System.build(build_circuit(diode_ladder_netlist(1000, tight=False)))
    collections = []
    gc.collect()
    gc.callbacks.append(lambda phase, info: collections.append(phase))
    try:
        graph = system.to_graph(system.x0)
    finally:
        gc.callbacks.pop()
    assert collections.count("start") <= 1 and gc.isenabled()
    assert len(graph.resistors) == len(system.to_graph(system.x0).resistors) > 900
