"""The whole platform on a node store split over three Redis servers (real Ray, real
Redis): single pods and gangs across partitions bound once, and a partition's server
restarted empty mid-run without a pod lost. Each ends with the invariant checker."""

from __future__ import annotations

import pytest

from cluster.store import PartitionedStore
from optimist.loop import SchedulingLoop
from optimist.runtime import Platform
from optimist.settings import Settings
from tests.fixtures import FaultAfter
from tests.test_cluster_events_end_to_end import node_doc
from tests.test_failures_end_to_end import cluster_of, pods, settle_and_check
from tests.test_gangs_end_to_end import pod_doc

pytestmark = pytest.mark.usefixtures("ray_session")


def test_pods_and_gangs_across_partitions_are_bound_once_and_whole():
    settings = Settings(shards=2, redis_partitions=3, batch_pods=64, seed=21)
    cluster = cluster_of(settings, 0)
    cluster.create_nodes(node_doc("4"), 24)
    gangs = []
    for g in range(8):
        cluster.create_pod_group({"metadata": {"name": f"train{g}"}, "spec": {"minMember": 6}})
        gangs.append(cluster.create_pods(pod_doc("1", f"train{g}"), 6))
    single = pods(cluster, "p", 400)
    with Platform(settings) as platform:
        store = platform.store
        assert isinstance(store, PartitionedStore) and len(platform.embedded_servers) == 3
        loop = SchedulingLoop(platform, cluster)
        settle_and_check(loop, platform, cluster)
        assert all(k in cluster.bindings for k in single)
        for members in gangs:
            assert all(k in cluster.bindings for k in members)
        across = [g for g in gangs if len({store.partition_of(cluster.bindings[k]) for k in g}) > 1]
        assert across and store.spanning_commits >= len(across)  # two steps, whole
        # every partition took commits: the store is split, not copied
        assert all(s.committed_pods() for s in store.stores)
        assert [s.reservations() for s in store.stores] == [{}, {}, {}]


def test_a_partition_restarted_empty_mid_run_is_built_again_and_nothing_is_lost():
    settings = Settings(shards=2, redis_partitions=3, batch_pods=32)
    cluster = cluster_of(settings, 60)
    with Platform(settings) as platform:
        epoch = platform.store.epoch
        lost = platform.embedded_servers[1]
        restarted = FaultAfter(cluster, 300, lost.restart)
        loop = SchedulingLoop(platform, cluster, on_bound=restarted)
        placed = pods(cluster, "p", 1500)
        settle_and_check(loop, platform, cluster)
        assert restarted.at is not None and len(loop.faults.store_rebuilds) >= 1
        assert platform.store.epoch != epoch
        later = pods(cluster, "later", 300)  # the shards work in the store built again
        settle_and_check(loop, platform, cluster)
    assert all(k in cluster.bindings for k in placed + later)


def test_a_split_store_refuses_several_binders():
    with pytest.raises(ValueError, match="driver's binder alone"):
        Settings(redis_partitions=3, binders=2)
