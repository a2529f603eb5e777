"""TransientSolution.to_frame: a transient's output as a pandas table, one row per output time
and one column per unknown named by key path (as Solution.to_frame names them); a batch as
one block of columns per member, or long; a clear error without pandas."""
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import solvers
from test_transient import rc
from test_transient_arguments import Decay

pd = pytest.importorskip("pandas")

T = np.linspace(0.0, 3e-3, 4)
CFG = solvers.Integrator(rtol=1e-4, atol=1e-7)


def test_one_run_has_a_row_per_time_and_a_column_per_unknown():
    graph = rc()
    sol = solvers.simulate(graph, T, integrator=CFG)
    frame = sol.to_frame()
    assert frame.index.name == "t" and frame.index.tolist() == T.tolist()
    assert frame.columns.tolist() == sol.lowered.unknown_paths() == [
        ".source.i", ".source.a.v", ".resistor.b.v"]
    assert np.array_equal(frame.to_numpy(), np.asarray(sol.x))
    out = np.asarray(sol.value(graph.capacitor.a))[:, 0]
    assert frame[".resistor.b.v"].tolist() == out.tolist()
    long = sol.to_frame(long=True)
    assert list(long.columns) == ["t", "path", "owner", "value"] and len(long) == 4 * 3
    assert long.set_index(["t", "path"])["value"].unstack()[frame.columns].equals(
        frame.rename_axis(columns="path"))
    assert set(long["owner"]) == {"Ramp", "Node"}


def test_a_batch_has_a_block_of_columns_per_member_or_a_row_per_member_time_and_unknown():
    sol = solvers.simulate_batch(rc(), {".resistor.r": jnp.asarray([500.0, 2000.0])}, T,
                                 integrator=CFG)
    frame = sol.to_frame()
    assert frame.columns.names == ["member", "path"] and frame.index.tolist() == T.tolist()
    assert frame.columns.get_level_values("member").tolist() == [0] * 3 + [1] * 3
    for member in (0, 1):
        assert np.array_equal(frame[member].to_numpy(), np.asarray(sol.x)[member])
    long = sol.to_frame(long=True)
    assert list(long.columns) == ["member", "t", "path", "owner", "value"]
    assert len(long) == 2 * 4 * 3
    last = long[long.member == 1].pivot(index="t", columns="path", values="value")
    assert last[frame[1].columns].equals(frame[1])


def test_members_on_different_output_times_need_the_long_table():
    run = jax.vmap(lambda t: solvers.simulate(Decay(), t, initial="given", integrator=CFG))
    sol = run(jnp.asarray([[0.0, 0.5], [0.0, 1.0]]))
    with pytest.raises(ValueError, match=r"different output times .* to_frame\(long=True\)"):
        sol.to_frame()
    long = sol.to_frame(long=True)
    assert long["t"].tolist() == [0.0, 0.5, 0.0, 1.0] and long["member"].tolist() == [0, 0, 1, 1]
    np.testing.assert_allclose(long["value"], np.exp(-long["t"].to_numpy()), rtol=1e-3)


def test_without_pandas_to_frame_says_how_to_install_it(monkeypatch):
    sol = solvers.simulate(Decay(), jnp.asarray([0.0, 0.5]), initial="given", integrator=CFG)
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    with pytest.raises(ImportError, match=r"TransientSolution.to_frame\(\) needs pandas.*"
                                          r"pip install 'simgraph\[tables\]'"):
        sol.to_frame()
