"""The null scheduler: the most pods a second any scheduler can get through a server.

It watches the pods of its profiles that no node holds yet and binds each to the next
node in turn, writing what optimist writes for a pod it places (the binding, then a
Scheduled event) and deciding nothing: no filter, no score, no queue, no retry. Run on
a workload in the same command as the schedulers, through a server like theirs, its
pods/s is the limit of the whole path on that machine: the server and etcd taking the
pods' creation and the bindings, and feeding every watch. The server's ceiling
(`api_bench.ceiling`) replays only the writes and so overstates that limit.

It is an instrument of the bench and never a scheduler: it puts pods where they may
not fit, so its runs are not checked for the invariants. It runs in a process of its
own (`python -m benchmarks.apiserver.null_scheduler KUBECONFIG NAME...`), so that its
CPU is counted as a scheduler's is, and says `ready` on its output once it has listed
the nodes and the pods.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from typing import Any

from benchmarks.controlplane.control_plane import SCHEDULER_PERF_CLIENT
from benchmarks.report.api_report import NULL_SCHEDULER
from cluster.manifests import scheduler_name
from optimist.kube.client import ApiError, KubeClient
from optimist.kube.informer import Informer, object_key

# bindings in flight at once: enough that its own workers never hold it back (with 16,
# as the ceiling writes, pods waited seconds for a worker at 5,000 nodes)
WORKERS = 64


def place(client: KubeClient, namespace: str, name: str, node: str, component: str) -> None:
    """What optimist writes for a pod it places: its binding, then its Scheduled event."""
    pods = f"/api/v1/namespaces/{namespace}/pods"
    binding = {
        "metadata": {"name": name, "namespace": namespace},
        "target": {"kind": "Node", "name": node},
    }
    client.request("POST", f"{pods}/{name}/binding", body=binding)
    event = {
        "metadata": {"generateName": f"{name}.", "namespace": namespace},
        "involvedObject": {"kind": "Pod", "name": name, "namespace": namespace},
        "type": "Normal",
        "reason": "Scheduled",
        "message": f"Successfully assigned {namespace}/{name} to {node}",
        "source": {"component": component},
    }
    client.request("POST", f"/api/v1/namespaces/{namespace}/events", body=event)


class NullScheduler:
    """Binds the unbound pods of `names` round-robin over the nodes it has seen."""

    def __init__(self, client: KubeClient, names: frozenset[str]) -> None:
        self.client, self.names = client, names
        self._nodes: list[str] = []
        self._turn = itertools.count()
        self._sent: set[str] = set()  # pods handed to a worker, never twice
        self._waiting: list[tuple[str, str]] = []  # pods not yet handed to a worker
        self._lock = threading.Lock()
        self._workers = ThreadPoolExecutor(WORKERS, thread_name_prefix="bind")
        self.informers = [
            Informer(client, "/api/v1/nodes", self._on_node),
            Informer(client, "/api/v1/pods", self._on_pod),
        ]

    def start(self) -> None:
        """Watch the nodes, then the pods, each once listed."""
        for informer in self.informers:
            informer.start()
            informer.synced.wait()

    def stop(self) -> None:
        for informer in self.informers:
            informer.stop()
        self._workers.shutdown(wait=True, cancel_futures=True)

    def _on_node(self, kind: str, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        with self._lock:
            if kind == "DELETED":
                self._nodes = [n for n in self._nodes if n != name]
            elif name not in self._nodes and not (obj.get("spec") or {}).get("unschedulable"):
                self._nodes.append(name)
        self._dispatch()  # the pods that came before any node

    def _on_pod(self, kind: str, obj: dict[str, Any]) -> None:
        spec, meta = obj.get("spec") or {}, obj["metadata"]
        key = object_key(obj)
        if kind == "DELETED":
            with self._lock:
                self._sent.discard(key)
            return
        if (
            spec.get("nodeName")
            or meta.get("deletionTimestamp")
            or scheduler_name(obj) not in self.names
        ):
            return
        with self._lock:
            if key in self._sent:
                return
            self._sent.add(key)
            self._waiting.append((meta["namespace"], meta["name"]))
        self._dispatch()

    def _dispatch(self) -> None:
        """Hand the waiting pods to the workers, each with the next node in turn; while
        no node is known they wait."""
        with self._lock:
            if not self._nodes:
                return
            ready, self._waiting = self._waiting, []
            nodes = [self._nodes[next(self._turn) % len(self._nodes)] for _ in ready]
        for (namespace, name), node in zip(ready, nodes, strict=True):
            self._workers.submit(self._place, namespace, name, node)

    def _place(self, namespace: str, name: str, node: str) -> None:
        with suppress(ApiError):  # deleted or bound meanwhile: nothing to decide
            place(self.client, namespace, name, node, NULL_SCHEDULER)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kubeconfig")
    parser.add_argument("names", nargs="+", help="the profiles (schedulerName) it binds")
    args = parser.parse_args(argv)
    client = KubeClient.for_kubeconfig(args.kubeconfig, **SCHEDULER_PERF_CLIENT)
    scheduler = NullScheduler(client, frozenset(args.names))
    scheduler.start()
    print("ready", flush=True)
    try:
        sys.stdin.read()  # until the bench closes its end, or stops it
    finally:
        scheduler.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
