"""Per-class flatten code, generated once per node class.

Flattening runs on every call of a jitted function, so its per-node cost is the dispatch
overhead users pay. A generic loop over fields spends most of its time on bookkeeping;
a function specialised to one class's fields (names and reference kinds inlined) is
several times faster and keeps the semantics of ``_walk`` exactly.
"""

from __future__ import annotations

from . import _fields


def make_walker(cls: type, refkinds: tuple[int, ...], env: dict):
    """Compile ``walker(node, root, index, nodes, children, entries)`` for ``cls``."""
    layout = cls.__sg_layout__
    lines = ["def walker(node, root, index, nodes, children, entries):", "    d = node.__dict__", "    try:"]
    specs = []
    for j, (name, refkind) in enumerate(zip(layout.dynamic, refkinds)):
        lines.append(f"        v = d[{name!r}]")
        lines.extend("        " + line for line in _field_code(j, name, refkind))
        specs.append(f"s{j}")
    statics = ", ".join(f"d[{n!r}]" for n in layout.static)
    lines.append(f"        st = ({statics}{',' if layout.static else ''})")
    lines.append("    except KeyError as e:")
    lines.append("        raise missing_field(root, node, e.args[0]) from None")
    if layout.static:
        lines.append("    try:")
        lines.append("        hash(st)")
        lines.append("    except TypeError:")
        lines.append(f"        check_hashable(root, node, {layout.static!r}, st)")
    lines.append(f"    entries.append((CLS, st, ({', '.join(specs)}{',' if specs else ''})))")
    namespace = dict(env, CLS=cls)
    exec("\n".join(lines), namespace)  # noqa: S102 - code built from field names only
    return namespace["walker"]


_REF = [
    "k = index.get(id(v))",
    "if k is None:",
    "    k = index[id(v)] = len(nodes)",
    "    nodes.append(v)",
]


def _field_code(j: int, name: str, refkind: int) -> list[str]:
    ref = [f"    {line}" for line in _REF] + [f"    s{j} = k"]
    if refkind == _fields.REF_REQUIRED:
        return ["if isinstance(v, BASE):", *ref, "else:", f"    raise not_a_node(root, node, {name!r}, v)"]
    if refkind == _fields.REF_OPTIONAL:
        return [
            "if v is None:", "    children.append(v)", f"    s{j} = -1",
            "elif isinstance(v, BASE):", *ref,
            "else:", f"    raise not_a_node(root, node, {name!r}, v)",
        ]
    return [
        "if type(v) in LEAF or isinstance(v, ARRAY):", "    children.append(v)", f"    s{j} = -1",
        "elif isinstance(v, BASE):", *ref,
        "else:", f"    s{j} = container(v, index, nodes, children, BASE)",
    ]
