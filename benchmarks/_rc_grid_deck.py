"""The shared ``rc_grid_k30`` construction at any size, as a SPICE deck.

``../shared/validation/transient`` records ngspice's time on a 100 x 100 deck of this
construction (seed 8100, tmax = tstop / 50, default tolerances: 174 s). That deck is not in
the folder, so this module writes one of the same kind. The values come from our own random
draws, so it is the same construction, not the same numbers:

- a k x k grid of nodes ``n{i}_{j}``, with resistors between neighbours (100-1000 ohm,
  log-uniform);
- 1-10 pF from every node to ground;
- diodes to ground at about 10 % of the nodes, split between two models;
- a PULSE source behind 50 ohm at the corner ``n0_0``.
"""

from __future__ import annotations

import numpy as np

TSTOP = 3e-6
MODELS = (".model DM1 D(IS=1e-14 N=1.5 RS=0)", ".model DM2 D(IS=1e-13 N=2.0 RS=0)")


def rc_grid_deck(k: int, seed: int, options: str | None = None) -> str:
    """The deck text: ``.tran tstop/200 tstop 0 tstop/50``; ``options`` (e.g.
    ``"reltol=1e-6"``) adds an ``.options`` card, else ngspice's defaults apply."""
    rng = np.random.default_rng(seed)
    lines = [f"* rc_grid_k{k}: {k}x{k} RC grid with diodes (the rc_grid_k30 construction, "
             f"seed {seed})", "V1 in 0 PULSE(0.0 5.0 1e-07 2e-07 2e-07 1e-06 1e-05)",
             "RS in n0_0 50.0"]
    count = 0
    for i in range(k):
        for j in range(k):
            for di, dj in ((0, 1), (1, 0)):
                if i + di < k and j + dj < k:
                    count += 1
                    lines.append(f"R{count} n{i}_{j} n{i + di}_{j + dj} "
                                 f"{10 ** rng.uniform(2, 3):.6g}")
    nodes = [(i, j) for i in range(k) for j in range(k)]
    lines += [f"C{c} n{i}_{j} 0 {rng.uniform(1e-12, 1e-11):.4g}"
              for c, (i, j) in enumerate(nodes, 1)]
    diodes = [(i, j) for i, j in nodes[1:] if rng.uniform() < 0.1]
    lines += [f"D{d} n{i}_{j} 0 DM{1 + int(rng.uniform() < 0.5)}"
              for d, (i, j) in enumerate(diodes, 1)]
    lines += list(MODELS) + ([f".options {options}"] if options else [])
    lines += [f".tran {TSTOP / 200:.6g} {TSTOP:.6g} 0 {TSTOP / 50:.6g}", ".end"]
    return "\n".join(lines) + "\n"
