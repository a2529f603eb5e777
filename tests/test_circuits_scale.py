"""Large-circuit paths: the reader's fast path for plain cards, the default linear solver by
size and batch, the topology check on a big grid, and the ngspice benchmark's raw reader."""

import numpy as np
import pytest

import solvers
from benchmarks.ngspice_grid import markdown, read_raw
from scenarios.circuits import (ATOL, RTOL, FloatingNodeError, build_circuit, default_solver,
                                grid_netlist, grid_spice, read_netlist)
from scenarios.circuits._netlist import Resistor


def _slow(text: str) -> str:
    """The same deck with every element card forced through the general tokenizer."""
    return "\n".join(line + " ; comment" if line[:1] in "RDV" else line
                     for line in text.splitlines()) + "\n"


def test_plain_cards_read_as_the_general_path_reads_them():
    text = grid_spice(4, spread=3.0, seed=1)
    fast, slow = read_netlist(text), read_netlist(_slow(text))
    assert fast == slow == grid_netlist(4, spread=3.0, seed=1)
    assert fast.nodes == slow.nodes


def test_fast_path_keeps_suffixes_case_and_errors():
    net = read_netlist("t\nR1 a 0 10k\nr2 A b 1meg\nR3 b GND 2.5e+3\nV1 a 0 1\n.end\n")
    assert [e.value for e in net.elements if isinstance(e, Resistor)] == [1e4, 1e6, 2.5e3]
    assert net.nodes == ("a", "b")
    with pytest.raises(Exception, match="duplicate element name"):
        read_netlist("t\nR1 a 0 1\nr1 a 0 2\nV1 a 0 1\n.end\n")
    with pytest.raises(Exception, match="non-zero"):
        read_netlist("t\nR1 a 0 0\nV1 a 0 1\n.end\n")


def test_floating_island_found_on_a_big_grid():
    text = grid_spice(30).replace(".op\n", "RX f1 f2 1\nRY f2 f3 1\n.op\n")
    with pytest.raises(FloatingNodeError) as err:
        build_circuit(read_netlist(text))
    assert err.value.nodes == ("f1", "f2", "f3")


def test_default_solver_is_the_library_choice_at_circuit_tolerances():
    system = solvers.System.build(build_circuit(grid_netlist(12)))
    one = default_solver(system)
    assert (one.atol, one.rtol) == (ATOL, RTOL)
    # MNA patterns are structurally symmetric: minimum degree on A^T + A, not COLAMD
    linear = one.linear_solver
    assert isinstance(linear, solvers.SparseHostLU)
    if linear.factorization == "klu":  # where installed: its own minimum degree, little fill
        from solvers.linear._auto import klu_suits
        assert klu_suits(system.sparsity_pattern())
        return
    assert linear.permc_spec == "MMD_AT_PLUS_A"
    # with threshold pivoting, which keeps the symmetric ordering (strict pivoting undoes it)
    assert linear.diag_pivot_thresh == 0.1
    batch = default_solver(system, batch_size=8).linear_solver
    assert type(batch) is type(solvers.default_method(system, batch_size=8).linear_solver)
    assert isinstance(default_solver().linear_solver, solvers.DenseLU)


def test_host_ordering_is_colamd_for_unsymmetric_patterns():
    from solvers.linear._auto import host_ordering

    assert host_ordering([0, 1, 1, 2], [0, 0, 1, 2]) == "COLAMD"  # lower triangle only
    assert host_ordering([0, 0, 1, 1], [0, 1, 0, 1]) == "MMD_AT_PLUS_A"
    assert host_ordering([0, 0, 1, 1, 1, 2, 2], [0, 1, 0, 1, 2, 1, 2]) == "MMD_AT_PLUS_A"
    # symmetric, but a saddle point (zero diagonal): pivoting would undo a symmetric ordering
    assert host_ordering([0, 0, 1, 1, 2, 2, 3, 3], [1, 2, 0, 3, 0, 3, 1, 2]) == "COLAMD"


def test_read_raw_binary_and_markdown(tmp_path):
    head = ("Title: t\nPlotname: Operating Point\nFlags: real\nNo. Variables: 3\nNo. Points: 1\n"
            "Variables:\n\t0\tv(a)\tvoltage\n\t1\tv(B)\tvoltage\n\t2\ti(v1)\tcurrent\nBinary:\n")
    path = tmp_path / "x.raw"
    path.write_bytes(head.encode() + np.asarray([1.5, -2.0, 1e-3], "<f8").tobytes())
    assert read_raw(path) == {"v(a)": 1.5, "v(b)": -2.0, "i(v1)": 1e-3}
    table = markdown([{"k": 2, "max_dV": 1e-13, "speedup": 12.345}])
    assert "| 2 |" in table and "1.00e-13" in table and "12.3" in table and "n/a" in table


def test_read_raw_points_binary_and_ascii_transients(tmp_path):
    from benchmarks.ngspice_grid import read_raw_points

    head = ("Title: t\nPlotname: Transient Analysis\nFlags: real\nNo. Variables: 2\n"
            "No. Points: 3\nVariables:\n\t0\ttime\ttime\n\t1\tv(OUT)\tvoltage\n")
    rows = np.asarray([[0.0, 1.0], [1e-6, 2.5], [2e-6, -0.5]])
    binary = tmp_path / "b.raw"
    binary.write_bytes((head + "Binary:\n").encode() + rows.astype("<f8").tobytes())
    text = "".join(f"{i}\t{t:.17g}\n\t{v:.17g}\n" for i, (t, v) in enumerate(rows))
    ascii_raw = tmp_path / "a.raw"
    ascii_raw.write_text(head + "Values:\n" + text)
    for path in (binary, ascii_raw):
        got = read_raw_points(path)
        assert set(got) == {"time", "v(out)"}
        np.testing.assert_array_equal(got["time"], rows[:, 0])
        np.testing.assert_array_equal(got["v(out)"], rows[:, 1])
