"""The 23 standard nonlinear-equation test problems, as plain functions ``F(x, params)``.

Problems 1-14 are the Moré-Garbow-Hillstrom / MINPACK set (ACM TOMS 566); 15-23 are the
additions of Burkardt's ``test_nonlin`` collection. Definitions follow MINPACK (the Watson
system is the gradient of the Watson least-squares function, as in MINPACK's ``vecfcn``).
Variable-size problems use ``n = 10`` (Watson and Chebyquad: the sizes in ``SIZES``).
Constants that a user might vary live in ``params`` so implicit gradients can be tested.

``start(problem, factor)`` gives the standard start scaled as MINPACK's test driver does it:
``factor * x0``, or ``factor * ones`` when ``x0`` is zero.
"""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple

import jax.numpy as jnp
import numpy as np

SIZES = {"watson": 6, "chebyquad": 5}


class Problem(NamedTuple):
    number: int
    name: str
    fn: Callable[[Any, Any], Any]
    x0: np.ndarray
    params: dict
    solution: np.ndarray | None  # a known root (None: not known in closed form)


def rosenbrock(x, p):
    return jnp.concatenate([1.0 - x[:1], p["a"] * (x[1:] - x[:-1] ** 2)])


def powell_singular(x, p):
    return jnp.stack([
        x[0] + 10.0 * x[1],
        math.sqrt(5.0) * (x[2] - x[3]),
        (x[1] - 2.0 * x[2]) ** 2,
        math.sqrt(10.0) * (x[0] - x[3]) ** 2,
    ])


def powell_badly_scaled(x, p):
    return jnp.stack([
        p["a"] * x[0] * x[1] - 1.0,
        jnp.exp(-x[0]) + jnp.exp(-x[1]) - 1.0001,
    ])


def wood(x, p):
    t1 = x[1] - x[0] ** 2
    t2 = x[3] - x[2] ** 2
    return jnp.stack([
        -200.0 * x[0] * t1 - (1.0 - x[0]),
        200.0 * t1 + 20.2 * (x[1] - 1.0) + 19.8 * (x[3] - 1.0),
        -180.0 * x[2] * t2 - (1.0 - x[2]),
        180.0 * t2 + 20.2 * (x[3] - 1.0) + 19.8 * (x[1] - 1.0),
    ])


def helical_valley(x, p):
    zero = x[0] == 0.0
    safe0 = jnp.where(zero, 1.0, x[0])
    theta = jnp.arctan(x[1] / safe0) / (2.0 * math.pi) + jnp.where(x[0] < 0.0, 0.5, 0.0)
    theta = jnp.where(zero, 0.25 * jnp.sign(x[1]), theta)
    r2 = x[0] ** 2 + x[1] ** 2
    r = jnp.sqrt(jnp.where(r2 > 0.0, r2, 1.0)) * (r2 > 0.0)
    return jnp.stack([10.0 * (x[2] - 10.0 * theta), 10.0 * (r - 1.0), x[2]])


def watson(x, p):
    n = x.shape[0]
    t = jnp.arange(1, 30, dtype=x.dtype) / 29.0                      # (29,)
    powers = t[:, None] ** jnp.arange(n, dtype=x.dtype)[None, :]      # (29, n): t^j
    j = jnp.arange(n, dtype=x.dtype)
    sum1 = (powers[:, : n - 1] * (j[1:] * x[1:])[None, :]).sum(axis=1)  # sum_j j t^(j-1) x_j
    sum2 = powers @ x
    temp1 = sum1 - sum2 ** 2 - 1.0
    dk = (j[None, :] - 2.0 * (t * sum2)[:, None]) * powers / t[:, None]
    f = (dk * temp1[:, None]).sum(axis=0)
    temp = x[1] - x[0] ** 2 - 1.0
    f = f.at[0].add(x[0] * (1.0 - 2.0 * temp))
    return f.at[1].add(temp)


def chebyquad(x, p):
    n = x.shape[0]
    # T_1..T_n at every x_j by the three-term recurrence.
    rows, t_prev, t_cur = [], jnp.ones_like(x), x
    for _ in range(n):
        rows.append(t_cur)
        t_prev, t_cur = t_cur, 2.0 * x * t_cur - t_prev
    f = jnp.stack(rows).sum(axis=1) / n
    i = np.arange(1, n + 1)
    even = np.where(i % 2 == 0, 1.0 / np.maximum(i * i - 1.0, 1.0), 0.0)
    return f + jnp.asarray(even, dtype=x.dtype)


