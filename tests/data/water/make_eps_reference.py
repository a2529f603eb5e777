"""Make the EPANET 2.2 extended-period references ``eps_<net>.json`` (not imported by tests).

Rerun (needs wntr, which bundles the EPANET 2.2 library; keep it out of the project):

    python3 -m venv /tmp/wntr-venv && /tmp/wntr-venv/bin/pip install wntr six
    /tmp/wntr-venv/bin/python tests/data/water/make_eps_reference.py

For each network it writes ``eps_<net>.json`` (the file's ACCURACY, 0.001: EPANET as users run
it) and ``eps_<net>_tight.json`` (ACCURACY 1e-8, EPANET's smallest, and 1000 trials: EPANET's
own solution error out of the way, for tight comparisons).
It steps EPANET's own hydraulic loop (ENinitH / ENrunH / ENnextH) over 24 h and records, at
every hydraulic time EPANET solves (report times and the intermediate ones it inserts for
tanks and controls): the time, the step taken next, tank levels, heads and flows of the listed
nodes and links (all of them for Net1) and link statuses (1 open, 0 closed), in SI (m, m3/s;
flows converted from the file units with the exact factors the reader uses).
"""
import json
import os
from pathlib import Path

import ctypes

import wntr
from wntr.epanet.toolkit import ENepanet

HERE = Path(__file__).resolve().parent
NETWORKS = Path(wntr.__file__).resolve().parent / "library" / "networks"
FT, GPM = 0.3048, 3.785411784e-3 / 60.0
EN_ELEVATION, EN_HEAD, EN_FLOW, EN_STATUS = 0, 10, 8, 11
EN_NODECOUNT, EN_LINKCOUNT, EN_TANK, EN_DURATION = 0, 2, 2, 0
EN_TRIALS, EN_ACCURACY = 0, 1
TIGHT = 1e-8  # EPANET's smallest ACCURACY (relative flow change at convergence)
CASES = {  # network: (input file, nodes, links); None: every node/link
    "Net1": (HERE / "Net1.inp", None, None),
    "Net2": (HERE / "Net2.inp", ["1", "10", "20", "30", "35"], ["1", "10", "29", "40"]),
    "Net3": (HERE / "Net3.inp", ["10", "61", "123", "189", "60", "River", "Lake"],
             ["10", "335", "330", "20", "40", "50", "101"]),
}

_NO_CONTROLS = [[" LINK 9 OPEN IF NODE 2 BELOW 110", ""],
                [" LINK 9 CLOSED IF NODE 2 ABOVE 140", ""]]
#: Net1 edited so that EPANET's status checks act (the tests apply the same "edits"):
#: a tank that fills (pipe 110 held closed), a pump at its shutoff head (XHEAD), a tank with a
#: volume curve, pump-speed and reservoir-head patterns with clock and time controls, pump
#: controls on a junction's pressure (psi), a check valve.
EDITED = {
    "Net1_full_tank": _NO_CONTROLS,
    "Net1_xhead": _NO_CONTROLS + [["120         \t100         \t150",
                                   "290         \t100         \t300"]],
    "Net1_volume_curve": [["50.5        \t0           \t                \t;",
                           "50.5        \t0           \tV2              \t;"],
                          [" 1               \t1500        \t250         ",
                           " 1               \t1500        \t250         \n V2 0 0\n V2 100 "
                           "150000\n V2 125 230000\n V2 150 330000"]],
    "Net1_patterns": [[" 9               \t800         \t                \t;",
                       " 9               \t800         \tR9              \t;"],
                      ["HEAD 1\t;", "HEAD 1 PATTERN P9\t;"],
                      [";Demand Pattern", " P9 1 1.1 1.2 0 0.9 1 1 1.15 1 0 1 1\n"
                       " R9 1 1.01 0.99 1 1.02 1"],
                      [" LINK 9 CLOSED IF NODE 2 ABOVE 140", " LINK 9 CLOSED IF NODE 2 ABOVE 140"
                       "\n LINK 111 CLOSED AT CLOCKTIME 3 PM\n LINK 111 OPEN AT TIME 19.5"]],
    "Net1_pressure": [[" LINK 9 OPEN IF NODE 2 BELOW 110", " LINK 9 OPEN IF NODE 12 BELOW 113"],
                      [" LINK 9 CLOSED IF NODE 2 ABOVE 140", " LINK 9 CLOSED IF NODE 12 ABOVE 125"]],
    "Net1_cv": [["100         \t0           \tOpen  \t;", "100         \t0           \tCV    \t;"]],
}


