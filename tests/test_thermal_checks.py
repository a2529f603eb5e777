"""Thermal networks the library refuses rather than "solves": parts with no fixed temperature,
names that results would confuse, negative conductances, numbers no float can hold."""
from __future__ import annotations

import json

import pytest

from scenarios import thermal as th

BASE = {"nodes": {"plate": 300.0, "a": 350.0, "b": 360.0},
        "conduction": {"c": {"a": "a", "b": "b", "G": 1.0}},
        "fixed": {"s": {"node": "plate", "T": 300.0}}}


def _read(doc):
    return th.read_thermal(json.dumps(doc) + "\n")  # text, not a path


def test_reader_names_each_part_without_a_fixed_temperature():
    # a, b linked only to each other: the old reader accepted it (one fixed node in the file)
    # and the solve reported "converged" at the average of the start temperatures, 355 K
    with pytest.raises(th.FormatError, match=r"\.fixed: 1 connected part.* \['a', 'b'\]"):
        _read(BASE)
    doc = dict(BASE, nodes={"plate": 300.0, "floating": 1234.0, "a": 300.0, "b": 300.0})
    with pytest.raises(th.FormatError, match=r"2 connected part.*\['floating'\]; \['a', 'b'\]"):
        _read(doc)
    linked = dict(BASE, radiation={"r": {"a": "plate", "b": "a", "area": 1.0,
                                         "emissivity": [0.9, 0.9]}})
    assert _read(linked).node_names == ("plate", "a", "b")  # radiation links the part


def test_builder_and_solver_refuse_a_floating_part():
    kw = dict(conduction={"c": ("a", "b", 1.0)}, fixed={"s": ("plate", 300.0)})
    with pytest.raises(th.IslandError, match=r"\['a', 'b'\]") as err:
        th.build_thermal({"plate": 300.0, "a": 350.0, "b": 360.0}, **kw)
    assert err.value.nodes == ("a", "b")
    # a heat capacity gives the part a transient, but its steady state is still undefined
    net = th.build_thermal({"plate": 300.0, "a": 350.0, "b": 360.0},
                           capacities={"m": ("a", 10.0)}, **kw)
    with pytest.raises(th.IslandError, match="no fixed-temperature boundary"):
        th.solve_thermal(net)
    with pytest.raises(th.IslandError):
        th.sweep_thermal(net, "c", [1.0, 2.0])
    with pytest.raises(th.IslandError):
        th.simulate_thermal(net, [0.0, 1.0], initial="dc")
    # a conductance of exactly 0 joins nothing: b floats
    with pytest.raises(th.IslandError, match=r"\['b'\]"):
        th.build_thermal(["a", "b"], conduction={"ab": ("a", "b", 0.0)}, fixed={"s": ("a", 1.0)})


@pytest.mark.parametrize("edit, match", [
    # a conduction and a radiation link "link": q[link] showed one, lost the other
    (lambda d: d.update(radiation={"c": {"a": "plate", "b": "a", "area": 1.0,
                                         "emissivity": [0.9, 0.9]}}),
     r'\.radiation\.c: the name "c" is also used in \.conduction'),
    # a load and a fixed boundary "s": --sweep s=... silently took the load
    (lambda d: d.update(loads={"s": {"node": "a", "Q": 1.0}}),
     r'\.loads\.s: the name "s" is also used in \.fixed'),
    (lambda d: d.update(nodes=["plate", "a", "a", "b"]), r"\.nodes: node 'a' is listed twice"),
    (lambda d: d["conduction"]["c"].update(G=-2.0), r"\.conduction\.c\.G: expected a positive"),
    (lambda d: d["conduction"]["c"].update(G=0), r"\.conduction\.c\.G: expected a positive"),
    (lambda d: d["fixed"]["s"].update(T=10 ** 400), r"\.fixed\.s\.T: expected a positive number, "
                                                    r"got 1000000\d*\.\.\. \(401 characters\)"),
    # a link from a node to itself was accepted and carried nothing (a typo for another node)
    (lambda d: d["conduction"]["c"].update(b="a"), r"\.conduction\.c\.b: the link joins 'a' to "
                                                   r"itself, so it carries no heat"),
    (lambda d: d.update(radiation={"r": {"a": "b", "b": "b", "area": 1.0,
                                         "emissivity": [0.9, 0.9]}}),
     r"\.radiation\.r\.b: the link joins 'b' to itself"),
    # two temperatures for one node: a StructurallySingularError naming .boundaries[1]
    (lambda d: d["fixed"].update(t={"node": "plate", "T": 310.0}),
     r"\.fixed\.t\.node: node 'plate' is already held by fixed 's'"),
])
def test_reader_refuses_ambiguous_or_meaningless_entries(edit, match):
    doc = json.loads(json.dumps(BASE))
    doc["conduction"]["link"] = {"a": "plate", "b": "a", "G": 1.0}  # anchor the a-b part
    edit(doc)
    with pytest.raises(th.FormatError, match=match):
        _read(doc)


def test_builder_refuses_repeated_names_and_negative_conductance():
    fixed = {"x": ("b", 300.0)}
    with pytest.raises(ValueError, match="'link' is used by both conduction and radiation"):
        th.build_thermal(["a", "b"], conduction={"link": ("a", "b", 0.5)},
                         radiation={"link": ("a", "b", 1.0, (0.9, 0.9))}, fixed=fixed)
    with pytest.raises(ValueError, match="'x' is used by both fixed and loads"):
        th.build_thermal(["a", "b"], conduction={"ab": ("a", "b", 0.5)}, fixed=fixed,
                         loads={"x": ("a", 1.0)})
    with pytest.raises(ValueError, match="node 'a' is listed twice"):
        th.build_thermal(["a", "a", "b"], conduction={"ab": ("a", "b", 0.5)}, fixed=fixed)
    with pytest.raises(ValueError, match="negative conductance G = -2.0"):
        th.build_thermal(["a", "b"], conduction={"ab": ("a", "b", -2.0)}, fixed=fixed)
    with pytest.raises(ValueError, match="conduction 'aa' joins 'a' to itself"):
        th.build_thermal(["a", "b"], conduction={"ab": ("a", "b", 0.5), "aa": ("a", "a", 1.0)},
                         fixed=fixed)
    with pytest.raises(ValueError, match="fixed 'y' holds node 'b', which fixed 'x' already"):
        th.build_thermal(["a", "b"], conduction={"ab": ("a", "b", 0.5)},
                         fixed={**fixed, "y": ("b", 310.0)})


def test_a_key_given_twice_in_one_object_is_refused_at_its_line():
    # json.loads keeps the last of two "link" entries: one conductance vanished silently
    text = ('{"nodes": ["a", "b"],\n "conduction": {"link": {"a": "a", "b": "b", "G": 1},\n'
            '  "link": {"a": "a", "b": "b", "G": 2}},\n "fixed": {"s": {"node": "a", "T": 300}}}\n')
    with pytest.raises(th.FormatError, match=r"<json>:3: the key 'link' appears twice in one "
                       r"object \(JSON would keep only the last\)"):
        th.read_thermal(text)
