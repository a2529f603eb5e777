"""The diode ladder of ``circuit_batch`` written flat, and the peer solvers that solve it.

Every JAX peer returns ``solve_one(volts) -> (node_voltages[n], converged, iterations)`` for
``jax.vmap``; the scipy loop returns the same three as stacked numpy arrays. Physics comes
from ``scenarios.circuits`` (the diode law and ``pnjlim`` of its element classes, the values
of its generated ladder), so every method solves exactly simgraph's equations.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize

from scenarios.circuits import build_circuit, diode_ladder_netlist
from scenarios.circuits import elements

U_LINEAR, diode_current, pnjlim = elements.U_LINEAR, elements.diode_current, elements.pnjlim


@dataclasses.dataclass(frozen=True)
class Ladder:
    """n nodes; ``r[k]`` joins nodes k+1 and k+2 (1-based); diodes at nodes 2..n."""

    n: int
    r: np.ndarray
    i_s: float
    vte: float
    gmin: float

    @classmethod
    def of(cls, n: int) -> "Ladder":
        circuit = build_circuit(diode_ladder_netlist(n, tight=False))
        model = next(iter(circuit.models.values()))
        r = np.asarray([float(circuit.resistors[f"R{m}"].r) for m in range(1, n)])
        return cls(n, r, float(model.i_s), float(model.n) * float(circuit.physics.vt),
                   float(circuit.physics.gmin))

    @property
    def vcrit(self) -> float:
        return self.vte * math.log(self.vte / (math.sqrt(2.0) * self.i_s))

    def diode(self, v):
        return diode_current(v, self.i_s, self.vte, self.gmin)

    def residual(self, x, volts):
        """MNA residual: KCL at nodes 1..n (currents leaving), then ``v1 - volts``."""
        n = self.n
        v, i = x[:n], x[n:]
        cur = (v[:-1] - v[1:]) / jnp.asarray(self.r, x.dtype)
        zero = jnp.zeros((1,), x.dtype)
        kcl = (jnp.concatenate([cur, zero]) - jnp.concatenate([zero, cur])
               + jnp.concatenate([i, self.diode(v[1:])]))
        return jnp.concatenate([kcl, v[:1] - volts])

    def step_fraction(self, x, x_new):
        """The smallest fraction of the step ``x -> x_new`` that ``pnjlim`` allows."""
        v_old, v_new = x[1:self.n], x_new[1:self.n]
        limited = pnjlim(v_new, v_old, self.vte, self.vcrit)
        dv = v_new - v_old
        moved = jnp.abs(dv) > 0
        frac = jnp.where(moved, jnp.clip((limited - v_old) / jnp.where(moved, dv, 1.0), 1e-6, 1.0), 1.0)
        return jnp.min(frac)

    # numpy versions for the scipy loop
    def np_diode(self, v):
        u = v / self.vte
        capped = np.minimum(u, U_LINEAR)
        e = np.exp(capped)
        a = 3.0 * self.vte / math.e
        knee = v < -3.0 * self.vte
        v_rev = np.where(knee, v, -3.0 * self.vte)
        current = np.where(knee, -self.i_s * (1.0 + (a / v_rev) ** 3), self.i_s * (e * (1.0 + u - capped) - 1.0))
        slope = np.where(knee, 3.0 * self.i_s * a**3 / v_rev**4, self.i_s * e / self.vte)
        return current + self.gmin * v, slope + self.gmin

    def np_residual(self, x, volts):
        n = self.n
        v = x[:n]
        cur = (v[:-1] - v[1:]) / self.r
        kcl = np.zeros(n)
        kcl[:-1] += cur
        kcl[1:] -= cur
        kcl[0] += x[n]
        kcl[1:] += self.np_diode(v[1:])[0]
        return np.append(kcl, v[0] - volts)

    def np_jacobian(self, x, volts):
        n, g = self.n, 1.0 / self.r
        jac = np.zeros((n + 1, n + 1))
        k = np.arange(n - 1)
        np.add.at(jac, (k, k), g)
        np.add.at(jac, (k + 1, k + 1), g)
        jac[k, k + 1] -= g
        jac[k + 1, k] -= g
        jac[np.arange(1, n), np.arange(1, n)] += self.np_diode(x[1:n])[1]
        jac[0, n] = jac[n, 0] = 1.0
        return jac


def scipy_loop(ladder: Ladder, volts: np.ndarray):
    """``scipy.optimize.root(method="lm")`` with the analytic Jacobian, one member at a time.

    (``hybr``, scipy's default, fails from 0 V on most members of this ladder; ``lm`` solves
    them all.)"""
    x0 = np.zeros(ladder.n + 1)
    vs, ok, iters = [], [], []
    for value in volts:
        sol = scipy.optimize.root(ladder.np_residual, x0, args=(float(value),), jac=ladder.np_jacobian,
                                  method="lm", options={"xtol": 1e-12})
        vs.append(sol.x[:ladder.n])
        ok.append(sol.success)
        iters.append(sol.nfev)
    return np.asarray(vs), np.asarray(ok), np.asarray(iters)


def dense_newton(f, atol: float, rtol: float, max_steps: int = 100, step_fraction=None):
    """``solve(x0, args) -> (x, converged, iterations)``: dense Newton (``jacfwd`` + LU) in
    ``lax.while_loop`` with simgraph's stopping test; ``step_fraction(x, x_new)`` limits
    each step (a model's SPICE junction limiting)."""

    def solve(x0, args):
        def cond(state):
            _, _, it, done = state
            return ~done & (it < max_steps)

        def body(state):
            x, fx, it, _ = state
            dx = -jnp.linalg.solve(jax.jacfwd(f)(x, args), fx)
            frac = 1.0 if step_fraction is None else step_fraction(x, x + dx)
            x_new = x + frac * dx
            f_new = f(x_new, args)
            small = jnp.all(jnp.abs(dx) <= rtol * jnp.abs(x_new))
            return x_new, f_new, it + 1, (jnp.max(jnp.abs(f_new)) <= atol) | small

        f0 = f(x0, args)
        x, _, it, done = jax.lax.while_loop(cond, body, (x0, f0, 0, jnp.max(jnp.abs(f0)) <= atol))
        return x, done, it

    return solve


def hand_newton(ladder: Ladder, atol: float, rtol: float, max_steps: int = 100):
    """Dense Newton (``jacfwd`` + LU) with ``pnjlim`` step limiting in ``lax.while_loop``."""
    newton = dense_newton(ladder.residual, atol, rtol, max_steps, ladder.step_fraction)

    def solve_one(volts):
        x, done, it = newton(jnp.zeros(ladder.n + 1, jnp.result_type(float)), volts)
        return x[:ladder.n], done, it

    return solve_one


def hand_tridiagonal(ladder: Ladder, atol: float, rtol: float, max_steps: int = 100):
    """Newton on the reduced ladder (``v1 = volts`` eliminated): a tridiagonal Jacobian."""
    g = 1.0 / ladder.r
    g_right = np.append(g[1:], 0.0)
    slope = jax.vmap(jax.grad(ladder.diode))

    def kcl(w, volts):
        v_prev = jnp.concatenate([volts[None], w[:-1]])
        v_next = jnp.concatenate([w[1:], jnp.zeros((1,), w.dtype)])
        return g * (w - v_prev) + g_right * (w - v_next) + ladder.diode(w)

    def solve_one(volts):
        w0 = jnp.zeros(ladder.n - 1, jnp.result_type(float))
        lower = jnp.asarray(np.append(0.0, -g[1:]))
        upper = jnp.asarray(-g_right)

        def body(state):
            w, fw, it, _ = state
            diag = g + g_right + slope(w)
            dw = -jax.lax.linalg.tridiagonal_solve(lower, diag, upper, fw[:, None])[:, 0]
            x, x_new = jnp.concatenate([volts[None], w]), jnp.concatenate([volts[None], w + dw])
            w_new = w + ladder.step_fraction(x, x_new) * dw
            f_new = kcl(w_new, volts)
            small = jnp.all(jnp.abs(dw) <= rtol * jnp.abs(w_new))
            return w_new, f_new, it + 1, (jnp.max(jnp.abs(f_new)) <= atol) | small

        f0 = kcl(w0, volts)
        w, _, it, done = jax.lax.while_loop(lambda s: ~s[3] & (s[2] < max_steps), body,
                                            (w0, f0, 0, jnp.max(jnp.abs(f0)) <= atol))
        return jnp.concatenate([volts[None], w]), done, it

    return solve_one


def optimistix_newton(ladder: Ladder, atol: float, rtol: float, max_steps: int = 256):
    """``optx.root_find(optx.Newton)`` (dense Jacobian, LU) on the MNA residual."""
    import optimistix as optx

    solver = optx.Newton(rtol=rtol, atol=atol)

    def solve_one(volts):
        x0 = jnp.zeros(ladder.n + 1, jnp.result_type(float))
        sol = optx.root_find(ladder.residual, solver, x0, volts, max_steps=max_steps, throw=False)
        return sol.value[:ladder.n], sol.result == optx.RESULTS.successful, sol.stats["num_steps"]

    return solve_one


def jaxopt_gauss_newton(ladder: Ladder, atol: float, rtol: float, max_steps: int = 256):
    """``jaxopt.GaussNewton`` on the MNA residual (a Newton step for a square system)."""
    import jaxopt

    solver = jaxopt.GaussNewton(residual_fun=ladder.residual, tol=rtol, maxiter=max_steps)

    def solve_one(volts):
        x0 = jnp.zeros(ladder.n + 1, jnp.result_type(float))
        x, state = solver.run(x0, volts)
        return x[:ladder.n], state.error <= rtol, state.iter_num

    return solve_one