def brown_almost_linear(x, p):
    n = x.shape[0]
    head = x[:-1] + jnp.sum(x) - (n + 1.0)
    return jnp.concatenate([head, jnp.prod(x, keepdims=True) - 1.0])


def _neighbours(x):
    zero = jnp.zeros_like(x[:1])
    return jnp.concatenate([zero, x[:-1]]), jnp.concatenate([x[1:], zero])


def discrete_boundary_value(x, p):
    n = x.shape[0]
    h = 1.0 / (n + 1)
    t = jnp.arange(1, n + 1, dtype=x.dtype) * h
    left, right = _neighbours(x)
    return 2.0 * x - left - right + 0.5 * h * h * (x + t + 1.0) ** 3


def discrete_integral_equation(x, p):
    n = x.shape[0]
    h = 1.0 / (n + 1)
    t = jnp.arange(1, n + 1, dtype=x.dtype) * h
    c = (x + t + 1.0) ** 3
    sum1 = jnp.cumsum(t * c)
    w = (1.0 - t) * c
    sum2 = jnp.sum(w) - jnp.cumsum(w)
    return x + h * ((1.0 - t) * sum1 + t * sum2) / 2.0


def trigonometric(x, p):
    n = x.shape[0]
    k = jnp.arange(1, n + 1, dtype=x.dtype)
    return n - jnp.sum(jnp.cos(x)) + k * (1.0 - jnp.cos(x)) - jnp.sin(x)


def variably_dimensioned(x, p):
    n = x.shape[0]
    k = jnp.arange(1, n + 1, dtype=x.dtype)
    s = jnp.sum(k * (x - 1.0))
    return x - 1.0 + k * s * (1.0 + 2.0 * s * s)


def broyden_tridiagonal(x, p):
    left, right = _neighbours(x)
    return (3.0 - 2.0 * x) * x + 1.0 - left - 2.0 * right


def broyden_banded(x, p):
    n = x.shape[0]
    k = np.arange(n)
    band = (k[None, :] >= k[:, None] - 5) & (k[None, :] <= k[:, None] + 1)
    band = jnp.asarray(band & (k[None, :] != k[:, None]), dtype=x.dtype)
    return x * (2.0 + 5.0 * x * x) + 1.0 - band @ (x * (1.0 + x))


def _matrix_square_root(size):
    def fn(x, p):
        m = x.reshape(size, size)
        return (m @ m - p["a"]).reshape(-1)

    return fn


hammarling_2x2 = _matrix_square_root(2)
hammarling_3x3 = _matrix_square_root(3)


def dennis_schnabel(x, p):
    return jnp.stack([x[0] + x[1] - p["s"], x[0] ** 2 + x[1] ** 2 - p["s"] ** 2])


def _one_minus_exp_sq_over(a):
    """(1 - exp(-a^2)) / a, smooth through a = 0 (value 0, slope 1)."""
    small = jnp.abs(a) < 1e-4
    safe = jnp.where(small, 1.0, a)
    return jnp.where(small, a - 0.5 * a ** 3, -jnp.expm1(-safe * safe) / safe)


def sample_18(x, p):
    return jnp.stack([x[1] ** 2 * _one_minus_exp_sq_over(x[0]),
                      x[0] * _one_minus_exp_sq_over(x[1])])


def sample_19(x, p):
    r2 = x[0] ** 2 + x[1] ** 2
    return x * r2


def scalar(x, p):
    return x * (x - p["r"]) ** 2


def freudenstein_roth(x, p):
    y = x[1]
    return jnp.stack([
        x[0] - y ** 3 + 5.0 * y ** 2 - 2.0 * y - p["c1"],
        x[0] + y ** 3 + y ** 2 - 14.0 * y - p["c2"],
    ])


def boggs(x, p):
    return jnp.stack([x[0] ** 2 - x[1] + 1.0, x[0] - jnp.cos(0.5 * math.pi * x[1])])


def chandrasekhar(x, p):
    n = x.shape[0]
    mu = (jnp.arange(n, dtype=x.dtype) + 0.5) / n
    kernel = mu[:, None] / (mu[:, None] + mu[None, :])
    return x - 1.0 / (1.0 - p["c"] / (2.0 * n) * (kernel @ x))


def _chebyquad_start(n):
    return (2.0 * np.arange(n) + 1.0 - n) / (n + 1.0)


def _bv_start(n):
    i = np.arange(1, n + 1)
    return i * (i - n - 1.0) / (n + 1.0) ** 2


