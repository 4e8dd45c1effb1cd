"""The bench's readings of the machine: clocks that only go forward across faults."""

from __future__ import annotations

import subprocess
import sys
import time

from benchmarks.report.api_report import ApiCaseComparison, SchedulerFigures
from benchmarks.report.instruments import CpuClock, RedisServers, comparison_rows
from cluster.redis_server import EmbeddedRedis, connect

_BURN = """
import time
end = time.process_time() + 0.3
while time.process_time() < end:
    pass
time.sleep(60)
"""


def test_a_shard_killed_and_a_redis_restarted_keep_the_cpu_they_used() -> None:
    """A chaos run kills shards and restarts Redis: a phase's CPU must not come out
    negative (a killed process read as 0, a new Redis counting from 0)."""
    burner = subprocess.Popen([sys.executable, "-c", _BURN])
    try:
        with EmbeddedRedis() as server:
            client = connect(server.url)
            for i in range(3000):
                client.set(f"k{i}", i)
            clock = CpuClock([burner.pid], client)
            deadline = time.monotonic() + 30
            while (before := clock.read())["shards"] < 0.25 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert before["shards"] >= 0.25 and before["redis"] > 0
            burner.kill()
            burner.wait()
            server.restart()
            after = clock.read()
            assert after["shards"] == before["shards"]
            assert after["redis"] >= before["redis"]
    finally:
        burner.kill()
        burner.wait()


def test_the_commands_of_a_restarted_redis_keep_counting() -> None:
    with EmbeddedRedis() as server:
        client, harness = connect(server.url), RedisServers([server.url])
        for i in range(100):
            client.set(f"k{i}", i)
        before = harness.commands()
        assert before >= 100
        server.restart()
        client.set("after", 1)
        assert harness.commands() > before  # not the new server's few alone


def test_a_process_the_bench_did_not_start_reads_not_measured_not_zero() -> None:
    """On a cluster given by --kubeconfig the server's processes are not ours to read."""
    figures = SchedulerFigures(
        pods_per_s=250.0,
        pods_per_s_runs=[250.0],
        cpu_s_per_1000_pods={"scheduler": 1.5, "client": 0.4},
        memory_peak_bytes={"scheduler": 2**28},
        latency_p50_s=0.01,
        latency_p99_s=0.05,
        errors=[],
    )
    case = ApiCaseComparison(name="a/b", schedulers={"optimist": figures})
    rows = dict(comparison_rows(case, 500.0))
    assert rows["CPU s per 1,000 pods: scheduler"] == ["1.50"]
    assert rows["CPU s per 1,000 pods: kube-apiserver"] == ["n/a"]
    assert rows["CPU s per 1,000 pods: etcd"] == ["n/a"]
