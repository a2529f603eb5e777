"""Scale of the lowering: build, trace and compile time of ``F(x, params)`` against network size.

Two generated networks of N = 10^3, 10^4, 10^5 graph nodes (elements and junctions):
* a k x k resistor grid with a diode from every node to ground, driven by voltage sources at
  two corners (the issue's ngspice comparison circuit);
* a pipe network: a k x k grid of junctions joined by pipes (Hazen-Williams head loss, flow
  unknowns) fed by two fixed-head reservoirs.
Grouped evaluation is compared with object-by-object evaluation where the latter finishes
in reasonable time (``--objectwise-max``). Each grouped row also solves the network in the
same run: ``solve_s`` = ``solvers.solve`` with the default method (compile included),
``solve_warm_s`` the median of up to 7 more calls, ``scipy_lu_s`` = the SciPy sparse
reference (Newton with ``spsolve`` on the model's sparse Jacobian, see ``_scale_peers``),
``lu_speedup`` = scipy_lu_s / solve_warm_s, ``scipy_s`` = ``scipy.optimize.newton_krylov``
without a preconditioner (it does not converge on these networks), ``solve_speedup`` =
scipy_s / solve_s.
Run: ``python -m benchmarks.scale_lowering [--quick] [--no-solve]``.
"""

from __future__ import annotations

import argparse
import math
import time

import jax
import jax.numpy as jnp
import numpy as np

import simgraph as sg
from solvers.lowering._system import System

from . import _scale_peers
from ._timing import block, median_time


class Node(sg.ReffableTreeNode):
    v: jax.Array = sg.unknown(default=0.0)

    def residual(self):
        return 0.0


class Ground(sg.ReffableTreeNode):
    """The reference: fixed 0 V, no unknown and no equation (as in ``scenarios.circuits``).
    A ground with an unknown and a KCL row would make that row dense (every diode ends there),
    and a dense row forces one colour per column in the coloured Jacobian: n JVPs, n^2 memory."""

    v: jax.Array = 0.0


def _kcl(pairs):
    return tuple((node, i) for node, i in pairs if not isinstance(node, Ground))


class Resistor(sg.ReffableTreeNode):
    a: Node
    b: Node
    g: float = 1.0

    def contributions(self):
        i = self.g * (self.a.v - self.b.v)
        return ((self.a, i), (self.b, -i))


class Diode(sg.ReffableTreeNode):
    a: Node
    b: Node
    i_s: float = 1e-14
    vt: float = 0.025852

    def contributions(self):
        i = self.i_s * (jnp.exp((self.a.v - self.b.v) / self.vt) - 1.0)
        return _kcl(((self.a, i), (self.b, -i)))

    def step_limit(self, new):
        dv = (new.a.v - new.b.v) - (self.a.v - self.b.v)
        return jnp.minimum(1.0, 4.0 * self.vt / jnp.maximum(jnp.abs(dv), 1e-30))


class VoltageSource(sg.ReffableTreeNode):
    p: Node
    n: Node
    voltage: float = 1.0
    i: jax.Array = sg.unknown(default=0.0)

    def residual(self):
        return self.p.v - self.n.v - self.voltage

    def contributions(self):
        return _kcl(((self.p, self.i), (self.n, -self.i)))


class Junction(sg.ReffableTreeNode):
    h: jax.Array = sg.unknown(default=0.0)
    demand: float = 0.0

    def residual(self):
        return -self.demand  # plus the inflows the pipes contribute


class Pipe(sg.ReffableTreeNode):
    a: Junction
    b: Junction
    r: float = 1.0
    q: jax.Array = sg.unknown(default=0.1)

    def residual(self):
        return self.a.h - self.b.h - self.r * self.q * (self.q * self.q + 1e-8) ** 0.426

    def contributions(self):
        return ((self.a, -self.q), (self.b, self.q))


class Reservoir(sg.ReffableTreeNode):
    at: Junction
    head: float = 50.0
    q: jax.Array = sg.unknown(default=0.0)

    def residual(self):
        return self.at.h - self.head

    def contributions(self):
        return ((self.at, self.q),)


class Network(sg.ReffableTreeNode):
    nodes: list
    elements: list


def _grid_edges(k: int):
    for r in range(k):
        for c in range(k):
            if c + 1 < k:
                yield r * k + c, r * k + c + 1
            if r + 1 < k:
                yield r * k + c, (r + 1) * k + c


def diode_grid(n_target: int, seed: int = 0) -> Network:
    """k x k resistor grid, a diode from every node to ground, sources at two corners (~4k^2),
    each through a 100 ohm resistor as in ngspice's deck (a source straight across a diode
    would drive ~1e70 A through it: no solver meets a residual tolerance there)."""
    k = max(2, round(math.sqrt(n_target / 4)))
    rng = np.random.default_rng(seed)
    ground = Ground()
    nodes = [Node() for _ in range(k * k)]
    elements = [Resistor(nodes[a], nodes[b], float(rng.uniform(0.5, 2.0))) for a, b in _grid_edges(k)]
    elements += [Diode(n, ground) for n in nodes]
    s1, s2 = Node(), Node()
    elements += [VoltageSource(s1, ground, 5.0), VoltageSource(s2, ground, 3.0),
                 Resistor(s1, nodes[0], 0.01), Resistor(s2, nodes[-1], 0.01)]
    return Network([ground] + nodes + [s1, s2], elements)


