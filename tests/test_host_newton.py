"""Newton on the host LU stepped from Python (``solvers.roots._host_newton``): the same steps
as the compiled Newton, a compiled part without host callbacks, and the compiled method
wherever the host steps do not converge."""

import functools
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import solvers
from solvers.lowering._residual import StepLimit
from solvers.roots import _host_newton, _solve

DATA = Path(__file__).parent / "data" / "acpf"


def _problem(system, limited: bool = True):
    step_limit = StepLimit(system.structure) if limited and system.has_step_limit else None
    return solvers.FlatProblem(system.residual_function, step_limit)


def host(system, newton, limited: bool = True):
    return _host_newton.host_newton(_problem(system, limited), newton, system.x0,
                                    system.params)


def _case89(scale: float = 1.0):
    """case89pegase (160 unknowns: the host LU) lowered, its load scaled, and the default
    method's first stage (Newton with a watchdog on the host LU)."""
    from scenarios.powerflow import DEFAULT_METHOD, build_powerflow, read_case_json
    system = solvers.System.build(build_powerflow(read_case_json(DATA / "case89pegase.json"),
                                                  "flat").graph)
    params = system.set_params(system.params, {".loading.scale": np.float64(scale)})
    system = solvers.System(system.x0, params, system.structure)
    newton = DEFAULT_METHOD.stages(system)[0]
    assert isinstance(newton.linear_solver, solvers.SparseHostLU) and newton.watchdog > 0
    return system, newton


def _grid_circuit(k: int = 6):
    """A k x k resistor grid with a diode at every node (junction limiting), from 0 V, with
    the circuit default's first stage on the host LU."""
    from scenarios.circuits import ATOL, RTOL, build_circuit
    from scenarios.circuits._generate import grid_netlist
    system = solvers.System.build(build_circuit(grid_netlist(k)))
    pattern = system.sparsity_pattern()
    newton = solvers.Newton(atol=ATOL, rtol=RTOL, watchdog=4,
                            linear_solver=solvers.SparseHostLU(pattern))
    return system, newton


@functools.partial(jax.jit, static_argnums=1)
def _compiled(system, method):
    """The compiled method (under jit the solve never steps from the host)."""
    return solvers.solve(system, method)


def test_host_steps_are_the_compiled_newtons_on_a_power_grid() -> None:
    system, newton = _case89()
    ours, theirs = host(system, newton), _compiled(system, newton)
    assert bool(ours.converged) and bool(theirs.converged)
    tool = json.loads((DATA / "case89pegase.json").read_text())["solution"]
    assert int(ours.iterations) == int(theirs.iterations) == tool["tool_iterations"]
    np.testing.assert_allclose(ours.x, theirs.flat.x, rtol=0, atol=1e-12)
    assert float(ours.residual_norm) <= 1e-10
    # no host callback in the compiled part: JAX's persistent cache can keep it
    lowered = _host_newton._advance.lower(newton.linear_solver, _problem(system), system.x0,
                                          system.x0, system.params)
    assert "callback" not in lowered.as_text() and "custom_call" not in lowered.as_text()


def test_host_steps_apply_the_elements_step_limit() -> None:
    system, newton = _grid_circuit()
    ours, theirs = host(system, newton), _compiled(system, newton)
    assert bool(ours.converged) and int(ours.iterations) == int(theirs.iterations)
    assert (int(ours.num_fev), int(ours.num_jev)) == (int(theirs.num_fev), int(theirs.num_jev))
    np.testing.assert_allclose(ours.x, theirs.flat.x, rtol=0, atol=1e-12)
    unlimited = host(system, newton, limited=False)  # the limit changed the steps
    assert int(unlimited.iterations) != int(ours.iterations) or not bool(unlimited.converged)


def test_solve_steps_from_the_host_and_compiles_no_method() -> None:
    system, newton = _grid_circuit()
    method = solvers.Default(atol=newton.atol, rtol=newton.rtol,
                             linear_solver=newton.linear_solver)
    assert solvers.roots._staging.stages_of(method, system.m, system.n)[0] == newton
    before = _solve._solve_jit._cache_size()
    ours = solvers.solve(system, method)
    assert _solve._solve_jit._cache_size() == before  # no compiled Newton, no fallback
    theirs = _compiled(system, newton)  # Default's first stage, which converges
    assert bool(ours.converged) and int(ours.iterations) == int(theirs.iterations)
    np.testing.assert_allclose(ours.x, theirs.flat.x, rtol=0, atol=1e-12)
    assert isinstance(ours.x, jax.Array) and ours.system is not None


