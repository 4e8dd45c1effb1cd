"""optimist on a real multi-node Ray cluster, all of it on this machine: a head and two
worker nodes started with `ray start`, each worker offering `optimist-shard`. The
bench joins it (`--ray-address`), its two shards land on the two workers, and one
worker is lost mid-run: its shard moves to the other, and no pod is lost.

The nodes advertise loopback addresses (127.0.0.10-12). Ray 2.60 cannot keep a
multi-node cluster's sockets on loopback (docs/operations.md, Security defaults), so for the
test's minute they listen on all interfaces, as any Ray cluster does.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from cluster.redis_server import EmbeddedRedis, connect
from cluster.store import Keys

RAY = str(Path(sys.executable).with_name("ray"))
OPTIMIST = [sys.executable, "-c", "from optimist.cli.main import app; app()"]
HEAD, WORKERS = "127.0.0.10", ("127.0.0.11", "127.0.0.12")
STARTED = "Ray runtime started"


@dataclass
class RayNode:
    ip: str
    process: subprocess.Popen[bytes]
    log: Path

    def wait_started(self, timeout_s: float = 90.0) -> None:
        deadline = time.monotonic() + timeout_s
        while STARTED not in self.log.read_text():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"ray node {self.ip} did not start:\n{self.log.read_text()}")
            time.sleep(0.2)

    def processes(self) -> list[psutil.Process]:
        """`ray start --block`, and under it the raylet, its agents and its workers."""
        try:
            root = psutil.Process(self.process.pid)
            return [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def lose(self) -> None:
        """The node is gone at once, as when its machine dies: every process, SIGKILL."""
        for p in self.processes():
            with contextlib.suppress(psutil.NoSuchProcess):
                p.kill()
        self.process.wait(timeout=30)


@dataclass
class RayCluster:
    address: str
    env: dict[str, str]
    head: RayNode
    workers: list[RayNode]


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[RayCluster]:
    root = Path(tempfile.mkdtemp(prefix="rc-", dir="/tmp"))  # Ray's socket paths are short
    token = root / "token"
    token.write_text(secrets.token_hex(32))
    token.chmod(0o600)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "RAY_ADDRESS")
    }
    env |= {  # every node and the driver share one token: authentication stays on
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN_PATH": str(token),
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    # the head's GCS declares a silent node dead after 4 missed checks of 0.5 s
    fast_checks = {
        "RAY_health_check_period_ms": "500",
        "RAY_health_check_timeout_ms": "1000",
        "RAY_health_check_failure_threshold": "4",
    }
    common = ["--num-cpus", "1", "--object-store-memory", str(80 << 20), "--block"]
    address = f"{HEAD}:{_free_port(HEAD)}"
    nodes: list[RayNode] = []

    def start(ip: str, args: list[str], extra_env: dict[str, str]) -> RayNode:
        log = root / f"{ip}.log"
        process = subprocess.Popen(
            [RAY, "start", "--node-ip-address", ip, *args, *common, "--disable-usage-stats"],
            env=env | extra_env,
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        nodes.append(RayNode(ip, process, log))
        return nodes[-1]

    try:
        port = address.split(":")[1]
        head_args = ["--head", "--port", port, "--include-dashboard", "false"]
        head = start(HEAD, [*head_args, "--temp-dir", str(root / "ray")], fast_checks)
        head.wait_started()
        shard = json.dumps({"optimist-shard": 2})  # room for both shards on either worker
        workers = []
        for ip in WORKERS:  # one after the other: started at once, they race for socket names
            workers.append(start(ip, ["--address", address, "--resources", shard], {}))
            workers[-1].wait_started()
        yield RayCluster(address, env, head, workers)
    finally:
        for node in reversed(nodes):
            node.lose()
        shutil.rmtree(root, ignore_errors=True)


def test_shards_spread_over_ray_nodes_and_move_off_a_lost_one(ray_cluster, tmp_path):
    report, out = tmp_path / "report.json", tmp_path / "bench.out"
    args = ["bench", "--nodes", "500", "--pods", "15000", "--shards", "2", "--no-progress"]
    args += ["--ray-address", ray_cluster.address, "--shard-resource", "optimist-shard"]
    args += ["--batch-pods", "64", "--seed", "3", "--report", str(report)]
    with EmbeddedRedis() as server:  # the test's own, to see how far the run has gone
        committed = connect(server.url)
        bench = subprocess.Popen(
            [*OPTIMIST, *args, "--redis-url", server.url],
            env=ray_cluster.env,
            stdout=out.open("wb"),
            stderr=subprocess.STDOUT,
        )
        try:
            lost, kept = ray_cluster.workers
            deadline = time.monotonic() + 120
            while committed.hlen(Keys().pods) < 4000:  # 1,000 first pods, then measured ones
                assert bench.poll() is None, out.read_text()[-3000:]
                assert time.monotonic() < deadline, "the run never got going"
                time.sleep(0.1)
            lost.lose()  # mid-run: the shard there dies with its node
            assert bench.wait(timeout=300) == 0, out.read_text()[-3000:]
        finally:
            if bench.poll() is None:
                bench.kill()
    r = json.loads(report.read_text())
    assert r["invariant_violations"] == []
    assert r["pods_scheduled"] == r["pods_created"] == 15000
    shards = r["shards"]
    first = [s["ray_nodes"][0]["ip"] for s in shards]
    assert sorted(first) == sorted(WORKERS)  # spread: one shard on each worker, none on the head
    moved = next(s for s in shards if s["ray_nodes"][0]["ip"] == lost.ip)
    assert moved["ray_node_ip"] == kept.ip  # Ray started it again on the node that is left
    assert [n["ip"] for n in moved["ray_nodes"]] == [lost.ip, kept.ip]
    assert r["shard_failures"] >= 1  # its batches in flight failed, and were tried again
