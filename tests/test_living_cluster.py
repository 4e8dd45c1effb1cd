"""optimist in a cluster that lives (`benchmarks.controlplane.living_plane`): workloads made by the
real controllers of kube-controller-manager (the plane's release), on KWOK's nodes, whose pods turn
Running and Ready, are evicted when their node stops heartbeating, and go with their
namespace. The invariants are checked on what the API server holds."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import pytest

from benchmarks.controlplane.living_plane import JOB_RUNS_FOR, KWOK_POOL, NODE_GRACE_S, kwok_node
from cluster.objects import HOSTNAME_LABEL, ZONE_LABEL
from cluster.redis_server import connect
from cluster.store import Keys, NodeStore
from cluster.volumes.index import CLAIMS, VOLUMES, VolumeIndex
from optimist.configuration import parse_configuration
from optimist.offline.invariants import check_invariants
from optimist.service import Service
from optimist.settings import Settings
from tests.kube.api import Api, wait_for
from tests.kube.service import Running

pytestmark = pytest.mark.usefixtures("ray_session")

SCHEDULER = "optimist"
CONFIGURATION = f"""
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles: [{{schedulerName: {SCHEDULER}}}]
"""
# the taints the node lifecycle controller puts on a node that stopped heartbeating
GONE = ("node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready")


def deployment(name: str, replicas: int, namespace: str = "default", **spec: Any) -> dict:
    """A Deployment of pods for optimist, 100m each."""
    container = {"name": "app", "image": "app", "resources": {"requests": {"cpu": "100m"}}}
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"schedulerName": SCHEDULER, "containers": [container], **spec},
            },
        },
    }


def running(api: Api, app: str, namespace: str = "default", label: str = "app") -> list[dict]:
    """The app's pods that are Running and Ready and not going."""
    pods = api.items("pods", namespace, labelSelector=f"{label}={app}")
    return [
        p
        for p in pods
        if p["status"].get("phase") == "Running"
        and not p["metadata"].get("deletionTimestamp")
        and any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"]["conditions"])
    ]


def nodes(api: Api, count: int, pool: str = KWOK_POOL) -> list[str]:
    """`count` nodes of a KWOK pool, once they are Ready."""
    names = [f"{pool}-{i}" for i in range(count)]
    for name in names:
        api.put("nodes", kwok_node(name, pool=pool))
    wait_for(lambda: all(api.plane.node_ready(n) for n in names), what="the nodes Ready")
    return names


def service(
    api: Api, redis_url: str, key_prefix: str, configuration: str = CONFIGURATION
) -> Service:
    settings = Settings.from_configuration(
        parse_configuration(configuration), redis_url=redis_url, key_prefix=key_prefix, shards=1
    )
    return Service(settings, api.client(), identity="test")


def invariants(
    api: Api,
    redis_url: str,
    key_prefix: str,
    unschedulable: Iterable[str] = (),
    names: frozenset[str] = frozenset({SCHEDULER}),
) -> list[str]:
    """`unschedulable`: the pods the test expects optimist to have left unbound, saying why;
    `names`, the profiles whose pods are checked."""
    store = NodeStore(connect(redis_url), Keys(key_prefix))
    volumes = VolumeIndex()
    for resource in (CLAIMS, VOLUMES):
        for item in api.items(resource):
            volumes.apply(resource, item)
    cluster = api.as_cluster(names)
    return check_invariants(cluster, unschedulable, store, volumes)


def test_a_deployment_s_replicas_all_run(living_api, redis_url, key_prefix):
    api = living_api
    nodes(api, 4)
    with Running(service(api, redis_url, key_prefix)):
        api.put("deployments", deployment("web", 50))
        wait_for(lambda: len(running(api, "web")) == 50, 120, "50 replicas Running and Ready")
    assert invariants(api, redis_url, key_prefix) == []
    assert len(api.bindings()) == 50  # each bound once, by optimist