def test_where_the_host_steps_stall_solve_runs_the_compiled_newton() -> None:
    system, newton = _case89(scale=40.0)  # far beyond the grid's loadability
    stalled = host(system, newton)
    assert not bool(stalled.converged) and int(stalled.iterations) < newton.max_steps
    assert np.isfinite(stalled.residual_norm) and np.all(np.isfinite(stalled.x))  # best point
    assert int(stalled.result) == int(solvers.RESULTS.line_search_failed)
    ours, theirs = solvers.solve(system, newton), _compiled(system, newton)
    assert int(ours.result) == int(theirs.result)
    assert int(ours.iterations) == int(theirs.iterations) > int(stalled.iterations)
    np.testing.assert_array_equal(ours.x, theirs.flat.x)


@pytest.mark.parametrize("why", ["dense", "backtracking", "batched", "another size"])
def test_host_steps_only_where_they_are_newtons_full_steps(why) -> None:
    system, newton = _grid_circuit(3)
    x0 = system.x0
    if why == "dense":
        newton = solvers.Newton(watchdog=4)
    elif why == "backtracking":
        newton = solvers.Newton(linear_solver=newton.linear_solver)  # no watchdog
    elif why == "batched":
        x0 = np.stack([x0, x0])
    else:
        x0 = np.zeros(system.n + 1)
    assert not _host_newton.steps_on_host(newton, x0)
    assert _host_newton.host_newton(_problem(system), newton, x0, system.params) is None


def test_host_steps_stay_off_on_an_accelerator(monkeypatch) -> None:
    system, newton = _grid_circuit(3)
    assert _host_newton.steps_on_host(newton, system.x0)
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert not _host_newton.steps_on_host(newton, system.x0)


@settings(max_examples=12, deadline=None, derandomize=True)  # rounding near-ties: no flakes
@given(st.integers(2, 3), st.integers(0, 2**16), st.floats(1.0, 1e3), st.floats(-20.0, 20.0))
def test_solve_gives_the_compiled_newtons_answer_on_random_grids(k, seed, spread, volts):
    """Random resistances and sources (some far from forward bias): where the host steps
    converge, the compiled Newton converges in as many steps to the same point; where they
    do not, ``solve`` runs the compiled Newton and returns its answer."""
    from scenarios.circuits import ATOL, RTOL, build_circuit
    from scenarios.circuits._generate import grid_netlist
    netlist = grid_netlist(k, spread=spread, seed=seed, v1=volts, v2=-0.5 * volts)
    system = solvers.System.build(build_circuit(netlist))
    newton = solvers.Newton(atol=ATOL, rtol=RTOL, watchdog=2,
                            linear_solver=solvers.SparseHostLU(system.sparsity_pattern()))
    stepped, ours, theirs = host(system, newton), solvers.solve(system, newton), \
        _compiled(system, newton)
    assert int(ours.result) == int(theirs.result)
    assert int(ours.iterations) == int(theirs.iterations)
    np.testing.assert_allclose(ours.x, theirs.flat.x, rtol=0, atol=1e-12)
    if bool(stepped.converged):
        np.testing.assert_array_equal(ours.x, stepped.x)


def test_new_values_compile_nothing_new() -> None:
    """A second solve of the structure with other source voltages reuses the programs (the
    step, F and J) of the first."""
    from compile_count import compilations
    system, newton = _grid_circuit()
    method = solvers.Default(atol=newton.atol, rtol=newton.rtol,
                             linear_solver=newton.linear_solver)
    first = solvers.solve(system, method)
    params = system.set_params(system.params, {".vsources['V1'].value": np.float64(2.0)})
    with compilations() as count:
        second = solvers.solve(solvers.System(system.x0, params, system.structure), method)
    assert count[0] == 0
    assert bool(first.converged) and bool(second.converged)
    assert not np.allclose(first.x, second.x)


