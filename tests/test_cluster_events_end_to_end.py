"""The cluster changes under the scheduler: pods and nodes come and go, bindings fail.

Each test ends with the invariant checker: whatever happened, nothing is
over-committed, bound twice or lost, and gangs are whole.
"""

from __future__ import annotations

import time

import pytest
import yaml

from benchmarks.cases import template
from cluster.cluster_adapter import Binding
from optimist.loop import SchedulingLoop
from optimist.offline.invariants import check_invariants
from optimist.offline.simulator import SimulatedCluster
from optimist.runtime import Platform
from optimist.settings import Settings
from tests.test_gangs_end_to_end import pod_doc

pytestmark = pytest.mark.usefixtures("ray_session")


class RefusingCluster(SimulatedCluster):
    """The API server refuses the first binding of chosen pods (as a webhook or a
    deleted namespace would), then lets them through."""

    refuse: set[str]

    def bind(self, bindings: list[Binding]) -> list[str | None]:
        refused = {b.pod for b in bindings} & self.refuse
        self.refuse -= refused
        allowed = iter(super().bind([b for b in bindings if b.pod not in refused]))
        return [
            "admission webhook denied the binding" if b.pod in refused else next(allowed)
            for b in bindings
        ]


def node_doc(cpu: str) -> dict:
    doc = yaml.safe_load(template("node-default.yaml").read_text())
    doc["status"]["capacity"] = {"cpu": cpu, "memory": "32Gi", "pods": "110"}
    return doc


def settle(loop: SchedulingLoop, cluster: SimulatedCluster, store) -> dict[str, str]:
    loop.run_until_settled()
    unschedulable = loop.dispatcher.unschedulable()
    assert check_invariants(cluster, unschedulable, store) == []
    return unschedulable


def test_a_gang_whose_binding_fails_in_part_is_completed(redis_url, key_prefix):
    settings = Settings(shards=2, redis_url=redis_url, key_prefix=key_prefix, seed=3)
    cluster = RefusingCluster(settings.scheduler_names)
    cluster.create_nodes(node_doc("4"), 4)
    cluster.create_pod_group({"metadata": {"name": "train"}, "spec": {"minMember": 4}})
    keys = cluster.create_pods(pod_doc("1", "train"), 4)
    cluster.refuse = {keys[1], keys[3]}
    with Platform(settings) as platform:
        loop = SchedulingLoop(platform, cluster)
        unschedulable = settle(loop, cluster, platform.store)
        assert unschedulable == {} and sorted(cluster.bindings) == sorted(keys)
        assert loop.dispatcher.stats.bind_failures == 1
        assert sorted(platform.store.committed_pods()) == sorted(keys)


def test_deleted_pods_give_their_room_to_waiting_ones(redis_url, key_prefix):
    settings = Settings(shards=2, redis_url=redis_url, key_prefix=key_prefix, seed=4)
    cluster = SimulatedCluster(settings.scheduler_names)
    cluster.create_nodes(node_doc("2"), 3)
    with Platform(settings) as platform:
        loop = SchedulingLoop(platform, cluster)
        first = cluster.create_pods(pod_doc("1"), 10)
        waiting = settle(loop, cluster, platform.store)
        assert len(cluster.bindings) == 6 and len(waiting) == 4
        cluster.delete_pods([k for k in first if k in cluster.bindings][:3])
        cluster.delete_pods([next(iter(waiting))])  # a pending pod is deleted too
        left = settle(loop, cluster, platform.store)
        assert len(cluster.bindings) == 6 and len(left) == 0


def test_nodes_added_and_removed_while_scheduling(redis_url, key_prefix):
    settings = Settings(shards=2, redis_url=redis_url, key_prefix=key_prefix, seed=5)
    cluster = SimulatedCluster(settings.scheduler_names)
    cluster.create_nodes(node_doc("2"), 2)
    with Platform(settings) as platform:
        loop = SchedulingLoop(platform, cluster)
        cluster.create_pods(pod_doc("1"), 8)
        assert len(settle(loop, cluster, platform.store)) == 4
        doomed = sorted(cluster.nodes)[0]
        cluster.delete_nodes([doomed])  # its two pods go with it
        cluster.create_nodes(node_doc("4"), 1)  # room for the four that wait
        unschedulable = settle(loop, cluster, platform.store)
        assert unschedulable == {} and len(cluster.bindings) == 6
        assert doomed not in cluster.bindings.values()
        assert doomed not in platform.store.committed_pods().values()


def test_gated_pods_are_scheduled_once_their_gates_are_removed(redis_url, key_prefix):
    settings = Settings(shards=2, redis_url=redis_url, key_prefix=key_prefix, seed=6)
    cluster = SimulatedCluster(settings.scheduler_names)
    cluster.create_nodes(node_doc("4"), 2)
    gated = pod_doc("1") | {"spec": {**pod_doc("1")["spec"], "schedulingGates": [{"name": "q"}]}}
    with Platform(settings) as platform:
        loop = SchedulingLoop(platform, cluster)
        held = cluster.create_pods(gated, 3)
        cluster.create_pods(pod_doc("1"), 2)
        waiting = settle(loop, cluster, platform.store)
        assert set(waiting) == set(held) and len(cluster.bindings) == 2
        assert all(reason.startswith("SchedulingGated") for reason in waiting.values())
        for key in held:
            manifest = cluster.pod_manifests[key]
            cluster.update_pod(
                key, manifest | {"spec": {**manifest["spec"], "schedulingGates": []}}
            )
        assert settle(loop, cluster, platform.store) == {}
        assert len(cluster.bindings) == 5


def test_every_bound_pod_passes_its_stages_in_order(redis_url, key_prefix):
    settings = Settings(shards=2, redis_url=redis_url, key_prefix=key_prefix, seed=7)
    cluster = SimulatedCluster(settings.scheduler_names)
    cluster.create_nodes(node_doc("2"), 2)
    seen: dict[str, dict[str, float]] = {}

    def stage(name: str, pods: list[str], at: float) -> None:
        for pod in pods:
            seen.setdefault(pod, {}).setdefault(name, at)  # the first time, for "sent"

    def bound(pods: list[str]) -> None:
        stage("bound", pods, time.perf_counter())

    with Platform(settings) as platform:
        loop = SchedulingLoop(platform, cluster, on_bound=bound, on_stage=stage)
        cluster.create_pods(pod_doc("1"), 6)
        assert len(settle(loop, cluster, platform.store)) == 2
    order = ["queued", "sent", "decided", "committed", "bound"]
    for pod in cluster.bindings:
        times = [seen[pod][s] for s in order]
        assert times == sorted(times), (pod, seen[pod])
    unbound = set(cluster.pod_manifests) - set(cluster.bindings)
    assert all(set(seen[pod]) == {"queued", "sent"} for pod in unbound)
