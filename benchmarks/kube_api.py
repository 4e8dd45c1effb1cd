"""optimist's Kubernetes path against the real API server (v1.30) over loopback.

    .venv/bin/python -m benchmarks.kube_api [--nodes 500] [--pods 3000] [--shards 1]

etcd and kube-apiserver are started for the run (`optimist.controlplane`, built
by `make kube`), with scheduler_perf's throughput settings (no priority and
fairness, no in-flight limits). The pods are created first; then `optimist
run`'s service starts, lists them, and binds every one through the
`pods/binding` subresource, writing a Scheduled event for each. Reported:
pods bound per second from the service's start, and the same server's ceiling
for those writes (a binding and a Scheduled event a pod, from 16 threads,
nothing else), with optimist's figure as a share of it.
"""

from __future__ import annotations

import argparse
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from cluster.kube.client import KubeClient
from cluster.redis_server import EmbeddedRedis
from optimist.config import Settings
from optimist.configuration import parse_configuration
from optimist.controlplane import THROUGHPUT_FLAGS, ControlPlane
from optimist.runtime import init_ray
from optimist.service import Service

_CONFIGURATION = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles: [{schedulerName: optimist}]
"""


def pod(name: str, namespace: str) -> dict[str, object]:
    container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"schedulerName": "optimist", "containers": [container]},
    }


def make(client: KubeClient, nodes: int, pods: int, namespace: str) -> None:
    client.request("POST", "/api/v1/namespaces", body={"metadata": {"name": namespace}})
    allocatable = {"cpu": "64", "memory": "256Gi", "pods": "500"}
    for i in range(nodes):
        node = {"metadata": {"name": f"{namespace}-n{i}"}, "status": {"allocatable": allocatable}}
        client.request("POST", "/api/v1/nodes", body=node)
    path = f"/api/v1/namespaces/{namespace}/pods"
    with ThreadPoolExecutor(16) as pool:
        list(
            pool.map(
                lambda i: client.request("POST", path, body=pod(f"p{i}", namespace)), range(pods)
            )
        )


def unlimited(plane: ControlPlane) -> KubeClient:
    """The admin's client, with no rate limit of its own: the server is what is measured."""
    return KubeClient.for_kubeconfig(str(plane.admin_kubeconfig), qps=1e6, burst=10**6)


def bound(client: KubeClient, namespace: str) -> int:
    items = client.request("GET", f"/api/v1/namespaces/{namespace}/pods")["items"]
    return sum(1 for p in items if p["spec"].get("nodeName"))


def through_optimist(
    plane: ControlPlane, client: KubeClient, nodes: int, pods: int, shards: int
) -> float:
    make(client, nodes, pods, "through-optimist")
    with EmbeddedRedis() as redis:
        settings = Settings.from_configuration(
            parse_configuration(_CONFIGURATION), redis_url=redis.url, shards=shards
        )
        service = Service(settings, unlimited(plane), identity="bench")
        stop = threading.Event()
        runner = threading.Thread(target=service.run, args=(stop,), daemon=True)
        started = time.monotonic()
        runner.start()
        while bound(client, "through-optimist") < pods:
            time.sleep(0.1)
        took = time.monotonic() - started
        stop.set()
        runner.join(30)
    return pods / took


def server_alone(client: KubeClient, pods: int) -> float:
    """The server's ceiling for what optimist writes per pod: its binding and its
    Scheduled event, from 16 threads, nothing else (no watch, no decision)."""
    make(client, 1, pods, "alone")
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "target": {"kind": "Node", "name": "alone-n0"},
    }

    def bind(i: int) -> None:
        body = {**binding, "metadata": {"name": f"p{i}", "namespace": "alone"}}
        client.request("POST", f"/api/v1/namespaces/alone/pods/p{i}/binding", body=body)
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"p{i}.", "namespace": "alone"},
            "involvedObject": {"kind": "Pod", "name": f"p{i}", "namespace": "alone"},
            "type": "Normal",
            "reason": "Scheduled",
            "message": f"Successfully assigned alone/p{i} to alone-n0",
            "source": {"component": "ceiling"},
        }
        client.request("POST", "/api/v1/namespaces/alone/events", body=event)

    started = time.monotonic()
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(bind, range(pods)))
    return pods / (time.monotonic() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=3000)
    parser.add_argument("--shards", type=int, default=1)
    args = parser.parse_args()
    init_ray(None)
    with ControlPlane(extra_args=THROUGHPUT_FLAGS) as plane:
        client = unlimited(plane)
        rate = through_optimist(plane, client, args.nodes, args.pods, args.shards)
        alone = server_alone(client, args.pods)
    print(
        f"kube_api: {args.pods} pods on {args.nodes} nodes, {args.shards} shard(s): "
        f"{rate:,.0f} pods/s bound through optimist (binding + Scheduled event each); "
        f"the real server alone takes {alone:,.0f} pods/s of those two writes from 16 "
        f"threads: optimist reaches {rate / alone:.0%} of that ceiling"
    )


if __name__ == "__main__":
    main()
