"""optimist against a live API server (tests/kubeapi.py) over real HTTP, with the real
`kubernetes` client, real Ray and a real Redis: two profiles of its own, pods of another
scheduler beside them, and the invariants checked on the server's state afterwards."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from fractions import Fraction
from pathlib import Path

import pytest
import ray
from prometheus_client import generate_latest

from cluster.invariants import check_invariants
from cluster.kube.client import KubeClient
from cluster.quantity import parse_quantity
from cluster.redis_server import connect
from cluster.store import Keys, NodeStore
from optimist.config import Settings
from optimist.configuration import parse_configuration
from optimist.metrics import SchedulerMetrics
from optimist.service import Service
from tests.cluster.kube.test_adapter import node_doc, pod_doc

pytestmark = pytest.mark.usefixtures("ray_session")

# optimist-a spreads (the defaults: LeastAllocated); optimist-b packs (MostAllocated)
CONFIGURATION = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: optimist-a
  - schedulerName: optimist-b
    pluginConfig:
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: MostAllocated
            resources: [{name: cpu, weight: 1}]
"""


def wait_for(check, timeout_s=60.0, what="the cluster to settle"):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class Running:
    """A Service in a thread of its own, for as long as the block lasts."""

    def __init__(self, service: Service) -> None:
        self.service, self.stop = service, threading.Event()
        self.thread = threading.Thread(target=service.run, args=(self.stop,), daemon=True)

    def __enter__(self) -> Service:
        self.thread.start()
        assert self.service.ready.wait(60), "the service did not start"
        return self.service

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(30)


def settings_for(redis_url: str, key_prefix: str, **kwargs) -> Settings:
    return Settings.from_configuration(
        parse_configuration(CONFIGURATION), redis_url=redis_url, key_prefix=key_prefix, **kwargs
    )


def test_two_profiles_each_with_its_own_weights_and_another_schedulers_pods_untouched(
    kube_api, redis_url, key_prefix
):
    api, url = kube_api
    for i in range(7):
        api.put("nodes", node_doc(f"n{i}", cpu="4"))
    # already running when optimist starts, bound by the default scheduler: n0 is full
    api.put("pods", pod_doc("web", scheduler="default-scheduler", node="n0", cpu="4"))
    settings = settings_for(redis_url, key_prefix, shards=2)
    service = Service(settings, KubeClient.for_host(url), identity="test")
    with Running(service):
        for i in range(12):
            api.put("pods", pod_doc(f"a{i}", scheduler="optimist-a"))
        for i in range(3):
            api.put("pods", pod_doc(f"other{i}", scheduler="default-scheduler"))
        wait_for(lambda: len(api.bindings) == 12)
        for i in range(8):
            api.put("pods", pod_doc(f"b{i}", scheduler="optimist-b"))
        wait_for(lambda: len(api.bindings) == 20)
        store = service.loop.store
        cluster = api.as_cluster(settings.scheduler_names)
        assert check_invariants(cluster, [], store) == []
    bound = api.pods_bound()
    spread = [bound[f"default/a{i}"] for i in range(12)]
    packed = {bound[f"default/b{i}"] for i in range(8)}
    assert "n0" not in spread and "n0" not in packed  # the running pod's room was counted
    assert len(set(spread)) == 6 and max(spread.count(n) for n in set(spread)) <= 3
    assert len(packed) == 4  # 2 CPUs free on each node after a: filled two at a time
    # the default scheduler's pods: never bound, never written about
    assert not any(f"default/other{i}" in bound for i in range(3))
    assert not any(api.events_for(f"default/other{i}") for i in range(3))
    assert len(api.events_for("default/a0")) == 1  # Scheduled


