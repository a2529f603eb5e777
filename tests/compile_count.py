"""Counting XLA compilations (``jax.monitoring``'s backend-compile events) around a block."""

import contextlib

from jax import monitoring

COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


@contextlib.contextmanager
def compilations():
    """``with compilations() as count:`` ... ``count[0]`` compilations happened inside."""
    count = [0]

    def listen(event, duration, **kwargs):
        if event == COMPILE_EVENT:
            count[0] += 1

    monitoring.register_event_duration_secs_listener(listen)
    try:
        yield count
    finally:
        monitoring.unregister_event_duration_listener(listen)
