"""Preemption on real Ray and Redis: victims chosen, evicted, their room reserved and used.

Each test ends with the invariant checker, which counts reserved room too.
"""

from __future__ import annotations

import pytest
import redis

from optimist.loop import SchedulingLoop
from optimist.offline.simulator import SimulatedCluster
from optimist.runtime import Platform
from optimist.settings import Settings
from tests.test_cluster_events_end_to_end import node_doc, settle
from tests.test_gangs_end_to_end import pod_doc

pytestmark = pytest.mark.usefixtures("ray_session")


def pod_of(cpu: str, priority: int, name: str, *, group: str | None = None, **spec) -> dict:
    doc = pod_doc(cpu, group)
    doc["metadata"]["generateName"] = f"{name}-"
    doc["spec"].update(priority=priority, **spec)
    return doc


def test_a_high_priority_pod_evicts_the_fewest_lowest_pods_and_takes_their_room(
    redis_url, key_prefix
):
    settings = Settings(shards=2, redis_url=redis_url, key_prefix=key_prefix, seed=7)
    cluster = SimulatedCluster(settings.scheduler_names)
    cluster.create_nodes(node_doc("4"), 2)  # 8 CPUs
    with Platform(settings) as platform:
        loop = SchedulingLoop(platform, cluster)
        low = cluster.create_pods(pod_of("1", 1, "low"), 4)
        mid = cluster.create_pods(pod_of("1", 5, "mid"), 4)
        assert settle(loop, cluster, platform.store) == {}
        # a pod that needs two CPUs, and may not preempt: it waits, nobody is evicted
        never = cluster.create_pods(pod_of("2", 10, "never", preemptionPolicy="Never"), 1)
        waiting = settle(loop, cluster, platform.store)
        assert set(waiting) == set(never) and cluster.evicted == []
        cluster.delete_pods(never)
        # one that may: two priority-1 pods on one node go, nothing of priority 5
        [high] = cluster.create_pods(pod_of("2", 10, "high"), 1)
        assert settle(loop, cluster, platform.store) == {}
        assert len(cluster.evicted) == 2 and set(cluster.evicted) <= set(low)
        node = cluster.bindings[high]
        assert cluster.nominated == {high: node}  # status.nominatedNodeName, reported
        assert {cluster.bindings.get(k) for k in cluster.evicted} == {None}
        assert all(k in cluster.bindings for k in mid)
        assert platform.store.holds() == {}  # consumed by the preemptor
        stats = loop.dispatcher.stats
        assert (stats.preemptions, stats.victims) == (1, 2)
        assert node in cluster.nodes


def test_no_pod_of_equal_or_higher_priority_is_evicted(redis_url, key_prefix):
    settings = Settings(shards=1, redis_url=redis_url, key_prefix=key_prefix, seed=8)
    cluster = SimulatedCluster(settings.scheduler_names)
    cluster.create_nodes(node_doc("2"), 1)
    with Platform(settings) as platform:
        loop = SchedulingLoop(platform, cluster)
        cluster.create_pods(pod_of("1", 5, "same"), 2)
        assert settle(loop, cluster, platform.store) == {}
        [pending] = cluster.create_pods(pod_of("1", 5, "peer"), 1)
        waiting = settle(loop, cluster, platform.store)
        assert "Insufficient cpu" in waiting[pending] and cluster.evicted == []
        # reported as kube-scheduler does: FailedScheduling, PodScheduled=False
        assert cluster.reports[pending] == ("Unschedulable", waiting[pending])
        # no bound pod is below its priority: the shard was not even asked for nodes
        assert loop.dispatcher.stats.preemption_attempts == 0