def test_an_unschedulable_pod_is_told_why_and_placed_when_room_appears(
    kube_api, redis_url, key_prefix
):
    api, url = kube_api
    api.put("nodes", node_doc("n0", cpu="2"))
    settings = settings_for(redis_url, key_prefix, shards=1)
    metrics = SchedulerMetrics()
    service = Service(settings, KubeClient.for_host(url), identity="test", metrics=metrics)
    with Running(service):
        api.throttle(3, retry_after_s=0)  # the API is busy for a moment: retried, counted
        api.put("pods", pod_doc("big", scheduler="optimist-a", cpu="3"))

        def condition():
            status = (api.get("pods", "default", "big") or {}).get("status", {})
            return next((c for c in status.get("conditions", [])), None)

        wait_for(condition, what="the PodScheduled condition")
        assert condition()["reason"] == "Unschedulable"
        assert condition()["message"] == "0/1 nodes are available: 1 Insufficient cpu."
        events = api.events_for("default/big")
        assert events and events[0]["reason"] == "FailedScheduling"
        api.put("nodes", node_doc("n1", cpu="4"))  # a node that fits: NodeAdd requeues it
        wait_for(lambda: api.pods_bound().get("default/big") == "n1")
        served = generate_latest(metrics.registry).decode()
    assert "optimist_leader 1.0" in served
    retried = next(line for line in served.splitlines() if line.startswith("optimist_api_retries"))
    assert float(retried.split()[-1]) >= 3


KUBECONFIG = """
apiVersion: v1
kind: Config
clusters: [{name: fake, cluster: {server: "URL"}}]
users: [{name: test, user: {token: not-a-secret}}]
contexts: [{name: test, context: {cluster: fake, user: test}}]
current-context: test
"""
ELECTION = """
leaderElection:
  leaderElect: true
  resourceNamespace: default
  resourceName: optimist
  leaseDuration: 3s
  renewDeadline: 2s
  retryPeriod: 250ms
"""


