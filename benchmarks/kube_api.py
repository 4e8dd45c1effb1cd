"""optimist's Kubernetes path against a live API server over loopback HTTP.

    .venv/bin/python -m benchmarks.kube_api [--nodes 500] [--pods 3000] [--shards 1]

Runs in a repository checkout: the API server is the tests' stateful one
(tests/kubeapi.py), started in a process of its own so that it does not share
the scheduler's interpreter. The pods are created first; then `optimist
run`'s service starts, lists them, and binds every one through the
`pods/binding` subresource, writing a Scheduled event for each. Reported:
pods bound per second from the service's start, and, for scale, what the
same server takes alone (bindings from 16 threads, nothing else): the first
figure cannot exceed what the server can take.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from cluster.kube.client import KubeClient
from cluster.redis_server import EmbeddedRedis
from optimist.config import Settings
from optimist.configuration import parse_configuration
from optimist.runtime import init_ray
from optimist.service import Service

_SERVER = """
import sys, time
from tests.kubeapi import FakeKubeAPI
api = FakeKubeAPI()
url = api.start()
for i in range(int(sys.argv[1])):
    api.put("nodes", {"metadata": {"name": f"n{i}"},
                      "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "500"}}})
print(url, flush=True)
time.sleep(1e9)
"""
_CONFIGURATION = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles: [{schedulerName: optimist}]
"""


def pod(name: str) -> dict[str, object]:
    container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulerName": "optimist", "containers": [container]},
    }


def server(nodes: int) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-c", _SERVER, str(nodes)], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def bound(client: KubeClient) -> int:
    items = client.request("GET", "/api/v1/pods")["items"]
    return sum(1 for p in items if p["spec"].get("nodeName"))


def through_optimist(nodes: int, pods: int, shards: int) -> float:
    process, url = server(nodes)
    redis = EmbeddedRedis().start()
    try:
        client = KubeClient.for_host(url, qps=1e6, burst=1_000_000)
        for i in range(pods):
            client.request("POST", "/api/v1/namespaces/default/pods", body=pod(f"p{i}"))
        settings = Settings.from_configuration(
            parse_configuration(_CONFIGURATION), redis_url=redis.url, shards=shards
        )
        service = Service(settings, client, identity="bench")
        stop = threading.Event()
        runner = threading.Thread(target=service.run, args=(stop,), daemon=True)
        started = time.monotonic()
        runner.start()
        while bound(client) < pods:
            time.sleep(0.1)
        took = time.monotonic() - started
        stop.set()
        runner.join(30)
        return pods / took
    finally:
        process.kill()
        redis.stop()


def server_alone(pods: int) -> float:
    process, url = server(1)
    try:
        client = KubeClient.for_host(url, qps=1e6, burst=1_000_000)
        for i in range(pods):
            client.request("POST", "/api/v1/namespaces/default/pods", body=pod(f"p{i}"))
        body = {"target": {"kind": "Node", "name": "n0"}}
        started = time.monotonic()
        with ThreadPoolExecutor(16) as pool:
            list(
                pool.map(
                    lambda i: client.request(
                        "POST", f"/api/v1/namespaces/default/pods/p{i}/binding", body=body
                    ),
                    range(pods),
                )
            )
        return pods / (time.monotonic() - started)
    finally:
        process.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=3000)
    parser.add_argument("--shards", type=int, default=1)
    args = parser.parse_args()
    init_ray(None)
    rate = through_optimist(args.nodes, args.pods, args.shards)
    alone = server_alone(args.pods)
    print(
        f"kube_api: {args.pods} pods on {args.nodes} nodes, {args.shards} shard(s): "
        f"{rate:,.0f} pods/s bound through optimist (binding + Scheduled event each); "
        f"the server alone takes {alone:,.0f} bindings/s from 16 threads"
    )


if __name__ == "__main__":
    main()