def test_a_gang_preempts_for_all_its_members_or_for_none(redis_url, key_prefix):
    settings = Settings(shards=2, redis_url=redis_url, key_prefix=key_prefix, seed=9)
    cluster = SimulatedCluster(settings.scheduler_names)
    cluster.create_nodes(node_doc("4"), 3)  # 12 CPUs
    with Platform(settings) as platform:
        loop = SchedulingLoop(platform, cluster)
        low = cluster.create_pods(pod_of("2", 1, "low"), 3)  # one on each node
        high = cluster.create_pods(pod_of("2", 9, "high"), 3)
        assert settle(loop, cluster, platform.store) == {}
        # 4 members of 4 CPUs: only three nodes exist, so no member preempts
        cluster.create_pod_group({"metadata": {"name": "big"}, "spec": {"minMember": 4}})
        big = cluster.create_pods(pod_of("4", 5, "big", group="big"), 4)
        waiting = settle(loop, cluster, platform.store)
        assert set(big) <= set(waiting) and cluster.evicted == []
        cluster.delete_pods(big)
        # 3 members of 2 CPUs, over three nodes holding one low and one high each
        cluster.create_pod_group({"metadata": {"name": "fit"}, "spec": {"minMember": 3}})
        fit = cluster.create_pods(pod_of("2", 5, "fit", group="fit"), 3)
        assert settle(loop, cluster, platform.store) == {}
        assert sorted(cluster.evicted) == sorted(low)
        assert all(k in cluster.bindings for k in fit + high)


def test_a_disruption_budget_steers_preemption_to_pods_it_does_not_guard(redis_url, key_prefix):
    settings = Settings(shards=1, redis_url=redis_url, key_prefix=key_prefix, seed=11)
    cluster = SimulatedCluster(settings.scheduler_names)
    cluster.create_nodes(node_doc("2"), 2)
    with Platform(settings) as platform:
        loop = SchedulingLoop(platform, cluster)
        guarded = pod_of("2", 1, "db")
        guarded["metadata"]["labels"] = {"app": "db"}
        db = cluster.create_pods(guarded, 1)
        web = cluster.create_pods(pod_of("2", 1, "web"), 1)  # same priority, unguarded
        cluster.create_disruption_budget(
            {
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "db", "namespace": "default"},
                "spec": {"selector": {"matchLabels": {"app": "db"}}, "maxUnavailable": 0},
            }
        )
        assert settle(loop, cluster, platform.store) == {}
        [high] = cluster.create_pods(pod_of("2", 10, "high"), 1)
        assert settle(loop, cluster, platform.store) == {}
        assert cluster.evicted == web and all(k in cluster.bindings for k in db)
        # best effort: with no unguarded pod left, the budget gives way
        [again] = cluster.create_pods(pod_of("2", 10, "again"), 1)
        assert settle(loop, cluster, platform.store) == {}
        assert cluster.evicted == web + db and {high, again} <= cluster.bindings.keys()


@pytest.mark.parametrize("lost", ["request", "reply"])
def test_a_preemption_the_store_failed_in_is_settled_from_what_it_holds(
    redis_url, key_prefix, lost
):
    """The connection to Redis breaks in the preemption's step: before Redis ran it
    (nothing taken: the preemptor tries again), or after (victims released in the
    store, room held: the victims must still be evicted). Either way the preemptor
    is bound in the end, and no victim keeps running uncounted by the store."""
    settings = Settings(shards=1, redis_url=redis_url, key_prefix=key_prefix, seed=11)
    cluster = SimulatedCluster(settings.scheduler_names)
    cluster.create_nodes(node_doc("2"), 1)
    with Platform(settings) as platform:
        loop = SchedulingLoop(platform, cluster)
        low = cluster.create_pods(pod_of("1", 1, "low"), 2)
        assert settle(loop, cluster, platform.store) == {}
        preempt, failed = platform.store.preempt, []

        def breaks_once(victims, holds):
            if failed:
                return preempt(victims, holds)
            failed.append(lost)
            if lost == "reply":
                preempt(victims, holds)  # Redis ran it; its answer never came back
            raise redis.ConnectionError(f"connection reset, the {lost} lost")

        platform.store.preempt = breaks_once
        [high] = cluster.create_pods(pod_of("2", 10, "high"), 1)
        assert settle(loop, cluster, platform.store) == {}
        assert failed == [lost] and high in cluster.bindings
        assert sorted(cluster.evicted) == sorted(low)
        assert platform.store.holds() == {}
        assert loop.faults.store_outages == 1