def control_process(tmp_path, name, url, redis_url, key_prefix):
    """`optimist run` as a process of its own, joining this session's Ray."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG.replace("URL", url))
    config = tmp_path / "config.yaml"
    own = "---\napiVersion: optimist.io/v1alpha1\nkind: OptimistConfiguration\n"
    own += f"keyPrefix: '{key_prefix}'\n"
    config.write_text(CONFIGURATION + ELECTION + own)
    log = open(tmp_path / f"{name}.log", "w")  # noqa: SIM115 - the process writes to it
    command = [
        str(Path(sys.executable).with_name("optimist")),
        "run",
        *("--config", str(config), "--kubeconfig", str(kubeconfig)),
        *("--redis-url", redis_url, "--shards", "1", "--identity", name),
        *("--ray-address", ray.get_runtime_context().gcs_address),
        *("--metrics-address", "127.0.0.1:0"),
    ]
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)


def test_a_standby_takes_over_from_a_killed_leader_and_nothing_is_lost_or_doubled(
    tmp_path, kube_api, redis_url, key_prefix
):
    api, url = kube_api
    for i in range(20):
        api.put("nodes", node_doc(f"n{i}", cpu="32"))
    first = control_process(tmp_path, "first", url, redis_url, key_prefix)
    second = None
    try:

        def leading():
            assert first.poll() is None, (tmp_path / "first.log").read_text()
            return api.get("leases", "default", "optimist")

        wait_for(leading, 60, "a leader")
        second = control_process(tmp_path, "second", url, redis_url, key_prefix)
        for i in range(300):
            api.put("pods", pod_doc(f"p{i}", scheduler="optimist-a", cpu="100m"))
        wait_for(lambda: len(api.bindings) >= 100, 60, "the first hundred bindings")
        first.kill()  # in the middle of the run: no goodbye, the lease just lapses
        first.wait()
        killed_at = len(api.bindings)
        for i in range(300, 600):
            api.put("pods", pod_doc(f"p{i}", scheduler="optimist-a", cpu="100m"))
        wait_for(lambda: len(api.pods_bound()) == 600, 120, "every pod bound")
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.terminate()
                process.wait(30)
    assert 100 <= killed_at < 300, killed_at  # the second finished what the first began
    lease = api.get("leases", "default", "optimist")["spec"]
    assert lease["holderIdentity"] == ""  # given up when the second was stopped
    assert lease["leaseTransitions"] >= 1
    store = NodeStore(connect(redis_url), Keys(key_prefix))
    cluster = api.as_cluster(frozenset({"optimist-a", "optimist-b"}))
    assert check_invariants(cluster, [], store) == []
    assert len(api.bindings) == 600  # each pod bound once: no 409 was ever needed


def test_sharing_nodes_with_another_scheduler_the_window_is_measured(
    kube_api, redis_url, key_prefix
):
    """A second, simple scheduler binds its pods to the same nodes, first fit by what the
    API shows. optimist counts each of its bindings once the watch delivers it; until
    then both may commit the same room. The window is measured, printed and documented
    in the README (Kubernetes section); the invariants other than over-commit must hold,
    and the store must end agreeing with the cluster."""
    api, url = kube_api
    for i in range(8):
        api.put("nodes", node_doc(f"n{i}", cpu="4"))
    client = KubeClient.for_host(url)
    settings = settings_for(redis_url, key_prefix, shards=2)
    service = Service(settings, client, identity="test")
    foreign_bound: dict[str, float] = {}  # pod -> when its binding was sent
    seen: dict[str, float] = {}  # pod -> when optimist's store first held it

    def other_scheduler(count: int) -> None:
        for i in range(count):
            name = f"other{i}"
            api.put("pods", pod_doc(name, scheduler="default-scheduler", cpu="500m"))
            pods = client.request("GET", "/api/v1/pods")["items"]
            used = {f"n{j}": Fraction(0) for j in range(8)}
            for p in pods:
                if p["spec"].get("nodeName"):
                    cpu = p["spec"]["containers"][0]["resources"]["requests"]["cpu"]
                    used[p["spec"]["nodeName"]] += parse_quantity(cpu)
            node = next((n for n, u in used.items() if u + Fraction(1, 2) <= 4), None)
            if node is None:
                return
            body = {"target": {"kind": "Node", "name": node}, "metadata": {"name": name}}
            foreign_bound[f"default/{name}"] = time.monotonic()  # its binding goes out now
            client.request("POST", f"/api/v1/namespaces/default/pods/{name}/binding", body=body)

    with Running(service):
        store = service.loop.store
        done = threading.Event()

        def watch_store() -> None:
            while not done.is_set():
                now = time.monotonic()
                for pod in store.committed_pods():
                    seen.setdefault(pod, now)
                time.sleep(0.002)

        monitor = threading.Thread(target=watch_store, daemon=True)
        monitor.start()
        other = threading.Thread(target=other_scheduler, args=(24,))
        other.start()
        for i in range(40):
            api.put("pods", pod_doc(f"ours{i}", scheduler="optimist-a", cpu="500m"))
        other.join()
        wait_for(lambda: all(p in seen for p in foreign_bound), 30, "every foreign pod counted")
        wait_for(lambda: service.loop.dispatcher.settled(), 30)
        done.set()
        monitor.join()
        cluster = api.as_cluster(settings.scheduler_names)
        unschedulable = service.loop.dispatcher.unschedulable()
        violations = check_invariants(cluster, unschedulable, store)
    windows = sorted(seen[p] - t for p, t in foreign_bound.items())
    print(
        f"\nshared nodes: {len(windows)} foreign bindings, window from binding to counted "
        f"median {1000 * windows[len(windows) // 2]:.1f} ms, max {1000 * windows[-1]:.1f} ms; "
        f"{sum('over-committed' in v for v in violations)} over-committed nodes"
    )
    assert windows and windows[-1] < 10.0
    assert [v for v in violations if "over-committed" not in v and "promises more" not in v] == []


def test_a_preemptor_evicts_through_the_api_is_nominated_and_takes_the_room(
    kube_api, redis_url, key_prefix
):
    api, url = kube_api
    api.put("nodes", node_doc("n0", cpu="2"))
    api.put("priorityclasses", {"metadata": {"name": "low"}, "value": 1})
    api.put("priorityclasses", {"metadata": {"name": "high"}, "value": 1000})
    settings = settings_for(redis_url, key_prefix, shards=1)
    service = Service(settings, KubeClient.for_host(url), identity="test")
    with Running(service):
        api.put("pods", pod_doc("batch", cpu="2", priorityClassName="low"))
        wait_for(lambda: api.pods_bound().get("default/batch") == "n0")
        api.put("pods", pod_doc("urgent", cpu="2", priorityClassName="high"))
        wait_for(lambda: api.pods_bound().get("default/urgent") == "n0", what="the preemptor bound")
        assert api.get("pods", "default", "batch") is None  # evicted: deleted through the API

        def nominated():
            return api.get("pods", "default", "urgent").get("status", {}).get("nominatedNodeName")

        wait_for(lambda: nominated() == "n0", 10, "nominatedNodeName")  # reports are async
        cluster = api.as_cluster(settings.scheduler_names)
        assert check_invariants(cluster, [], service.loop.store) == []
