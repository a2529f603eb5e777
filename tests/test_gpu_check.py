"""``benchmarks.gpu_check`` runs on whatever backend it finds (a device loan is short: a
script that fails there wastes it), and its host-callback count sees a callback."""

import json

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks import gpu_check


def test_callback_count_sees_a_host_callback_and_nothing_else():
    def host(x):
        return np.asarray(x) * 2.0

    def with_callback(x):
        return jax.pure_callback(host, jax.ShapeDtypeStruct(x.shape, x.dtype), x) + 1.0

    x = jnp.ones(3)
    assert gpu_check._callbacks(with_callback, x) >= 1
    assert gpu_check._callbacks(lambda x: jnp.sin(x) + 1.0, x) == 0


def test_quick_sections_run_and_write_their_rows(tmp_path):
    sections = ["transient", "wide"]
    assert gpu_check.main(["--out", str(tmp_path), "--quick", "--only", *sections]) == 0
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert report["backend"] == jax.default_backend()
    assert list(report["sections"]) == sections
    for name in sections:
        rows = report["sections"][name]["rows"]
        assert rows and not any("error" in row for row in rows), rows
    wide = {row["call"]: row for row in report["sections"]["wide"]["rows"]}
    assert {"default chunks", "chunks of 16 384", "hand Newton"} <= set(wide)
    assert all(row["solves_per_s"] > 0 for row in wide.values())
