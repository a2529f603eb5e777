"""The ``half_wave`` rectifier written as an ODE, solved by diffrax (the transient peer).

The circuit is V1 (SIN) -> RS -> node a -> D1 -> out, with RL and C1 from out to ground. It
is a DAE: node a has no storage. Eliminating node a leaves one ODE,
``C dv/dt = i(v_s(t) - v) - v / RL``. Here ``i(u)`` is the current through RS and the diode
in series under the voltage ``u``. It is found from the diode voltage ``d``, which solves
``(u - d) / RS = IS (exp(d / vte) - 1) + gmin d`` by Newton's method. The iteration starts
to the right of the root, where it converges monotonically. The values are read from the
deck, so diffrax solves exactly the equations simgraph does.
"""

from __future__ import annotations

import dataclasses
import math
import time

import jax
import jax.numpy as jnp
import numpy as np

K_B, Q_E = 1.38064852e-23, 1.6021766208e-19  # as ../shared/validation/transient/README.md
NEWTON_STEPS = 12


@dataclasses.dataclass(frozen=True)
class HalfWave:
    amplitude: float
    freq: float
    rs: float
    c: float
    i_s: float
    vte: float
    gmin: float

    @classmethod
    def from_netlist(cls, netlist) -> "HalfWave":
        parts = {e.name: e for e in netlist.elements}
        model = netlist.models[parts["D1"].model]
        vt = K_B * (netlist.temperature + 273.15) / Q_E
        _, amplitude, freq, *_ = parts["V1"].wave.params
        return cls(amplitude, freq, parts["RS"].value, parts["C1"].value,
                   model.IS * parts["D1"].area, model.N * vt,
                   netlist.options.get("gmin", 1e-12))

    def current(self, u):
        """The current through RS and the diode in series under the voltage ``u``."""
        d = jnp.where(u > 0, self.vte * jnp.log1p(jnp.maximum(u, 0.0) / (self.rs * self.i_s)),
                      0.0)  # to the right of the root: Newton falls monotonically onto it

        def newton(_, d):
            e = jnp.exp(d / self.vte)
            g = (u - d) / self.rs - self.i_s * (e - 1.0) - self.gmin * d
            dg = -1.0 / self.rs - self.i_s * e / self.vte - self.gmin
            return d - g / dg

        d = jax.lax.fori_loop(0, NEWTON_STEPS, newton, d)
        return (u - d) / self.rs

    def rhs(self, t, v, rl):
        source = self.amplitude * jnp.sin(2.0 * math.pi * self.freq * t)
        return (self.current(source - v) - v / rl) / self.c


def diffrax_batch(model: HalfWave, loads: np.ndarray, grid: np.ndarray, rtol: float,
                  atol: float, dtmax: float | None, repeats: int = 1) -> dict:
    """Kvaerno5 with a PID step controller, vmapped over the loads in one jit: the output
    voltage on ``grid``, the accepted steps per member and the warm seconds (median)."""
    import diffrax

    term = diffrax.ODETerm(lambda t, y, rl: model.rhs(t, y, rl))
    controller = diffrax.PIDController(rtol=rtol, atol=atol, dtmax=dtmax)
    t0, t1 = float(grid[0]), float(grid[-1])

    def one(rl):
        sol = diffrax.diffeqsolve(term, diffrax.Kvaerno5(), t0, t1, dt0=None,
                                  y0=jnp.zeros(()), args=rl,
                                  saveat=diffrax.SaveAt(ts=jnp.asarray(grid)),
                                  stepsize_controller=controller, max_steps=200_000,
                                  throw=False)
        return sol.ys, sol.stats["num_accepted_steps"], sol.result == diffrax.RESULTS.successful

    run = jax.jit(jax.vmap(one))
    loads = jnp.asarray(loads)
    ys, steps, ok = jax.block_until_ready(run(loads))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(run(loads))
        times.append(time.perf_counter() - start)
    return {"ys": np.asarray(ys), "steps": np.asarray(steps), "ok": np.asarray(ok),
            "seconds": float(np.median(times))}