def edited(name: str, edits: list) -> Path:
    """A copy of Net1.inp with ``edits`` ([old, new] text replacements) in /tmp."""
    text = (HERE / "Net1.inp").read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    path = Path("/tmp") / f"{name}.inp"
    path.write_text(text)
    return path


def link_id(en, index: int) -> str:
    """The link's id (wntr's toolkit wraps EN_getnodeid but not EN_getlinkid)."""
    buf = ctypes.create_string_buffer(64)
    en.ENlib.EN_getlinkid(en._project, index, ctypes.byref(buf))
    return buf.value.decode()


def record(name: str, path: Path, nodes, links, accuracy: float | None,
           duration_s: int = 24 * 3600) -> dict:
    en = ENepanet()
    en.ENopen(str(path), os.devnull, "")
    en.ENsettimeparam(EN_DURATION, duration_s)
    if accuracy is not None:
        for option, value in ((EN_ACCURACY, accuracy), (EN_TRIALS, 1000)):
            code = en.ENlib.EN_setoption(en._project, option, ctypes.c_double(value))
            assert code == 0, f"EN_setoption({option}) failed with code {code}"
    node_ids = [en.ENgetnodeid(i) for i in range(1, en.ENgetcount(EN_NODECOUNT) + 1)]
    link_ids = [link_id(en, i) for i in range(1, en.ENgetcount(EN_LINKCOUNT) + 1)]
    tanks = [n for i, n in enumerate(node_ids, 1) if en.ENgetnodetype(i) == EN_TANK]
    nodes, links = nodes or node_ids, links or link_ids
    steps = []
    en.ENopenH()
    en.ENinitH(0)
    while True:
        t = en.ENrunH()
        node = {n: en.ENgetnodeindex(n) for n in set(nodes) | set(tanks)}
        head = {n: en.ENgetnodevalue(i, EN_HEAD) * FT for n, i in node.items()}
        row = {"time": t,
               "tank_levels": {n: head[n] - en.ENgetnodevalue(node[n], EN_ELEVATION) * FT
                               for n in tanks},
               "heads": {n: head[n] for n in nodes},
               "flows": {k: en.ENgetlinkvalue(en.ENgetlinkindex(k), EN_FLOW) * GPM for k in links},
               "status": {k: int(en.ENgetlinkvalue(en.ENgetlinkindex(k), EN_STATUS))
                          for k in links}}
        step = en.ENnextH()
        row["step"] = step
        steps.append(row)
        if step <= 0:
            break
    en.ENcloseH()
    en.ENclose()
    how = "ACCURACY as in the file" if accuracy is None else f"ACCURACY {accuracy:g}, TRIALS 1000"
    return {"network": name, "source": f"{path.name}; EPANET 2.2 via wntr {wntr.__version__} "
            f"toolkit (ENrunH/ENnextH), duration forced to 24 h, {how}",
            "duration_s": duration_s, "accuracy": accuracy,
            "units": {"level_head": "m", "flow": "m3/s", "status": "1 open, 0 closed"},
            "steps": steps}


def main() -> None:
    for name, (path, nodes, links) in CASES.items():
        for suffix, accuracy in (("", None), ("_tight", TIGHT)):
            doc = record(name, path, nodes, links, accuracy)
            (HERE / f"eps_{name}{suffix}.json").write_text(json.dumps(doc, indent=0) + "\n")
            print(name + suffix, len(doc["steps"]), "hydraulic times")
    for name, edits in EDITED.items():
        doc = {**record(name, edited(name, edits), None, None, TIGHT), "edits": edits}
        (HERE / f"eps_{name}_tight.json").write_text(json.dumps(doc, indent=0) + "\n")
        print(name, len(doc["steps"]), "hydraulic times")


if __name__ == "__main__":
    main()
