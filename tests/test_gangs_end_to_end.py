"""Gangs through the whole platform: several shards, a nearly full cluster, and no deadlock."""

from __future__ import annotations

import random
from collections import Counter

import pytest
import yaml

from benchmarks.cases import template
from cluster.objects import POD_GROUP_LABEL
from optimist.loop import SchedulingLoop
from optimist.offline.invariants import check_invariants
from optimist.offline.simulator import SimulatedCluster
from optimist.runtime import Platform
from optimist.settings import Settings

pytestmark = pytest.mark.usefixtures("ray_session")


def pod_doc(cpu: str, group: str | None = None) -> dict:
    doc = yaml.safe_load(template("pod-default.yaml").read_text())
    resources = doc["spec"]["containers"][0]["resources"]
    resources["requests"] = resources["limits"] = {"cpu": cpu, "memory": "64Mi"}
    if group:
        doc["metadata"] = {"generateName": f"{group}-", "labels": {POD_GROUP_LABEL: group}}
    return doc


def run(settings, nodes, gangs, plain):
    """gangs: (name, minMember, pods, cpu each); plain: (count, cpu)."""
    cluster = SimulatedCluster(settings.scheduler_names, seed=settings.seed)
    node = yaml.safe_load(template("node-default.yaml").read_text())
    node["status"]["capacity"] = {"cpu": "4", "memory": "32Gi", "pods": "110"}
    cluster.create_nodes(node, nodes)
    with Platform(settings) as platform:
        loop = SchedulingLoop(platform, cluster)
        for name, min_member, pods, cpu in gangs:
            group = {
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"minMember": min_member},
            }
            cluster.create_pod_group(group)
            cluster.create_pods(pod_doc(cpu, name), pods)
        if plain[0]:
            cluster.create_pods(pod_doc(plain[1]), plain[0])
        loop.run_until_settled()
        unschedulable = loop.dispatcher.unschedulable()
        assert check_invariants(cluster, unschedulable, platform.store) == []
    return cluster, unschedulable


@pytest.mark.parametrize(("shards", "seed"), [(1, 1), (3, 2), (8, 3)])
def test_mixed_gangs_fill_the_cluster_whole(redis_url, key_prefix, shards, seed):
    rng = random.Random(seed)
    gangs, total = [], 0
    while total < 420:  # 48 nodes x 4 CPU = 480 slots of 400m; plain pods top up to 95%
        size = rng.randint(2, 64)
        gangs.append((f"gang{len(gangs)}", rng.randint(2, size), size, "400m"))
        total += size
    settings = Settings(
        shards=shards, redis_url=redis_url, key_prefix=key_prefix, batch_pods=16, seed=seed
    )
    cluster, unschedulable = run(settings, 48, gangs, (max(456 - total, 0), "400m"))
    bound = Counter(
        cluster.pod_manifests[k]["metadata"]["labels"].get(POD_GROUP_LABEL)
        for k in cluster.bindings
        if cluster.pod_manifests[k]["metadata"].get("labels")
    )
    for name, min_member, _, _ in gangs:
        assert bound[name] == 0 or bound[name] >= min_member  # also checked by the checker
    assert len(cluster.bindings) + len(unschedulable) == len(cluster.pod_manifests)


def test_gangs_that_cannot_all_fit_do_not_deadlock(redis_url, key_prefix):
    # 2 nodes x 4 CPU hold one gang of 5 one-CPU pods, never two: each gang is placed
    # whole or holds nothing, so one completes and the others wait without holding room.
    settings = Settings(shards=3, redis_url=redis_url, key_prefix=key_prefix, batch_pods=4, seed=7)
    gangs = [(f"big{i}", 5, 5, "1") for i in range(3)]
    cluster, unschedulable = run(settings, 2, gangs, (0, "1"))
    groups = Counter(
        cluster.pod_manifests[k]["metadata"]["labels"][POD_GROUP_LABEL] for k in cluster.bindings
    )
    assert list(groups.values()) == [5]
    assert len(unschedulable) == 10
    assert all("Insufficient cpu" in reason for reason in unschedulable.values())
