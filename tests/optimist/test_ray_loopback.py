"""The local Ray that optimist starts listens on loopback only, and joining keeps working."""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys

import psutil
import pytest
import ray
from ray._private import ray_constants

pytestmark = pytest.mark.usefixtures("ray_session")


@ray.remote(num_cpus=0)
class _Probe:
    def pid(self) -> int:
        return os.getpid()


def _ours() -> set[int]:
    """This process and everything it started: Ray's GCS, raylet, agents and workers."""
    me = psutil.Process()
    return {me.pid, *(p.pid for p in me.children(recursive=True))}


def test_nothing_ray_started_listens_beyond_loopback() -> None:
    probe = _Probe.remote()  # a worker of our own, whose sockets are counted too
    worker = ray.get(probe.pid.remote())
    ours = _ours()
    listening = [
        (c.pid, c.laddr.ip, c.laddr.port)
        for c in psutil.net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN and c.pid in ours
    ]
    ray.kill(probe)
    pids = {pid for pid, _, _ in listening}
    assert worker in pids  # a worker's own gRPC server was seen, so the search saw them all
    assert len(pids) >= 3, listening  # the GCS and the raylet too
    wide = [
        (psutil.Process(pid).name(), ip, port)
        for pid, ip, port in listening
        if not ipaddress.ip_address(ip.removeprefix("::ffff:")).is_loopback
    ]
    assert not wide, f"listening beyond loopback: {wide}"


def test_the_single_node_switch_is_put_back_for_joining_later() -> None:
    """Ray reads it once at import: left off, this process could never join a cluster."""
    given = os.environ.get(ray_constants.ENABLE_RAY_CLUSTERS_ENV_VAR, "1")
    assert (given.lower() in ("1", "true")) == ray_constants.ENABLE_RAY_CLUSTER


def test_another_process_joins_this_loopback_ray():
    """Joining at 127.0.0.1, Ray would look for the GCS at the machine's address, where
    nothing listens: `init_ray` joins a loopback Ray as it was started."""
    address = ray.get_runtime_context().gcs_address
    assert address.startswith("127.0.0.1:")
    joined = subprocess.run(
        [sys.executable, "-c", _JOIN, address],
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"},
    )
    assert joined.returncode == 0, joined.stderr[-3000:]
    assert joined.stdout.split()[-1] == ray.get_runtime_context().get_node_id()


_JOIN = """
import sys
import ray
from optimist.runtime import init_ray
init_ray(sys.argv[1])
print(ray.get_runtime_context().get_node_id())
"""
