"""Sparse linear solves for Newton (issue 4): batched ladders, big grids, compile time vs n.

* ``ladder``: a simple damped-free Newton (while loop, ``max|F| <= 1e-10``) on the
  100-node diode ladder of ``sparse_problems``, vmapped over B source voltages, with
  `SparseLU` (coloured Jacobian, level-scheduled LU) against a dense ``jacfwd`` + LU.
  ``solves_per_s`` = B / wall time of one compiled batched call (``cpu_s``: process CPU
  time, steadier on a shared machine). Target: >= 10 000 solves/s at B = 10 000.
* ``grid``: one linear solve with the Jacobian of the k x k diode grid (k*k + 2 unknowns)
  with each back end, after compilation; and a full Newton solve with `SparseAuto`.
* ``compile``: host analysis, trace and compile time of a jitted `SparseLU` solve against
  n, with the plan's levels and stages (the traced program must not grow with n).

Run: ``python -m benchmarks.sparse_linear [--quick]``.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp

from solvers.linear._sparse import SparseHostLU, SparseLU
from solvers.linear._sparse_auto import SparseAuto
from solvers.linear._sparse_krylov import SparseKrylov
from solvers.linear._sparse_plan import build_plan
from solvers.linear._sparsity import SparsityPattern

from .sparse_problems import diode_grid, diode_ladder

LADDER_COLUMNS = ("solver", "B", "solves_per_s", "wall_s", "cpu_s", "iterations", "compile_s")
GRID_COLUMNS = ("k", "n", "solver", "setup_s", "solve_ms", "residual")
COMPILE_COLUMNS = ("problem", "n", "levels", "stages", "products", "plan_s", "trace_s",
                   "compile_s")


def newton(linearize_solve, fn, x0, max_iter=60, tol=1e-10):
    """``p -> (x, iterations)``: plain Newton with a step from ``linearize_solve``."""

    def solve(p):
        def cond(c):
            return (c[1] < max_iter) & (c[2] > tol)

        def body(c):
            x, k, _ = c
            f, dx = linearize_solve(fn, x, p)
            return x + dx, k + 1, jnp.max(jnp.abs(f))

        x, k, _ = jax.lax.while_loop(cond, body, (x0, 0, jnp.inf))
        return x, k

    return solve


def sparse_step(solver):
    def step(fn, x, p):
        f, op = solver.linearize(fn, x, p)
        return f, solver.solve(op, -f)
    return step


def dense_step(fn, x, p):
    f = fn(x, p)
    return f, jnp.linalg.solve(jax.jacfwd(fn)(x, p), -f)


def _timed(compiled, *args):
    out = jax.block_until_ready(compiled(*args))  # warm-up
    wall, cpu = time.perf_counter(), time.process_time()
    out = jax.block_until_ready(compiled(*args))
    return out, time.perf_counter() - wall, time.process_time() - cpu


def ladder(batches=(1, 100, 10_000), dense_max=10_000, nodes=100):
    fn, x0, params, rows, cols = diode_ladder(nodes)
    n = x0.size
    solvers = {"SparseLU": sparse_step(SparseLU(rows, cols, (n, n))), "dense LU": dense_step}
    out = []
    for b in batches:
        vsrc = jnp.linspace(0.5, 3.0, b)[:, None]
        pb = dict(g=jnp.broadcast_to(params["g"], (b,) + params["g"].shape), vsrc=vsrc)
        for name, step in solvers.items():
            if name == "dense LU" and b > dense_max:
                continue
            start = time.perf_counter()
            compiled = jax.jit(jax.vmap(newton(step, fn, x0))).lower(pb).compile()
            compile_s = time.perf_counter() - start
            (x, k), wall, cpu = _timed(compiled, pb)
            resid = float(jnp.max(jnp.abs(jax.vmap(fn)(x, pb))))
            assert resid < 1e-8, f"{name} did not converge at B={b}: max|F| = {resid:.1e}"
            out.append(dict(solver=name, B=b, solves_per_s=round(b / wall), wall_s=round(wall, 3),
                            cpu_s=round(cpu, 3), iterations=int(k.max()),
                            compile_s=round(compile_s, 2)))
            print(out[-1], flush=True)
    return out


def grid(ks=(30, 100, 180), lu_max_products=2e7, newton_k=180):
    out = []
    for k in ks:
        fn, x0, params, rows, cols = diode_grid(k)
        n = x0.size
        x = x0 + 0.3
        pattern = SparsityPattern(rows, cols, (n, n))
        makers = {"SparseHostLU": lambda: SparseHostLU(pattern),
                  "SparseKrylov(gmres, ilu0)": lambda: SparseKrylov(pattern, rtol=1e-10)}
        if k <= 100:
            makers["SparseLU"] = lambda: SparseLU(pattern)
        for name, make in makers.items():
            start = time.perf_counter()
            solver = make()
            if isinstance(solver, SparseLU):
                if solver.plan.n_products > lu_max_products:
                    continue
            f, op = jax.jit(lambda x, p, s=solver: s.linearize(fn, x, p))(x, params)
            setup = time.perf_counter() - start
            solve = jax.jit(solver.solve).lower(op, f).compile()
            dx, wall, _ = _timed(solve, op, f)
            resid = float(jnp.max(jnp.abs(solver.matvec(op, dx) - f)) / jnp.max(jnp.abs(f)))
            out.append(dict(k=k, n=n, solver=name, setup_s=round(setup, 2),
                            solve_ms=round(wall * 1e3, 1), residual=f"{resid:.1e}"))
            print(out[-1], flush=True)
    if newton_k:
        out.append(grid_newton(newton_k))
    return out


def grid_newton(k):
    """A full Newton solve of the k x k grid with `SparseAuto` (one system)."""
    fn, x0, params, rows, cols = diode_grid(k)
    n = x0.size
    start = time.perf_counter()
    solver = SparseAuto(rows, cols, (n, n), batch_size=1)
    compiled = jax.jit(newton(sparse_step(solver), fn, x0)).lower(params).compile()
    setup = time.perf_counter() - start
    (x, it), wall, _ = _timed(compiled, params)
    resid = float(jnp.max(jnp.abs(fn(x, params))))
    row = dict(k=k, n=n, solver=f"Newton + SparseAuto -> {type(solver.choice).__name__}",
               setup_s=round(setup, 2), solve_ms=round(wall * 1e3, 1),
               residual=f"max|F| {resid:.1e} in {int(it)} it")
    print(row, flush=True)
    return row


def compile_times(ladders=(100, 1000, 10_000), grids=(10, 30, 60)):
    out = []
    cases = [(f"ladder {m}", diode_ladder(m)) for m in ladders]
    cases += [(f"grid {k}x{k}", diode_grid(k)) for k in grids]
    for name, (fn, x0, params, rows, cols) in cases:
        n = x0.size
        pattern = SparsityPattern(rows, cols, (n, n))
        start = time.perf_counter()
        plan = build_plan(pattern)
        plan_s = time.perf_counter() - start
        solver = SparseLU(pattern)
        f, op = jax.jit(lambda x, p, s=solver: s.linearize(fn, x, p))(x0 + 0.3, params)
        start = time.perf_counter()
        lowered = jax.jit(solver.solve).lower(op, f)
        trace_s = time.perf_counter() - start
        start = time.perf_counter()
        lowered.compile()
        compile_s = time.perf_counter() - start
        stages = len(plan.factor_stages) + len(plan.down_stages) + len(plan.up_stages)
        out.append(dict(problem=name, n=n, levels=plan.n_levels, stages=stages,
                        products=plan.n_products, plan_s=round(plan_s, 2),
                        trace_s=round(trace_s, 2), compile_s=round(compile_s, 2)))
        print(out[-1], flush=True)
    return out


def run(quick: bool = False) -> dict:
    """All three tables (``quick``: small sizes, under a minute)."""
    if quick:
        return dict(ladder=ladder((100,), dense_max=100, nodes=20),
                    grid=grid((10,), newton_k=10), compile=compile_times((100,), ()))
    return dict(ladder=ladder(), grid=grid(), compile=compile_times())


def _table(rows, columns):
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(r.get(c, "")) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    args = parser.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    tables = run(args.quick)
    for (name, rows), cols in zip(tables.items(), (LADDER_COLUMNS, GRID_COLUMNS, COMPILE_COLUMNS)):
        print(f"\n## {name}\n\n{_table(rows, cols)}")


if __name__ == "__main__":
    main()
