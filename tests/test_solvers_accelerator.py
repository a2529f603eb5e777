"""On an accelerator the default method must stay on the device: no host callback per Newton
step (SciPy's SuperLU is chosen on CPU only). The platform is mocked: no GPU is needed."""

import jax
import jax.numpy as jnp
import pytest

import solvers
from solvers import BandedLU, SparseAuto, SparseHostLU, SparseLU
from system_models import resistor_chain


@pytest.fixture
def chain():
    return solvers.System.build(resistor_chain(200))  # 200 unknowns: past the dense limit


def _callbacks(system, method) -> int:
    jaxpr = jax.make_jaxpr(lambda p: solvers.solve(system, method).x)(system.params)
    return str(jaxpr).count("callback")


@pytest.mark.parametrize("platform", ["gpu", "tpu"])
def test_accelerator_default_is_device_side(chain, monkeypatch, platform):
    monkeypatch.setattr(jax, "default_backend", lambda: platform)
    for batch_size in (None, 1, 1000):
        chosen = solvers.default_method(chain, batch_size=batch_size).linear_solver
        chosen = chosen.choice if isinstance(chosen, SparseAuto) else chosen
        assert isinstance(chosen, (BandedLU, SparseLU)), (batch_size, chosen)
    newton = solvers.Newton(linear_solver=solvers.default_method(chain).linear_solver)
    assert _callbacks(chain, newton) == 0
    # the choice is made under the mocked platform; compile and run on the real one (CPU)
    monkeypatch.undo()
    sol = solvers.solve(chain, newton)
    assert bool(sol.converged)
    assert float(sol.residual_norm) < 1e-9


def test_cpu_single_solve_keeps_host_lu(chain, monkeypatch):
    monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
    chosen = solvers.default_method(chain).linear_solver
    assert isinstance(chosen, SparseHostLU)
    assert _callbacks(chain, solvers.Newton(linear_solver=chosen)) > 0
