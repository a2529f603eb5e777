"""``python -m scenarios list | run NAME [...] | demo``: see :mod:`scenarios._cli`.

The command line is an application, so it switches JAX to float64 as the physics needs
(importing the library never does).
"""
import jax

jax.config.update("jax_enable_x64", True)

from ._cli import main  # noqa: E402

raise SystemExit(main())