#: Total demand of a generated pipe network (flow units), the same at every size.
PIPE_TOTAL_DEMAND = 1.6


def pipe_network(n_target: int, seed: int = 0) -> Network:
    """k x k junction grid joined by pipes, fed by two reservoirs (~3k^2 graph nodes).

    Junction demands are uniform in [0, 2 d] with ``d = PIPE_TOTAL_DEMAND / k^2``: the total
    demand is the same at every size, as a utility sizes its supply for the demand it serves.
    A per-junction demand that did not shrink with k would pull ~167 flow units out of the
    two corner reservoirs at N = 10^5, ~40 per corner pipe, a head loss of ~5000 m per pipe
    and heads near -10^4 m: no real network, and a test of the start rather than of scale.
    With the fixed total, heads stay within ~10 m of the reservoirs (45-50 m) at every N.
    """
    k = max(2, round(math.sqrt(n_target / 3)))
    rng = np.random.default_rng(seed)
    mean = PIPE_TOTAL_DEMAND / (k * k)
    junctions = [Junction(40.0, float(rng.uniform(0.0, 2.0 * mean))) for _ in range(k * k)]
    pipes = [Pipe(junctions[a], junctions[b], float(rng.uniform(1.0, 10.0))) for a, b in _grid_edges(k)]
    tanks = [Reservoir(junctions[0], 50.0), Reservoir(junctions[-1], 45.0)]
    return Network(junctions, pipes + tanks)


def _measure(graph, evaluation: str) -> dict:
    t0 = time.perf_counter()
    system = System.build(graph, evaluation=evaluation)
    t_build = time.perf_counter() - t0
    x, params = system.x0, system.params
    t0 = time.perf_counter()
    eqns = len(jax.make_jaxpr(system.residual)(x, params).jaxpr.eqns)
    lowered = jax.jit(system.residual).lower(x, params)
    t_trace = time.perf_counter() - t0
    t0 = time.perf_counter()
    compiled = lowered.compile()
    t_compile = time.perf_counter() - t0
    t_run = median_time(lambda: block(compiled(x, params)), repeats=5)
    jvp = jax.jit(lambda x, v, p: jax.jvp(lambda y: system.residual(y, p), (x,), (v,)))
    t0 = time.perf_counter()
    jvp.lower(x, x, params).compile()
    t_jvp = time.perf_counter() - t0
    return {"n": system.n, "groups": len(getattr(system._s.evaluator, "groups", ())), "build_s": t_build,
            "jaxpr_eqns": eqns, "trace_s": t_trace, "compile_s": t_compile, "jvp_compile_s": t_jvp,
            "run_ms": t_run * 1e3}


def run(sizes=(1_000, 10_000, 100_000), objectwise_max: int = 1_000, solve: bool = True,
        scipy_budget: float = 60.0) -> list[dict]:
    """One row per case, N and evaluation; with ``solve`` the grouped rows also time a whole
    solve against SciPy's sparse Newton and ``newton_krylov`` on the same equations
    (``_scale_peers``)."""
    rows = []
    for name, make in (("diode grid", diode_grid), ("pipe network", pipe_network)):
        _measure(make(100), "grouped")  # warm-up: JAX's one-time set-up is not the lowering's cost
        for n in sizes:
            graph = make(n)
            n_nodes = len(sg.nodes(graph))
            for evaluation in ("grouped", "objectwise"):
                if evaluation == "objectwise" and n > objectwise_max:
                    continue
                row = {"case": name, "N": n_nodes, "evaluation": evaluation}
                row.update(_measure(graph, evaluation))
                if solve and evaluation == "grouped":
                    row.update(_scale_peers.compare(System.build(graph), scipy_budget))
                rows.append(row)
                print(_format([row], header=not rows[:-1]), flush=True)
    return rows


COLUMNS = ("case", "N", "evaluation", "n", "groups", "build_s", "jaxpr_eqns", "trace_s", "compile_s",
            "jvp_compile_s", "run_ms") + _scale_peers.COLUMNS


def _format(rows: list[dict], header: bool = True) -> str:
    def cell(v):
        return "" if v is None else f"{v:.3g}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)] if header else []
    lines += ["| " + " | ".join(cell(r.get(c)) for c in COLUMNS) + " |" for r in rows]
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 10^3 and 10^4 only")
    parser.add_argument("--no-solve", action="store_true",
                        help="lowering only: skip the whole solves against scipy")
    parser.add_argument("--objectwise-max", type=int, default=1_000,
                        help="largest N for the object-by-object comparison (compile grows with N)")
    args = parser.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    sizes = (1_000, 10_000) if args.quick else (1_000, 10_000, 100_000)
    run(sizes, args.objectwise_max, solve=not args.no_solve)


if __name__ == "__main__":
    main()