def test_a_node_that_stops_heartbeating_gets_no_new_pods_and_its_pods_run_elsewhere(
    living_api, redis_url, key_prefix
):
    api = living_api
    kwok = api.plane.start_kwok("doomed")
    try:
        [lost], kept = nodes(api, 1, "doomed"), nodes(api, 2)
        # evicted 1 s after the node is found unreachable (the default would be 300 s)
        tolerations = [
            {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 1}
            for key in GONE
        ]
        with Running(service(api, redis_url, key_prefix)):
            api.put("deployments", deployment("web", 9, tolerations=tolerations))
            wait_for(lambda: len(running(api, "web")) == 9, 60, "9 replicas Running")
            before = {p["metadata"]["name"] for p in _on(api, lost)}
            assert before  # spread over the three nodes: some run on the one to be lost
            api.plane.stop(kwok)  # the node's agent dies: its lease is not renewed
            wait_for(lambda: not api.plane.node_ready(lost), 6 * NODE_GRACE_S, "NotReady")
            wait_for(lambda: _tainted(api, lost), 60, "the node tainted")

            def replaced() -> bool:
                live = running(api, "web")
                return len(live) == 9 and all(p["spec"]["nodeName"] in kept for p in live)

            wait_for(replaced, 120, "its pods evicted and replaced on the other nodes")
    finally:
        if kwok in api.plane.running:
            api.plane.stop(kwok)
    assert {p["metadata"]["name"] for p in _on(api, lost)} <= before  # nothing new there
    assert invariants(api, redis_url, key_prefix) == []


def test_a_node_that_comes_back_makes_its_pods_ready_again(living_api, redis_url, key_prefix):
    """The node lifecycle controller marks the pods of a node that stopped heartbeating
    not Ready; once the node's agent runs again they are Ready again, and their
    Deployment is whole without a new pod."""
    api = living_api
    kwok = api.plane.start_kwok("returning")
    try:
        [node] = nodes(api, 1, "returning")
        stay = [  # long enough not to be evicted while the node is away
            {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 3600}
            for key in GONE
        ]
        with Running(service(api, redis_url, key_prefix)):
            on_it = {HOSTNAME_LABEL: node}  # whatever other nodes the session holds
            api.put("deployments", deployment("back", 3, tolerations=stay, nodeSelector=on_it))
            wait_for(lambda: len(running(api, "back")) == 3, 60, "3 replicas Running")
            names = {p["metadata"]["name"] for p in running(api, "back")}
            api.plane.stop(kwok)
            wait_for(lambda: not running(api, "back"), 6 * NODE_GRACE_S, "its pods not Ready")
            kwok = api.plane.start_kwok("returning")
            wait_for(lambda: len(running(api, "back")) == 3, 60, "its pods Ready again")
    finally:
        if kwok in api.plane.running:
            api.plane.stop(kwok)
    assert {p["metadata"]["name"] for p in running(api, "back")} == names
    assert {p["spec"]["nodeName"] for p in running(api, "back")} == {node}


def test_a_deleted_namespace_s_pods_leave_optimist_s_state(living_api, redis_url, key_prefix):
    api = living_api
    nodes(api, 2)
    api.put("namespaces", {"metadata": {"name": "team"}})
    store = NodeStore(connect(redis_url), Keys(key_prefix))

    def held() -> set[str]:
        return {pod for pod in store.committed_pods() if pod.startswith("team/")}

    with Running(service(api, redis_url, key_prefix)):
        api.put("deployments", deployment("web", 10, namespace="team"))
        wait_for(lambda: len(running(api, "web", "team")) == 10, 60, "10 replicas Running")
        assert len(held()) == 10
        # the namespace controller deletes its objects; KWOK confirms each pod stopped
        api.admin.request("DELETE", "/api/v1/namespaces/team")
        wait_for(lambda: api.get("namespaces", "", "team") is None, 120, "the namespace gone")
        wait_for(lambda: not held(), 30, "the pods out of optimist's store")


def test_a_job_s_pods_finishing_free_room_that_a_waiting_pod_takes(
    living_api, redis_url, key_prefix
):
    """The room a Job's pods free when they succeed reaches the queue as an event: the
    waiting pod is placed then, not at the next periodic flush (5 minutes)."""
    api = living_api
    [node] = nodes(api, 1)  # 4 CPUs
    work = {"name": "work", "image": "work", "resources": {"requests": {"cpu": "2"}}}
    template = {
        "metadata": {"annotations": {JOB_RUNS_FOR: "10s"}},
        "spec": {"schedulerName": SCHEDULER, "restartPolicy": "Never", "containers": [work]},
    }
    job = {"metadata": {"name": "batch"}, "spec": {"parallelism": 2, "template": template}}
    waiting = {"metadata": {"name": "waiting"}, "spec": {**template["spec"], "containers": [work]}}
    with Running(service(api, redis_url, key_prefix)):
        api.put("jobs", job)
        wait_for(lambda: len(running(api, "batch", label="job-name")) == 2, 60, "the Job running")
        api.put("pods", waiting)
        wait_for(lambda: _unschedulable(api, "waiting"), 30, "the pod told it waits for room")
        wait_for(lambda: _succeeded(api, "batch"), 60, "the Job's pods done")
        wait_for(lambda: api.pods_bound().get("default/waiting") == node, 60, "the pod placed")
    assert invariants(api, redis_url, key_prefix) == []


