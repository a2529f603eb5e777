"""Test-run configuration: float64 and strict rank promotion, as the physics needs."""
import jax

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_rank_promotion", "raise")