def _problems() -> list[Problem]:
    n = 10
    nw, nc = SIZES["watson"], SIZES["chebyquad"]
    a2 = np.array([[1e-4, 1.0], [0.0, 1e-4]])
    a3 = np.array([[1e-4, 1.0, 0.0], [0.0, 1e-4, 0.0], [0.0, 0.0, 1e-4]])
    return [
        Problem(1, "rosenbrock", rosenbrock, np.r_[-1.2, np.ones(n - 1)], {"a": 10.0},
                np.ones(n)),
        Problem(2, "powell_singular", powell_singular, np.array([3.0, -1.0, 0.0, 1.0]), {},
                np.zeros(4)),
        Problem(3, "powell_badly_scaled", powell_badly_scaled, np.array([0.0, 1.0]),
                {"a": 1e4}, np.array([1.098159e-5, 9.106146])),
        Problem(4, "wood", wood, np.array([-3.0, -1.0, -3.0, -1.0]), {}, np.ones(4)),
        Problem(5, "helical_valley", helical_valley, np.array([-1.0, 0.0, 0.0]), {},
                np.array([1.0, 0.0, 0.0])),
        Problem(6, "watson", watson, np.zeros(nw), {}, None),
        Problem(7, "chebyquad", chebyquad, _chebyquad_start(nc), {}, None),
        Problem(8, "brown_almost_linear", brown_almost_linear, np.full(n, 0.5), {},
                np.ones(n)),
        Problem(9, "discrete_boundary_value", discrete_boundary_value, _bv_start(n), {},
                None),
        Problem(10, "discrete_integral_equation", discrete_integral_equation, _bv_start(n),
                {}, None),
        Problem(11, "trigonometric", trigonometric, np.full(n, 1.0 / n), {}, None),
        Problem(12, "variably_dimensioned", variably_dimensioned,
                1.0 - np.arange(1, n + 1) / n, {}, np.ones(n)),
        Problem(13, "broyden_tridiagonal", broyden_tridiagonal, -np.ones(n), {}, None),
        Problem(14, "broyden_banded", broyden_banded, -np.ones(n), {}, None),
        Problem(15, "hammarling_2x2", hammarling_2x2, np.array([1.0, 0.0, 0.0, 1.0]),
                {"a": a2}, np.array([0.01, 50.0, 0.0, 0.01])),
        Problem(16, "hammarling_3x3", hammarling_3x3, np.eye(3).ravel(), {"a": a3},
                np.array([0.01, 50.0, 0.0, 0.0, 0.01, 0.0, 0.0, 0.0, 0.01])),
        Problem(17, "dennis_schnabel", dennis_schnabel, np.array([1.0, 5.0]), {"s": 3.0},
                np.array([0.0, 3.0])),
        Problem(18, "sample_18", sample_18, np.array([2.0, 2.0]), {}, np.zeros(2)),
        Problem(19, "sample_19", sample_19, np.array([3.0, 3.0]), {}, np.zeros(2)),
        Problem(20, "scalar", scalar, np.array([1.0]), {"r": 5.0}, np.zeros(1)),
        Problem(21, "freudenstein_roth", freudenstein_roth, np.array([0.5, -2.0]),
                {"c1": 13.0, "c2": 29.0}, np.array([5.0, 4.0])),
        Problem(22, "boggs", boggs, np.array([1.0, 0.0]), {}, np.array([0.0, 1.0])),
        Problem(23, "chandrasekhar", chandrasekhar, np.ones(n), {"c": 0.9}, None),
    ]


PROBLEMS: list[Problem] = _problems()
BY_NAME: dict[str, Problem] = {p.name: p for p in PROBLEMS}
FACTORS = (1.0, 10.0, 100.0)


def start(problem: Problem, factor: float = 1.0) -> np.ndarray:
    """The standard start times ``factor`` (MINPACK's rule for a zero start: all ``factor``)."""
    if factor == 1.0:
        return problem.x0.copy()
    if not np.any(problem.x0):
        return np.full_like(problem.x0, factor)
    return factor * problem.x0


def params_of(problem: Problem) -> dict:
    """The problem's params as float64 arrays (a fresh dict each call)."""
    return {k: jnp.asarray(v, dtype=jnp.float64) for k, v in problem.params.items()}


def numpy_fn(problem: Problem) -> Callable[[np.ndarray], np.ndarray]:
    """``x -> F(x)`` on numpy float64 arrays, for scipy."""
    import jax

    params = params_of(problem)
    jitted = jax.jit(problem.fn)
    return lambda x: np.asarray(jitted(jnp.asarray(x, dtype=jnp.float64), params))
