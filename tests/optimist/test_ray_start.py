"""Starting Ray whatever a dead or foreign Ray left behind, and saying so in one line
when it cannot start."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

_START = """
import ray
from optimist.runtime import init_ray

assert init_ray(None)

@ray.remote
def two():
    return 2

print(ray.get(two.remote(), timeout=120))
ray.shutdown()
"""


def _environment(ray_tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["RAY_TMPDIR"] = str(ray_tmp)  # Ray's /tmp/ray, private to the test
    return env


@pytest.fixture
def ray_tmp() -> Path:
    # short: Ray's unix sockets live under it, and their paths are limited to 107 bytes
    with tempfile.TemporaryDirectory(prefix="rt", dir="/tmp") as d:
        yield Path(d)


def test_a_stale_cluster_record_does_not_stop_a_local_start(ray_tmp: Path) -> None:
    """A Ray killed without `ray stop` leaves ray_current_cluster naming it; Ray's own
    default then tries to join it (and refuses object_store_memory for a join)."""
    (ray_tmp / "ray").mkdir()
    (ray_tmp / "ray" / "ray_current_cluster").write_text("127.0.0.1:9\n")  # nothing there
    started = subprocess.run(
        [sys.executable, "-c", _START],
        capture_output=True,
        text=True,
        timeout=180,
        env=_environment(ray_tmp),
    )
    assert started.returncode == 0, started.stderr[-3000:]
    assert started.stdout.split()[-1] == "2"


def test_a_ray_that_cannot_start_is_one_line_saying_what_to_do(ray_tmp: Path) -> None:
    blocked = ray_tmp / "file"
    blocked.write_text("Ray's temporary folder cannot be made under a file\n")
    cases = Path(__file__).parents[1] / "benchmarks" / "cases" / "performance-config.yaml"
    bench = subprocess.run(
        [str(Path(sys.executable).with_name("optimist")), "bench", str(cases)],
        capture_output=True,
        text=True,
        timeout=180,
        env=_environment(blocked),
    )
    assert bench.returncode == 1, bench.stderr[-3000:]
    lines = bench.stderr.strip().splitlines()
    assert "Traceback" not in bench.stderr, bench.stderr[-3000:]
    assert lines[-1].startswith("error: could not start a local Ray ("), lines
    assert lines[-1].endswith("or join a running one with --ray-address"), lines
