"""Network maps: EPANET coordinates and vertices read as data, Net1 drawn at its file
coordinates and through its link vertices, a computed layout for networks without any, the
power-flow map, the map from the command line."""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.figure import Figure

from scenarios import powerflow, water
from scenarios.water import FormatError
from scenarios._layout import graph_layout
from scenarios.water._map import draw_water_map

NET1 = water.EXAMPLE.read_text()


def _collection(fig, gid):
    return next(c for ax in fig.axes for c in ax.collections if c.get_gid() == gid)


def _net1_coordinates() -> dict:
    section = NET1.split("[COORDINATES]")[1].split("[")[0]
    rows = [line.split() for line in section.splitlines() if line.strip() and line[0] != ";"]
    return {name: (float(x), float(y)) for name, x, y in rows}


def test_reader_keeps_coordinates_and_vertices_as_plain_data():
    text = NET1.replace("[VERTICES]\n", "[VERTICES]\n 10  25.5  72\n 10  27  71.5\n 12 60 70\n")
    net = water.read_inp(text)
    assert net.coordinates == _net1_coordinates()
    assert net.vertices == {"10": ((25.5, 72.0), (27.0, 71.5)), "12": ((60.0, 70.0),)}
    assert all(type(v) is float for xy in net.coordinates.values() for v in xy)
    for bad, message in (("[COORDINATES]\n 99  1  2\n",
                          r":\d+: \[COORDINATES\] names unknown node '99'"),
                         ("[VERTICES]\n 10  1  x\n", r":\d+: bad number 'x'"),
                         ("[VERTICES]\n P9  1  2\n", "unknown link 'P9'")):
        with pytest.raises(FormatError, match=message):
            water.read_inp(NET1.replace("[LABELS]", bad + "[LABELS]"))


_TOKENS = st.sampled_from(["10", "2", "9", "110", "P9", "1.5", "-3e2", "x", "1e", ";", '"'])


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["COORDINATES", "VERTICES"]),
       st.lists(st.lists(_TOKENS, min_size=1, max_size=4), max_size=4))
def test_fuzzed_map_sections_read_or_raise_format_error(section, rows):
    text = NET1.replace("[LABELS]", f"[{section}]\n" + "\n".join(" ".join(r) for r in rows)
                        + "\n[LABELS]")
    try:
        net = water.read_inp(text)
    except FormatError as err:
        assert str(err).startswith("<string>:")
        return
    points = [*net.coordinates.values(), *(p for v in net.vertices.values() for p in v)]
    assert all(len(p) == 2 and all(type(c) is float for c in p) for p in points)


def test_net1_map_puts_the_nodes_at_the_file_coordinates():
    model = water.build_water(water.read_inp(water.EXAMPLE))
    result = model.solve()
    fig = Figure()
    draw_water_map(fig, result)
    names = model.network.node_names
    coordinates = _net1_coordinates()
    offsets = np.asarray(_collection(fig, "nodes").get_offsets())
    assert offsets.tolist() == [list(coordinates[n]) for n in names]
    colours = np.ma.filled(_collection(fig, "nodes").get_array(), np.nan)
    assert colours[names.index("22")] == result.pressure("22")
    assert np.isnan(colours[names.index("9")])  # the reservoir is a marker, not a pressure
    links = _collection(fig, "links")
    first = model.network.pipes[0]
    assert links.get_segments()[0].tolist() == [list(coordinates[first.start]),
                                               list(coordinates[first.end])]
    assert links.get_array()[0] == pytest.approx(1e3 * abs(result.flow(first.name)))
    labels = {t.get_text() for ax in fig.axes for t in ax.texts}
    assert set(names) <= labels
    assert any("pressure (m)" in ax.get_ylabel() for ax in fig.axes)  # the colour bars
    assert any("|flow| (L/s)" in ax.get_ylabel() for ax in fig.axes)


def test_a_network_without_coordinates_gets_a_computed_layout():
    text = re.sub(r"\[COORDINATES\].*?\n\[", "[", NET1, flags=re.S)
    model = water.build_water(water.read_inp(text))
    fig = Figure()
    draw_water_map(fig, model.solve())
    xy = np.asarray(_collection(fig, "nodes").get_offsets())
    assert xy.shape == (11, 2) and np.isfinite(xy).all()
    assert len({tuple(np.round(p, 6)) for p in xy}) == 11  # no two nodes on one spot
    assert "computed" in fig.axes[0].get_xlabel()


