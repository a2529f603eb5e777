"""Stiff (steel) trusses converge at the default tolerance, and the truss reader and builder
refuse what has no meaning: coincident bar ends, an ignored prescribed displacement, a
component fixed twice, a coordinate that is not a number."""
from __future__ import annotations

import json

import numpy as np
import pytest

from scenarios import truss as tr

EA_STEEL = 2.1e8  # N: 210 GPa * 10 cm^2
P = (1000.0, -2000.0)  # N, on C


def _triangle(ea=EA_STEEL):
    """Statically determinate: A(0,0) pinned, B(4,0) on a roller (uy fixed), C(2,3) loaded."""
    return tr.build_truss({"A": (0.0, 0.0), "B": (4.0, 0.0), "C": (2.0, 3.0)},
                          {"AB": ("A", "B", ea), "AC": ("A", "C", ea), "BC": ("B", "C", ea)},
                          supports={"pinA": ("A", (True, True)), "rolB": ("B", (False, True))},
                          loads={"P": ("C", P)})


def _hand_forces():
    """Small-displacement statics by the method of joints: N_AB, N_AC, N_BC (N)."""
    s = np.sqrt(13.0)
    n_ac, n_bc = np.linalg.solve([[-2 / s, 2 / s], [-3 / s, -3 / s]], -np.asarray(P))
    return -2 / s * n_bc, n_ac, n_bc


def test_steel_triangle_converges_in_a_few_steps_to_the_hand_values():
    # before: 107 iterations, "not converged" at max|F| = 2.5e-8 N (below a 1e-10 N atol that
    # rounding in EA (L - L0) / L0 cannot reach); the forces were already right
    result = tr.solve_truss(_triangle())
    assert bool(result.solution.converged) and int(result.solution.iterations) <= 5
    n_ab, n_ac, n_bc = _hand_forces()  # 1166.67, -300.46, -2103.24 N
    strain = 1e-4  # exact kinematics differ from the hand values by O(strain ~ 1e-5)
    assert result.axial_force("AB") == pytest.approx(n_ab, rel=strain)
    assert result.axial_force("AC") == pytest.approx(n_ac, rel=strain)
    assert result.axial_force("BC") == pytest.approx(n_bc, rel=strain)
    np.testing.assert_allclose(result.reaction("pinA"), [-1000.0, 250.0], atol=0.01)
    np.testing.assert_allclose(result.reaction("rolB"), [0.0, 1750.0], atol=0.01)
    # exact equilibrium of C in the deformed geometry, recomputed here in NumPy
    pos = {n: np.asarray(x) + result.displacement(n) for n, x in
           (("A", (0.0, 0.0)), ("B", (4.0, 0.0)), ("C", (2.0, 3.0)))}
    force = np.asarray(P, dtype=float)
    for bar, other in (("AC", "A"), ("BC", "B")):
        d = pos[other] - pos["C"]
        force += result.axial_force(bar) * d / np.linalg.norm(d)
    assert np.abs(force).max() <= 1e-9 * np.abs(P).max()


def test_steel_sweep_converges_and_the_tolerance_scales_with_the_truss():
    sweep = tr.sweep_truss(_triangle(), "P", np.linspace(0.5, 2.0, 4))
    assert sweep.converged and sweep.iterations <= 5
    np.testing.assert_allclose(sweep.reaction("rolB")[:, 1], 1750.0 * np.linspace(0.5, 2.0, 4),
                               rtol=1e-5)
    eps = float(np.finfo(float).eps)
    steel = tr.force_tolerance(_triangle(), eps)
    floor = eps * EA_STEEL / 3.0 * 4.0  # eps * max(EA / L0) * max|X|: ~5e-8 N
    assert 10 * floor < steel < 1e-8 * np.abs(P).max()  # above rounding, far below the loads
    # a soft truss: 1e-12 of its largest load; the 0.3 N arch as tightly as by the old 1e-10 N
    assert tr.force_tolerance(_triangle(ea=1000.0), eps) == pytest.approx(2000.0 * 1e-12)
    assert tr.force_tolerance(tr.read_truss(tr.EXAMPLE), eps) < 1e-10


NODES = {"a": [0.0, 0.0], "b": [1.0, 0.0], "c": [2.0, 0.0]}


def _doc(**changes):
    doc = {"nodes": dict(NODES),
           "bars": {"ab": {"a": "a", "b": "b", "EA": 100.0}, "bc": {"a": "b", "b": "c", "EA": 100.0}},
           "supports": {"pa": {"node": "a", "fixed": [True, True]},
                        "pc": {"node": "c", "fixed": [True, True]}},
           "loads": {"P": {"node": "b", "force": [1.0, 0.0]}}}
    doc.update(changes)
    return json.dumps(doc) + "\n"  # JSON text, not a path