def _unschedulable(api: Api, name: str) -> bool:
    pod = api.get("pods", "default", name) or {}
    conditions = pod.get("status", {}).get("conditions") or []
    return any(c["type"] == "PodScheduled" and c["reason"] == "Unschedulable" for c in conditions)


def _succeeded(api: Api, job: str) -> bool:
    return (api.get("jobs", "default", job) or {}).get("status", {}).get("succeeded") == 2


def _on(api: Api, node: str) -> list[dict]:
    return [p for p in api.items("pods") if p["spec"].get("nodeName") == node]


def _tainted(api: Api, node: str) -> bool:
    taints = (api.get("nodes", "", node) or {}).get("spec", {}).get("taints") or []
    return any(t["key"] in GONE and t["effect"] == "NoExecute" for t in taints)


def test_a_deployment_s_replicas_spread_over_zones_and_nodes_by_default(
    living_api, redis_url, key_prefix
):
    """Upstream's system default spreading, by the ReplicaSet's selector: by room alone
    the big node would take seven of the nine (each small node's free share falls
    faster), but spreading over hostnames and zones, weighed twice, evens them out."""
    api = living_api
    room = {"big": ("64", "a"), "b1": ("8", "b"), "c1": ("8", "c")}
    for name, (cpu, zone) in room.items():
        node = kwok_node(name, cpu=cpu)
        node["metadata"]["labels"][ZONE_LABEL] = zone
        api.put("nodes", node)
    wait_for(lambda: all(api.plane.node_ready(n) for n in room), what="the nodes Ready")
    container = {"name": "app", "image": "app", "resources": {"requests": {"cpu": "500m"}}}
    with Running(service(api, redis_url, key_prefix)):
        api.put("deployments", deployment("web", 9, containers=[container]))
        wait_for(lambda: len(running(api, "web")) == 9, 60, "9 replicas Running")
    per_node = Counter(p["spec"]["nodeName"] for p in running(api, "web"))
    assert per_node == {"big": 3, "b1": 3, "c1": 3}
    assert invariants(api, redis_url, key_prefix) == []


@pytest.mark.faults
def test_pods_whose_owner_is_deleted_mid_flight_leave_nothing_behind(
    living_api, redis_url, key_prefix
):
    """Bad input at the API's pace: a Deployment deleted while its 300 replicas are being
    scheduled. The garbage collector deletes its pods, some bound, some queued, some
    with a binding in flight. optimist's queue and store end holding none of them, and
    another Deployment's replicas are all scheduled meanwhile."""
    api = living_api
    nodes(api, 6)
    store = NodeStore(connect(redis_url), Keys(key_prefix))

    def doomed(bound: bool = False) -> list[str]:
        pods = api.items("pods", "default", labelSelector="app=doomed")
        return [p["metadata"]["name"] for p in pods if not bound or p["spec"].get("nodeName")]

    def held() -> set[str]:
        return {pod for pod in store.committed_pods() if pod.startswith("default/doomed-")}

    scheduler = service(api, redis_url, key_prefix)
    with Running(scheduler):
        api.put("deployments", deployment("doomed", 300))
        wait_for(lambda: len(doomed(bound=True)) >= 20, 60, "the first replicas bound")
        api.put("deployments", deployment("kept", 30))
        api.delete("deployments", "default", "doomed")  # its pods go in the background
        wait_for(lambda: not doomed(), 180, "every replica of the deleted Deployment gone")
        wait_for(lambda: len(running(api, "kept")) == 30, 120, "the other's 30 Running")
        wait_for(lambda: not held(), 30, "the deleted pods out of optimist's store")
    queued = [p.key for unit in scheduler.loop.dispatcher.held_units() for p in unit.pods]
    assert not [key for key in queued if key.startswith("default/doomed-")]
    assert invariants(api, redis_url, key_prefix) == []