def test_layout_keeps_graph_neighbours_closer_than_far_nodes():
    ring = [(i, (i + 1) % 12) for i in range(12)]
    xy = graph_layout(12, ring)
    gap = lambda a, b: np.linalg.norm(xy[a] - xy[b])  # noqa: E731
    assert max(gap(a, b) for a, b in ring) < min(gap(i, (i + 6) % 12) for i in range(12))
    assert np.array_equal(xy, graph_layout(12, ring))  # deterministic


@pytest.mark.parametrize("n, edges", [(2, [(0, 1)]), (3, [(0, 1), (1, 2), (2, 0)])])
def test_layout_of_small_dense_graphs(n, edges):
    """SciPy solves small dense graphs with Floyd-Warshall, which refused the COO matrix:
    '--plot' of a two-pipe network without coordinates failed with 'csgraph must be lil,
    csr, or csc format'."""
    xy = graph_layout(n, edges)
    assert xy.shape == (n, 2) and np.isfinite(xy).all()
    assert len({tuple(np.round(p, 6)) for p in xy}) == n


def test_power_flow_map_colours_buses_by_voltage(tmp_path):
    report = powerflow.run(powerflow.EXAMPLE)
    fig = Figure(layout="constrained")
    report.draw(fig)
    nodes = _collection(fig, "nodes")
    assert nodes.get_array().tolist() == list(report.json["vm"].values())
    loading = report.tables()["branch"]["loading_percent"].to_numpy()
    assert _collection(fig, "links").get_array().tolist() == loading.tolist()
    fig.savefig(tmp_path / "map.png")
    assert (tmp_path / "map.png").read_bytes()[:4] == b"\x89PNG"


def test_too_large_for_a_layout_draws_the_profile_and_the_histogram(monkeypatch):
    import scenarios._maps
    monkeypatch.setattr(scenarios._maps, "MAX_LAYOUT_NODES", 5)
    report = powerflow.run(powerflow.EXAMPLE)
    fig = Figure()
    report.draw(fig)
    profile, histogram = fig.axes
    assert profile.lines[0].get_ydata().tolist() == list(report.json["vm"].values())
    assert sum(p.get_height() for p in histogram.patches) == 9  # every rated branch
    assert "too many nodes (9)" in fig._suptitle.get_text()


def _with_bends(tmp_path):
    """Net1 with pipe 10 bent through two vertices and pipe 12 through one."""
    path = tmp_path / "bent.inp"
    path.write_text(NET1.replace("[VERTICES]\n", "[VERTICES]\n 10  25  75\n 10  28  68\n"
                                 " 12  60  75\n"))
    return path


def _segment(fig, model, link_name):
    names = [link.name for link in (*model.network.pipes, *model.network.pumps)]
    return _collection(fig, "links").get_segments()[names.index(link_name)].tolist()


def test_a_link_with_vertices_is_drawn_through_them(tmp_path):
    model = water.build_water(water.read_inp(_with_bends(tmp_path)))
    fig = Figure()
    draw_water_map(fig, model.solve())
    xy = _net1_coordinates()
    pipes = {p.name: p for p in model.network.pipes}
    ten, twelve = pipes["10"], pipes["12"]
    assert _segment(fig, model, "10") == [list(xy[ten.start]), [25.0, 75.0], [28.0, 68.0],
                                          list(xy[ten.end])]
    assert _segment(fig, model, "12") == [list(xy[twelve.start]), [60.0, 75.0],
                                          list(xy[twelve.end])]
    assert _segment(fig, model, "11") == [list(xy[pipes["11"].start]),
                                          list(xy[pipes["11"].end])]  # straight


def test_cli_plot_of_a_water_run_writes_the_map(tmp_path, monkeypatch, capsys):
    import scenarios.water._run as water_run
    from scenarios._cli import main

    drawn = []

    def spy(fig, result, title=""):
        draw_water_map(fig, result, title)
        drawn.append((fig, result.model))

    monkeypatch.setattr(water_run, "draw_water_map", spy)
    plot = tmp_path / "net.png"
    assert main(["run", "water", "--input", str(_with_bends(tmp_path)), "--plot",
                 str(plot)]) == 0
    assert f"wrote plot {plot}" in capsys.readouterr().out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (fig, model), = drawn
    offsets = np.asarray(_collection(fig, "nodes").get_offsets()).tolist()
    assert offsets == [list(_net1_coordinates()[n]) for n in model.network.node_names]
    assert _segment(fig, model, "10")[1:3] == [[25.0, 75.0], [28.0, 68.0]]