def test_a_step_to_a_non_finite_residual_is_left_to_the_compiled_newton() -> None:
    """0.5||F||^2 overflows after the first step (F itself is finite): the host steps stop
    there (Newton would not move to such a point), and ``solve`` returns the compiled
    Newton's answer."""
    import scipy.sparse as sp
    pattern = solvers.SparsityPattern(*sp.eye(2).nonzero(), (2, 2))
    newton = solvers.Newton(watchdog=3, linear_solver=solvers.SparseHostLU(pattern))
    fn = lambda x, p: x - p + jnp.where(x > 0.5, 1e200, 0.0)  # noqa: E731 (F^2 overflows)
    problem = solvers.FlatProblem(fn)
    x0, params = jnp.zeros(2), jnp.ones(2)
    stepped = _host_newton.host_newton(problem, newton, x0, params)
    assert int(stepped.result) == int(solvers.RESULTS.nonfinite_residual)
    assert int(stepped.iterations) == 1 and np.all(np.asarray(stepped.x) == 0.0)
    ours = solvers.solve(fn, x0, params, solver=newton, sparsity=pattern)
    theirs = jax.jit(lambda x, p: solvers.solve(fn, x, p, solver=newton, sparsity=pattern))(
        x0, params)
    assert int(ours.result) == int(theirs.result)
    np.testing.assert_array_equal(ours.x, theirs.x)
    assert not bool(ours.converged) or float(ours.residual_norm) <= newton.atol


@pytest.mark.parametrize("where", ["x0", "params"])
def test_non_finite_inputs_are_left_to_the_compiled_method(where) -> None:
    """A NaN start or an unused infinite parameter: the compiled method reports
    ``nonfinite_input``, and so does the eager solve (the host does not step)."""
    import scipy.sparse as sp
    pattern = solvers.SparsityPattern(*sp.eye(2).nonzero(), (2, 2))
    newton = solvers.Newton(watchdog=3, linear_solver=solvers.SparseHostLU(pattern))
    fn = lambda x, p: x ** 3 - p["a"]  # noqa: E731
    x0 = jnp.asarray([1.0, jnp.nan]) if where == "x0" else jnp.ones(2)
    params = {"a": jnp.asarray([2.0, 3.0]),
              "cap": jnp.asarray(jnp.inf if where == "params" else 1.0)}
    assert not _host_newton.steps_on_host(newton, x0, params)
    ours = solvers.solve(fn, x0, params, solver=newton, sparsity=pattern)
    assert int(ours.result) == int(solvers.RESULTS.nonfinite_input)


def test_eager_gradients_through_the_host_steps_equal_the_dense_lus(monkeypatch) -> None:
    """Under an eager ``grad`` the stages solve the values (here on the host) and the
    implicit derivative is attached: the gradient equals the one through a dense LU."""
    system, newton = _grid_circuit(2)
    stepped = []
    monkeypatch.setattr(_solve, "host_newton", lambda *args: stepped.append(
        _host_newton.host_newton(*args)) or stepped[-1])

    def loss(params, linear_solver):
        method = solvers.Default(atol=newton.atol, rtol=newton.rtol, linear_solver=linear_solver)
        solved = solvers.solve(solvers.System(system.x0, params, system.structure), method)
        return jnp.sum(solved.x ** 2)

    ours = jax.grad(loss)(system.params, newton.linear_solver)
    assert len(stepped) == 1 and bool(stepped[0].converged)  # the host stepped the values
    dense = jax.grad(loss)(system.params, solvers.DenseLU())
    for a, b in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(dense)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12 * float(np.max(np.abs(b))))


def test_a_first_host_lu_solve_compiles_its_step_program_only() -> None:
    """The inputs are checked and the answer is packed on the host: eager ``jnp`` checks
    used to compile one program per parameter shape (a third of the first solve of a
    k = 30 grid). The answer's arrays keep the types of the compiled method's."""
    from compile_count import compilations
    system, newton = _grid_circuit(11)  # a size no other test compiles for
    with compilations() as count:
        ours = solvers.solve(system, newton)
    assert count[0] == 1  # the step: F and J at the limited step
    theirs = _compiled(system, newton)
    assert bool(ours.converged) and int(ours.iterations) == int(theirs.iterations)
    for name in ("x", "result", "converged", "iterations", "num_fev", "num_jev",
                 "residual_norm", "relative_step"):
        mine, compiled = getattr(ours, name), getattr(theirs, name)
        assert isinstance(mine, jax.Array), name
        assert (mine.dtype, mine.shape) == (compiled.dtype, compiled.shape), name


def test_the_host_input_check_sees_every_inexact_type() -> None:
    """`steps_on_host` reads the inputs on the host: a NaN or inf in any float type (the
    ml_dtypes ones too) keeps the host steps off, integer leaves are always finite."""
    check = _host_newton._finite_on_host
    assert check((jnp.ones(3), {"n": jnp.arange(3), "k": 2, "g": 0.5, "flag": True}))
    for bad in (jnp.asarray([1.0, jnp.nan], jnp.bfloat16), np.float32(np.inf),
                float("nan"), jnp.asarray([1j, complex(0, np.inf)]), np.array([[0.0, -np.inf]])):
        assert not check((jnp.ones(2), {"bad": bad})), bad
