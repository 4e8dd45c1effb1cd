"""Elastic quota on real Ray and Redis: admission before any attempt, borrowing, room given back.

Each test ends with the invariant checker.
"""

from __future__ import annotations

import pytest

from cluster.quota import Quota
from optimist.loop import SchedulingLoop
from optimist.offline.simulator import SimulatedCluster
from optimist.runtime import Platform
from optimist.settings import Settings
from tests.test_cluster_events_end_to_end import node_doc, settle
from tests.test_gangs_end_to_end import pod_doc

pytestmark = pytest.mark.usefixtures("ray_session")

CPU = 1000  # millicores


def test_a_full_quota_holds_its_pods_back_unattempted_and_lets_them_in_as_room_frees(
    redis_url, key_prefix
):
    quotas = (
        Quota("team-a", min={"cpu": 2 * CPU}, max={"cpu": 3 * CPU}, namespaces=("a",)),
        Quota("team-b", min={"cpu": 6 * CPU}, namespaces=("b",)),
    )
    settings = Settings(shards=2, redis_url=redis_url, key_prefix=key_prefix, seed=5, quotas=quotas)
    cluster = SimulatedCluster(settings.scheduler_names)
    cluster.create_nodes(node_doc("4"), 3)  # 12 CPUs
    with Platform(settings) as platform:
        loop = SchedulingLoop(platform, cluster)
        mine = cluster.create_pods(pod_doc("1"), 6, namespace="a")
        waiting = settle(loop, cluster, platform.store)
        # team-b is idle, so team-a borrows beyond its min of 2, up to its max of 3
        bound = [k for k in mine if k in cluster.bindings]
        assert len(bound) == 3 and len(waiting) == 3
        assert all(waiting[k].startswith("Quota: quota team-a: cpu 3000 in use") for k in waiting)
        # held back before any shard saw them: one attempt per bound pod, none for the rest
        assert loop.dispatcher.stats.pod_attempts == 3
        cluster.delete_pods(bound[:2])  # room given back: two more get in
        waiting = settle(loop, cluster, platform.store)
        assert len([k for k in mine if k in cluster.bindings]) == 3 and len(waiting) == 1
        assert loop.dispatcher.stats.pod_attempts == 5
        # team-b's pods are not limited by team-a's quota, and team-a's min is its own
        theirs = cluster.create_pods(pod_doc("1"), 9, namespace="b")
        waiting = settle(loop, cluster, platform.store)
        assert len([k for k in theirs if k in cluster.bindings]) == 9


def test_a_lender_gets_its_min_back_from_a_borrower_by_preemption(redis_url, key_prefix):
    quotas = (
        Quota("team-a", min={"cpu": 6 * CPU}, namespaces=("a",)),
        Quota("team-b", min={"cpu": 6 * CPU}, namespaces=("b",)),
    )
    settings = Settings(shards=2, redis_url=redis_url, key_prefix=key_prefix, seed=6, quotas=quotas)
    cluster = SimulatedCluster(settings.scheduler_names)
    cluster.create_nodes(node_doc("4"), 3)  # 12 CPUs
    with Platform(settings) as platform:
        loop = SchedulingLoop(platform, cluster)
        theirs = cluster.create_pods(pod_doc("1"), 12, namespace="b")  # a is idle: b borrows
        assert settle(loop, cluster, platform.store) == {}
        # a wakes up and asks for its min: b gives back what it borrowed, and no more
        mine = cluster.create_pods(pod_doc("1"), 8, namespace="a")
        waiting = settle(loop, cluster, platform.store)
        assert len([k for k in mine if k in cluster.bindings]) == 6
        assert len(cluster.evicted) == 6 and set(cluster.evicted) <= set(theirs)
        assert len([k for k in theirs if k in cluster.bindings]) == 6
        assert len(waiting) == 2 and all(
            w.startswith("Quota: quota team-a") for w in waiting.values()
        )


def test_elastic_quota_objects_made_while_running_count_what_is_bound_and_reclaim(
    redis_url, key_prefix
):
    settings = Settings(shards=2, redis_url=redis_url, key_prefix=key_prefix, seed=4)
    cluster = SimulatedCluster(settings.scheduler_names)
    cluster.create_nodes(node_doc("4"), 3)  # 12 CPUs
    with Platform(settings) as platform:
        loop = SchedulingLoop(platform, cluster)
        theirs = cluster.create_pods(pod_doc("1"), 12, namespace="b")  # no quota yet
        assert settle(loop, cluster, platform.store) == {}
        for name, namespace in (("team-a", "a"), ("team-b", "b")):
            cluster.create_elastic_quota(
                {"metadata": {"name": name, "namespace": namespace}, "spec": {"min": {"cpu": "6"}}}
            )
        # a bad one is reported and left out; the others stand
        cluster.create_elastic_quota(
            {"metadata": {"name": "team-a", "namespace": "c"}, "spec": {"min": {"cpu": "1"}}}
        )
        mine = cluster.create_pods(pod_doc("1"), 6, namespace="a")
        assert settle(loop, cluster, platform.store) == {}
        assert all(k in cluster.bindings for k in mine)
        assert len(cluster.evicted) == 6 and set(cluster.evicted) <= set(theirs)
        assert sorted(q.name for q in loop.dispatcher.quotas.quotas) == ["team-a", "team-b"]