@pytest.mark.parametrize("changes, match", [
    # coincident ends with an explicit L0: accepted before, then NaN (the hint invited it)
    ({"nodes": {**NODES, "b": [0.0, 0.0]},
      "bars": {"ab": {"a": "a", "b": "b", "EA": 100.0, "L0": 0.5},
               "bc": {"a": "b", "b": "c", "EA": 100.0}}},
     r"\.bars\.ab: bar joins 'a' to itself or to a node at the same place, so its direction "
     r"is undefined\. Connect two nodes at distinct positions \(an L0 does not help\)"),
    # a prescribed displacement on a free component was silently ignored
    ({"supports": {"pa": {"node": "a", "fixed": [True, True]},
                   "pc": {"node": "c", "fixed": [True, False], "prescribed": [0.0, -0.05]}}},
     r"\.supports\.pc\.prescribed: uy = -0\.05 is prescribed on a component the support "
     r"leaves free"),
    # a node pinned twice ran 3003 iterations without a diagnosis
    ({"supports": {"pa": {"node": "a", "fixed": [True, True]},
                   "pc": {"node": "c", "fixed": [True, True]},
                   "again": {"node": "a", "fixed": [False, True]}}},
     r"\.supports\.again\.fixed: uy of node 'a' is already fixed by support 'pa'"),
    ({"supports": {"pa": {"node": "a", "fixed": [True, True]},
                   "pc": {"node": "c", "fixed": [True, True]},
                   "none": {"node": "b", "fixed": [False, False]}}},
     r"\.supports\.none\.fixed: the support fixes neither ux nor uy"),
    ({"loads": {"P": {"node": "b", "force": [10 ** 400, 0.0]}}},
     r"\.loads\.P\.force: expected a list of 2 numbers, got \[1000\d*\.\.\. \(\d+ characters\)"),
    # finite coordinates whose squares overflow: a ValueError (not FormatError) from
    # read_truss claiming "positions are not finite numbers"
    ({"nodes": {**NODES, "c": [2.0, 1e160]}},
     r"\.bars\.bc: its nodes are so far apart \(dx, dy = 1, 1e\+160 m\) that the bar's length"),
    # distinct but so close that the squared length underflows to 0: NaN directions
    ({"nodes": {**NODES, "b": [0.0, 1e-170]}},
     r"\.bars\.ab: its nodes are so close together"),
])
def test_reader_refuses_entries_without_meaning(changes, match):
    with pytest.raises(tr.FormatError, match=match):
        tr.read_truss(_doc(**changes))


def test_reader_accepts_two_supports_on_different_components_of_a_node():
    truss = tr.read_truss(_doc(supports={"pa": {"node": "a", "fixed": [True, True]},
                                         "rx": {"node": "c", "fixed": [True, False]},
                                         "jack": {"node": "c", "fixed": [False, True],
                                                  "prescribed": [0.0, -0.01]}}))
    assert truss.support_names == ("pa", "rx", "jack")


def test_builder_refuses_the_same_entries():
    nodes, bars = {"a": (0.0, 0.0), "b": (1.0, 0.0)}, {"ab": ("a", "b", 100.0)}
    pin = {"pa": ("a", (True, True))}
    with pytest.raises(ValueError, match="same place, so its direction is undefined"):
        tr.build_truss({"a": (0.0, 0.0), "b": (0.0, 0.0)}, {"ab": ("a", "b", 100.0, 0.5)},
                       supports=pin)
    with pytest.raises(ValueError, match="distance is not a finite number"):  # "zero length"
        tr.build_truss({"a": (0.0, 0.0), "b": (float("nan"), 0.0)}, bars, supports=pin)
    with pytest.raises(ValueError, match="prescribes uy = -0.05 on a component it leaves free"):
        tr.build_truss(nodes, bars, supports={**pin, "j": ("b", (True, False), (0.0, -0.05))})
    with pytest.raises(ValueError, match="supports 'pa' and 'again' both fix ux of node 'a'"):
        tr.build_truss(nodes, bars, supports={**pin, "again": ("a", (True, False))})


SQUARE = {"A": (0.0, 0.0), "B": (1.0, 0.0), "C": (1.0, 1.0), "D": (0.0, 1.0)}
FRAME = {"AB": ("A", "B", 1000.0), "BC": ("B", "C", 1000.0), "CD": ("C", "D", 1000.0),
         "DA": ("D", "A", 1000.0)}
PINS = {"pinA": ("A", (True, True)), "pinB": ("B", (True, True))}


