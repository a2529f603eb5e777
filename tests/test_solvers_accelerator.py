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


@pytest.mark.parametrize("platform", ["gpu", "tpu"])
def test_accelerator_transient_batch_runs_as_one_chunk(monkeypatch, platform):
    """On CPU a batched transient runs in cache-sized chunks (one serial pass of the time
    loop each); on an accelerator 10 000 small members must go in one pass."""
    from solvers._simulate import chunk_for

    monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
    assert chunk_for(4) <= 1024
    monkeypatch.setattr(jax, "default_backend", lambda: platform)
    assert chunk_for(4) >= 10_000
    assert 16 <= chunk_for(3000) < chunk_for(30)  # still bounded by memory


def test_small_batched_systems_get_dense_lu_on_an_accelerator(monkeypatch):
    """CPU: a narrow band beats LAPACK's per-member calls; GPU: one batched, pivoting dense
    LU (as fast as the band's loop over columns on an H100 for 10-node ladders)."""
    pattern = solvers.System.build(resistor_chain(20)).sparsity_pattern()
    assert pattern.shape[0] <= solvers.AutoLinearSolver().dense_limit_batch
    monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
    assert isinstance(solvers.AutoLinearSolver(batch_size=1000).select(pattern), BandedLU)
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    chosen = solvers.AutoLinearSolver(batch_size=1000).select(pattern)
    assert isinstance(chosen, solvers.DenseLU)


@pytest.mark.parametrize("platform", ["gpu", "tpu"])
def test_accelerator_batch_runs_as_one_chunk(monkeypatch, platform):
    """Each chunk of ``solve_batch`` is one serial pass of the Newton loop: CPU keeps chunks
    of 16 384 members; on an accelerator 20 000 small members go in one pass (on an H100,
    100 000 10-node ladders in chunks of 16 384 took 4x a hand Newton vmapped over all)."""
    from solvers.batch import _batch

    calls = []
    real = _batch._solve_batched

    def counting(*args):
        calls.append(args[-2].shape[0] if args[-2].ndim == 2 else args[-1].shape[0])
        return real(*args)

    monkeypatch.setattr(_batch, "_solve_batched", counting)
    p = jnp.linspace(1.0, 4.0, 20_000)
    method = solvers.Newton()
    on_cpu = solvers.solve_batch(lambda x, p: x**2 - p, jnp.ones(1), p[:, None], solver=method)
    assert calls == [16_384, 16_384]  # two chunks, the last padded
    calls.clear()
    monkeypatch.setattr(jax, "default_backend", lambda: platform)
    assert _batch.default_chunk(11) >= 100_000
    assert _batch.DEFAULT_CHUNK <= _batch.default_chunk(3000) < _batch.default_chunk(30)
    on_device = solvers.solve_batch(lambda x, p: x**2 - p, jnp.ones(1), p[:, None],
                                    solver=method)
    assert calls == [20_000]
    assert bool(on_device.converged.all())
    assert jnp.array_equal(on_cpu.x, on_device.x)
    # an explicit chunk_size still wins
    calls.clear()
    solvers.solve_batch(lambda x, p: x**2 - p, jnp.ones(1), p[:, None], solver=method,
                        chunk_size=8_000)
    assert calls == [8_000] * 3
