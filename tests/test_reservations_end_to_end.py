"""Reservations on real Ray and Redis: placed like pods, held for their owner only,
consumed once, given back when their time is up. Each test ends with the checker."""

from __future__ import annotations

import time

import pytest

from optimist.loop import SchedulingLoop
from optimist.offline.simulator import SimulatedCluster
from optimist.runtime import Platform
from optimist.settings import Settings
from tests.test_cluster_events_end_to_end import node_doc, settle
from tests.test_gangs_end_to_end import pod_doc

pytestmark = pytest.mark.usefixtures("ray_session")


def reservation(name: str, cpu: str, owner: dict, **spec) -> dict:
    template = pod_doc(cpu)
    template["metadata"] = {"namespace": "default"}
    return {
        "apiVersion": "scheduling.koordinator.sh/v1alpha1",
        "kind": "Reservation",
        "metadata": {"name": name},
        "spec": {"template": template, "owners": [owner], **spec},
    }


def named(name: str, labels: dict | None = None, cpu: str = "2") -> dict:
    doc = pod_doc(cpu)
    doc["metadata"] = {"name": name, "labels": labels or {}}
    return doc


def test_room_reserved_for_a_named_pod_is_used_by_it_alone(redis_url, key_prefix):
    settings = Settings(shards=2, redis_url=redis_url, key_prefix=key_prefix, seed=12)
    cluster = SimulatedCluster(settings.scheduler_names)
    cluster.create_nodes(node_doc("4"), 2)  # 8 CPUs
    with Platform(settings) as platform:
        loop = SchedulingLoop(platform, cluster)
        cluster.create_reservation(reservation("for-vip", "2", {"object": {"name": "vip"}}))
        assert settle(loop, cluster, platform.store) == {}
        [held] = platform.store.holds().values()
        assert held.pod == "default/vip"
        others = cluster.create_pods(pod_doc("1"), 8)
        waiting = settle(loop, cluster, platform.store)
        assert len(waiting) == 2 and set(waiting) <= set(others)  # 6 of 8: 2 CPUs are held
        [vip] = cluster.create_pods(named("vip"), 1)
        assert set(settle(loop, cluster, platform.store)) == set(waiting)
        assert cluster.bindings[vip] == held.node and platform.store.holds() == {}


def test_a_selector_reservation_goes_to_the_first_pod_it_picks(redis_url, key_prefix):
    settings = Settings(shards=1, redis_url=redis_url, key_prefix=key_prefix, seed=13)
    cluster = SimulatedCluster(settings.scheduler_names)
    cluster.create_nodes(node_doc("4"), 1)
    with Platform(settings) as platform:
        loop = SchedulingLoop(platform, cluster)
        owner = {"labelSelector": {"matchLabels": {"app": "db"}}}
        cluster.create_reservation(reservation("for-db", "4", owner))
        assert settle(loop, cluster, platform.store) == {}
        [web] = cluster.create_pods(named("web", {"app": "web"}, cpu="1"), 1)
        assert "Insufficient cpu" in settle(loop, cluster, platform.store)[web]
        [db] = cluster.create_pods(named("db", {"app": "db"}, cpu="3"), 1)
        waiting = settle(loop, cluster, platform.store)
        # the db pod took the room (3 of the 4 held); allocateOnce gave the rest back
        assert db in cluster.bindings and platform.store.holds() == {}
        assert web in cluster.bindings and waiting == {}


def test_a_reservation_past_its_time_gives_its_room_back(redis_url, key_prefix):
    settings = Settings(shards=1, redis_url=redis_url, key_prefix=key_prefix, seed=14)
    cluster = SimulatedCluster(settings.scheduler_names)
    cluster.create_nodes(node_doc("2"), 1)
    with Platform(settings) as platform:
        loop = SchedulingLoop(platform, cluster)
        owner = {"object": {"name": "never-made"}}
        cluster.create_reservation(reservation("brief", "2", owner, ttl="1s"))
        assert settle(loop, cluster, platform.store) == {}
        [late] = cluster.create_pods(pod_doc("2"), 1)
        assert late in settle(loop, cluster, platform.store)
        time.sleep(1.2)
        loop.ingest()  # expired holds are given back, and who waits for room is told
        assert settle(loop, cluster, platform.store) == {} and late in cluster.bindings
