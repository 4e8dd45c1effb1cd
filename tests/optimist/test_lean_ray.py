"""The lean start of a local Ray: every change applies to the Ray we pin, each is put
back once Ray has started, and a start that fails under them is made plainly."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import ray
from ray._private.node import Node
from ray._private.parameter import RayParams

from optimist import lean_ray
from optimist.lean_ray import lean_start


def test_every_change_applies_to_this_ray_and_is_put_back() -> None:
    """A Ray upgrade that moves the internals shows here, not as a slow start."""
    before = (RayParams.__init__, Node.start_api_server, Node.start_raylet)
    with lean_start() as made:
        assert made == ["runtime-env-port", "no-api-server", "agent-ports"]
        assert RayParams.__init__ is not before[0]
        params = RayParams()
        assert params.runtime_env_agent_port and not params.no_monitor
    assert (RayParams.__init__, Node.start_api_server, Node.start_raylet) == before


@pytest.mark.usefixtures("ray_session")
def test_the_session_ray_started_lean_and_works() -> None:
    """No API server was started; actors run (their worker started on demand)."""
    assert ray.get_runtime_context().gcs_address.startswith("127.0.0.1:")
    assert not ray._private.worker.global_worker.node.webui_url

    @ray.remote(num_cpus=0)
    def pid() -> int:
        return os.getpid()

    assert ray.get(pid.remote(), timeout=60) != os.getpid()
    # Ray adds this session's spilling directory to the config it is given: not ours
    assert dict(lean_ray.SYSTEM_CONFIG) == {"prestart_worker_first_driver": False}


def test_a_lean_start_that_fails_is_made_plainly() -> None:
    started = subprocess.run(
        [sys.executable, "-c", _BROKEN_LEAN],
        capture_output=True,
        text=True,
        timeout=180,
        env={k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"},
    )
    assert started.returncode == 0, started.stderr[-3000:]
    assert "a lean start of Ray failed (lean start broken here)" in started.stderr
    assert started.stdout.split()[-1] == "2"


_BROKEN_LEAN = """
import ray
from optimist import lean_ray
from optimist.runtime import init_ray

def broken():
    from ray._private.node import Node
    original = Node.start_raylet
    def start_raylet(self, *args, **kwargs):
        raise RuntimeError("lean start broken here")
    Node.start_raylet = start_raylet
    return lambda: setattr(Node, "start_raylet", original)

lean_ray._CHANGES = (*lean_ray._CHANGES, ("broken", broken))
init_ray(None)

@ray.remote
def two():
    return 2

print(ray.get(two.remote(), timeout=120))
ray.shutdown()
"""
