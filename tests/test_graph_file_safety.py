"""simgraph.load on untrusted files (it never runs code named by the file, checks every part
of the description, answers any damaged file with GraphFileError: fuzzed), and undeclared
attributes refused at assignment."""

import json
import sys
import zipfile

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import simgraph as sg
from graph_models import Mixed, Ring, Shared


def _saved(tmp_path):
    a, b = Ring(jnp.asarray(1.0), label="a"), Ring(np.arange(3.0), label="b")
    a.next, b.next = b, a
    s = Shared(jnp.asarray(2.0))
    graph = Mixed({"w": np.ones((2, 2)), "ref": s, "py": 3}, (s, a), maybe=s, tag=("t", 1))
    path = tmp_path / "g.npz"
    sg.save(path, graph)
    return path, graph


def _rewrite(path, out, edit):
    """Write ``out``: ``path`` with its description passed through ``edit(meta)``."""
    data = dict(np.load(path))
    meta = json.loads(bytes(data["__simgraph__"]).decode())
    meta = edit(meta)
    data["__simgraph__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez(out, **data)
    return out


def _same_graph(a, b) -> bool:
    la, ta = jax.tree_util.tree_flatten(a)
    lb, tb = jax.tree_util.tree_flatten(b)
    return ta == tb and all(np.array_equal(x, y, equal_nan=True) for x, y in zip(la, lb))


def test_a_class_named_by_the_file_is_never_imported(tmp_path, monkeypatch):
    (tmp_path / "evilmod.py").write_text(
        f"open({str(tmp_path / 'ran')!r}, 'w').write('ran')\nclass X: pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    path, _ = _saved(tmp_path)

    def point_at(cls_name):
        def edit(meta):
            meta["nodes"][0]["class"] = cls_name
            return meta
        return edit

    with pytest.raises(sg.GraphFileError, match="not defined in this process.*never imports"):
        sg.load(_rewrite(path, tmp_path / "evil.npz", point_at("evilmod:X")))
    assert not (tmp_path / "ran").exists() and "evilmod" not in sys.modules


def test_this_module_is_not_imported(tmp_path, capsys):
    path, _ = _saved(tmp_path)
    edit = lambda meta: {**meta, "nodes": [{**meta["nodes"][0], "class": "this:X"}] + meta["nodes"][1:]}
    sys.modules.pop("this", None)
    with pytest.raises(sg.GraphFileError, match="this:X is not defined"):
        sg.load(_rewrite(path, tmp_path / "this.npz", edit))
    assert "this" not in sys.modules and "Zen" not in capsys.readouterr().out


def test_classes_defined_in_this_process_load_without_classes_argument(tmp_path):
    class Local(sg.ReffableTreeNode):
        value: jax.Array

    sg.save(tmp_path / "l.npz", Local(jnp.arange(3.0)))
    np.testing.assert_array_equal(sg.load(tmp_path / "l.npz").value, np.arange(3.0))


def _edit_first_ref(meta, value):
    meta["nodes"][0]["fields"]["maybe"] = {"t": "ref", "v": value}
    return meta


@pytest.mark.parametrize("edit, message", [
    (lambda m: _edit_first_ref(m, 99), r"\.maybe: reference 99, but the file has nodes #0\.\.#3"),
    (lambda m: _edit_first_ref(m, -1), r"reference -1"),
    (lambda m: _edit_first_ref(m, True), r"reference True"),
    (lambda m: {**m, "nodes": [{k: v for k, v in n.items() if k != "class"} for n in m["nodes"]]},
     r"node #0 must have a 'class' name"),
    (lambda m: {**m, "nodes": []}, "lists no nodes"),
    (lambda m: [1, 2], "not a simgraph graph file"),
    (lambda m: _nest(m, 400), r"nesting deeper than 64"),
    (lambda m: _set_field(m, "maybe", {"t": "str", "v": "hello"}),
     r"\.maybe: a 'str' value where a traced field belongs"),
    (lambda m: _set_field(m, "maybe", {"t": "array", "k": "__simgraph__"}), r"array '__simgraph__' is missing"),
    (lambda m: _set_field(m, "maybe", {"t": "int", "v": "3"}), r"the tag 'int' holding a str"),
    (lambda m: _set_field(m, "maybe", {"t": "pickle", "v": 1}), r"a 'pickle' value"),
    (lambda m: _set_field(m, "maybe", 7), r"a value without a type tag"),
    # a pair of numbers too large for a float raised OverflowError
    (lambda m: _set_field(m, "maybe", {"t": "complex", "v": [10 ** 400, 1.0]}), r"a 'complex' value"),
])
def test_malformed_descriptions_are_named(tmp_path, edit, message):
    path, _ = _saved(tmp_path)
    with pytest.raises(sg.GraphFileError, match=message):
        sg.load(_rewrite(path, tmp_path / "bad.npz", edit))


def _set_field(meta, name, value):
    meta["nodes"][0]["fields"][name] = value
    return meta


def _nest(meta, depth):
    value = {"t": "none"}
    for _ in range(depth):
        value = {"t": "list", "v": [value]}
    return _set_field(meta, "maybe", value)


def test_a_string_array_is_not_numeric_state(tmp_path):
    path, _ = _saved(tmp_path)
    data = dict(np.load(path))
    key = next(k for k in data if k != "__simgraph__")
    data[key] = np.array(["a", "b"])
    np.savez(tmp_path / "s.npz", **data)
    with pytest.raises(sg.GraphFileError, match="not a numeric array"):
        sg.load(tmp_path / "s.npz")


def _saved_bfloat16(tmp_path):
    path = tmp_path / "b.npz"
    sg.save(path, Shared(jnp.asarray([1.0, 2.5], dtype=jnp.bfloat16)))
    return path


def _set_dtype(meta, name):
    meta["nodes"][0]["fields"]["v"]["dtype"] = name
    return meta


@pytest.mark.parametrize("name, message", [
    ("numpy.lib:evil", r"\.v: array 'a0' has dtype 'numpy.lib:evil', which this simgraph cannot "
                       r"read \(it reads bfloat16, .*upgrade ml_dtypes"),
    (["bfloat16"], r"has dtype \['bfloat16'\], which"),
    ("float8_e4m3fn", r"array 'a0' holds uint16, but float8_e4m3fn is stored as uint8"),
])
def test_dtype_names_are_looked_up_never_imported(tmp_path, name, message):
    # a dtype name is only a key into simgraph's own table of ml_dtypes types
    path = _saved_bfloat16(tmp_path)
    with pytest.raises(sg.GraphFileError, match=message):
        sg.load(_rewrite(path, tmp_path / "bad.npz", lambda m: _set_dtype(m, name)))


def test_named_dtypes_mark_the_file_version_2(tmp_path):
    # an older simgraph must refuse such a file, not read the stored bits as uint16
    path, graph = _saved(tmp_path)
    assert json.loads(bytes(np.load(path)["__simgraph__"]).decode())["version"] == 1
    meta = json.loads(bytes(np.load(_saved_bfloat16(tmp_path))["__simgraph__"]).decode())
    assert meta["version"] == 2 and meta["nodes"][0]["fields"]["v"]["dtype"] == "bfloat16"
    assert _same_graph(sg.load(path), graph)  # version 1 files still load


def test_missing_file_directory_and_random_bytes(tmp_path):
    with pytest.raises(sg.GraphFileError, match="no such file"):
        sg.load(tmp_path / "nope.npz")
    with pytest.raises(sg.GraphFileError, match="not a simgraph graph file"):
        sg.load(tmp_path)
    (tmp_path / "noise.npz").write_bytes(np.random.default_rng(0).bytes(300))
    with pytest.raises(sg.GraphFileError) as info:
        sg.load(tmp_path / "noise.npz")
    assert "pickle" not in str(info.value)
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with zipfile.ZipFile(tmp_path / "obj.npz", "w") as z:
        z.write(tmp_path / "obj.npy", "__simgraph__.npy")
    with pytest.raises(sg.GraphFileError) as info:
        sg.load(tmp_path / "obj.npz")
    assert "allow_pickle" not in str(info.value)


def test_a_failed_load_leaves_later_loads_intact(tmp_path):
    path, graph = _saved(tmp_path)
    with pytest.raises(sg.GraphFileError):
        sg.load(_rewrite(path, tmp_path / "bad.npz", lambda m: _edit_first_ref(m, 99)))
    assert _same_graph(sg.load(path), graph)


def _replace_entry(path, out, name, edit):
    """Write ``out``: ``path`` with the bytes of zip entry ``name`` passed through ``edit``."""
    with zipfile.ZipFile(path) as z:
        entries = {n: z.read(n) for n in z.namelist()}
    entries[name] = edit(entries[name])
    with zipfile.ZipFile(out, "w") as z:
        for n, raw in entries.items():
            z.writestr(n, raw)
    return out


def _declare_shape(raw: bytes, shape: str) -> bytes:
    """An .npy entry with its header's shape replaced (the header keeps its length)."""
    header = raw[10:raw.index(b"\n") + 1].decode("latin1")
    start, stop = header.index("'shape': ") + 9, header.index("), ") + 1
    edited = (header[:start] + shape + header[stop:-1]).ljust(len(header) - 1) + "\n"
    return raw[:10] + edited.encode("latin1") + raw[10 + len(header):]


@pytest.mark.parametrize("name", ["a0.npy", "__simgraph__.npy"])
def test_an_edited_array_header_or_entry_is_a_graph_file_error(tmp_path, name):
    """numpy allocates an .npy header's shape before reading the data (a header declaring
    petabytes raised MemoryError), and reads an entry without the .npy magic as bytes (an
    AttributeError on its dtype)."""
    path, graph = _saved(tmp_path)
    huge = _replace_entry(path, tmp_path / "huge.npz", name,
                          lambda raw: _declare_shape(raw, "(1000000000000000,)"))
    with pytest.raises(sg.GraphFileError, match="header declares shape"):
        sg.load(huge)
    plain = _replace_entry(path, tmp_path / "plain.npz", name, lambda raw: b"not an array")
    with pytest.raises(sg.GraphFileError, match="magic string"):
        sg.load(plain)
    assert _same_graph(sg.load(path), graph)


_FUZZ = settings(max_examples=150, deadline=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture])


@_FUZZ
@given(data=st.data())
def test_fuzz_truncations_and_byte_flips(tmp_path, data):
    path, graph = _saved(tmp_path)
    raw = bytearray(path.read_bytes())
    if data.draw(st.booleans(), label="truncate"):
        raw = raw[: data.draw(st.integers(0, len(raw) - 1), label="cut")]
    else:
        for _ in range(data.draw(st.integers(1, 4), label="flips")):
            i = data.draw(st.integers(0, len(raw) - 1), label="at")
            raw[i] ^= data.draw(st.integers(1, 255), label="mask")
    damaged = tmp_path / "damaged.npz"
    damaged.write_bytes(bytes(raw))
    try:
        loaded = sg.load(damaged)
    except sg.GraphFileError:
        return
    assert _same_graph(loaded, graph)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10) | st.floats(allow_nan=False) | st.text(max_size=6)
    | st.sampled_from(["ref", "array", "list", "tuple", "dict", "str", "int", "a0", "t", "v", "k"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["t", "v", "k", "scalar", "class", "fields", "static"]), inner, max_size=3),
    max_leaves=8)