@pytest.mark.parametrize("fy, match", [
    (0.0, "is a mechanism: nothing resists a motion of node\\(s\\) 'C', 'D'"),
    (-10.0, "balances only unstably .* 'C', 'D' \\(smallest stiffness -10"),
])
def test_a_frame_without_a_diagonal_is_refused(fy, match):
    # before: "converged" at u = 0 (unloaded: any sway balances) or in the upright position
    # that compressed columns hold only unstably
    loads = {"PC": ("C", (0.0, fy)), "PD": ("D", (0.0, fy))}
    with pytest.raises(tr.MechanismError, match=match) as err:
        tr.solve_truss(tr.build_truss(SQUARE, FRAME, supports=PINS, loads=loads))
    assert err.value.nodes == ("C", "D")
    assert bool(err.value.result.solution.converged)  # the numbers, kept for inspection


def test_a_mechanism_held_by_tension_or_braced_is_solved():
    up = {"PC": ("C", (0.0, 10.0)), "PD": ("D", (0.0, 10.0))}  # columns in tension: stable
    hung = tr.solve_truss(tr.build_truss(SQUARE, FRAME, supports=PINS, loads=up))
    assert hung.axial_force("BC") == pytest.approx(10.0, rel=1e-12)
    braced = tr.solve_truss(tr.build_truss(SQUARE, {**FRAME, "AC": ("A", "C", 1000.0)},
                                           supports=PINS,
                                           loads={"PD": ("D", (0.0, -10.0))}))
    assert bool(braced.solution.converged)


def test_a_node_held_only_by_a_support_that_fixes_nothing_is_refused():
    nodes = {"A": (-1.0, 0.0), "B": (1.0, 0.0), "C": (0.0, 1.0), "Z": (5.0, 5.0)}
    bars = {"ac": ("A", "C", 100.0), "bc": ("B", "C", 100.0)}
    supports = {"pa": ("A", (True, True)), "pb": ("B", (True, True)), "fz": ("Z", (False, False))}
    with pytest.raises(tr.MechanismError, match=r"node\(s\) 'Z'"):
        tr.solve_truss(tr.build_truss(nodes, bars, supports=supports))


def test_a_sweep_marks_and_names_the_points_that_are_no_stable_equilibrium():
    # the frame without a diagonal, swept from tension (stable, hung) to compression
    # (upright, held only unstably): the sweep "converged" everywhere with no word before
    loads = {"PC": ("C", (0.0, -1.0)), "PD": ("D", (0.0, -1.0))}
    frame = tr.build_truss(SQUARE, FRAME, supports=PINS, loads=loads)
    with pytest.warns(UserWarning, match=r"2 of 3 sweep points .* at PC = 0, 5"):
        sweep = tr.sweep_truss(frame, "PC", [-5.0, 0.0, 5.0])
    assert sweep.arrays["converged"].all()
    assert sweep.arrays["stable"].tolist() == [True, False, False]
    assert [p["stable"] for p in sweep.to_json()["sweep"]] == [True, False, False]
    from scenarios.truss._run import _unstable_note  # the CLI's note names them too
    assert _unstable_note("PC", sweep) == [
        "2 of 3 points are no stable equilibrium (a mechanism or unstable compression), at "
        "PC = 0, 5: their values are not meaningful"]
    import warnings
    braced = tr.build_truss(SQUARE, {**FRAME, "AC": ("A", "C", 1000.0)}, supports=PINS,
                            loads=loads)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tr.sweep_truss(braced, "PC", [-5.0, 0.0, 5.0]).arrays["stable"].all()


def test_a_stable_truss_with_bars_of_very_different_stiffness_is_solved():
    """The zero-stiffness test was relative to the largest eigenvalue alone (1e-9): a
    triangle whose bars' EA differ by 1e9 was refused as "a mechanism: nothing resists a
    motion of 'apex'", its smallest stiffness 707 N/m."""
    nodes = {"l": (-1.0, 0.0), "r": (1.0, 0.0), "apex": (0.0, 1.0)}
    supports = {"pl": ("l", (True, True)), "pr": ("r", (True, True))}
    load = {"P": ("apex", (0.0, -1.0))}
    bars = {"stiff": ("l", "apex", 1e12), "soft": ("r", "apex", 1000.0)}
    result = tr.solve_truss(tr.build_truss(nodes, bars, supports=supports, loads=load))
    for bar in bars:   # statics: -1 / (2 sin 45 deg) each; the soft bar's shortening turns it
        assert result.axial_force(bar) == pytest.approx(-0.5 ** 0.5, rel=1e-3)
    np.testing.assert_allclose(result.displacement("apex"), [7.07e-4, -7.07e-4], rtol=2e-3)
    # where precision cannot tell a soft part from a mechanism, the message says so
    bars["stiff"] = ("l", "apex", 1e300)
    with pytest.raises(tr.MechanismError, match="span more than double precision resolves"):
        tr.solve_truss(tr.build_truss(nodes, bars, supports=supports, loads=load))