def _paths(value, prefix=()):
    yield prefix
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        yield from _paths(v, prefix + (k,))


@_FUZZ
@given(data=st.data())
def test_fuzz_edited_descriptions(tmp_path, data):
    path, _ = _saved(tmp_path)

    def edit(meta):
        where = data.draw(st.sampled_from(list(_paths(meta["nodes"]))[1:]), label="where")
        parent = meta["nodes"]
        for k in where[:-1]:
            parent = parent[k]
        if isinstance(parent, dict) and data.draw(st.booleans(), label="delete"):
            del parent[where[-1]]
        else:
            parent[where[-1]] = data.draw(_JSON, label="value")
        return meta

    try:
        loaded = sg.load(_rewrite(path, tmp_path / "edited.npz", edit))
    except sg.GraphFileError:
        return
    # An edit the checks accept must give a usable graph: it flattens and saves again.
    jax.tree_util.tree_flatten(loaded)
    sg.save(tmp_path / "again.npz", loaded)


def test_undeclared_attributes_are_refused_where_they_are_set():
    s = Shared(jnp.asarray(1.0))
    with pytest.raises(AttributeError, match=r"Shared has no field 'offset' \(declared fields: v"):
        s.offset = 1.0
    assert "offset" not in vars(s)
    s.v = jnp.asarray(2.0)  # declared fields stay assignable
    assert float(s.v) == 2.0


def test_properties_with_setters_stay_assignable():
    class Celsius(sg.ReffableTreeNode):
        kelvin: jax.Array

        @property
        def celsius(self):
            return self.kelvin - 273.15

        @celsius.setter
        def celsius(self, value):
            self.kelvin = value + 273.15

    c = Celsius(jnp.asarray(300.0))
    c.celsius = 0.0
    assert float(c.kelvin) == pytest.approx(273.15)
