"""Failures in the middle of a run, on real Ray and a real Redis: whatever dies, every
pod ends bound once or reported, and the invariant checker agrees with the store."""

from __future__ import annotations

import copy
import os
import signal
import time

import pytest
import ray
import yaml

from benchmarks.cases import template
from optimist.loop import SchedulingLoop
from optimist.offline.invariants import check_invariants
from optimist.offline.simulator import SimulatedCluster
from optimist.runtime import Platform
from optimist.settings import Settings
from tests.fixtures import FaultAfter

pytestmark = pytest.mark.usefixtures("ray_session")


def cluster_of(settings: Settings, nodes: int) -> SimulatedCluster:
    cluster = SimulatedCluster(settings.scheduler_names)
    cluster.create_nodes(yaml.safe_load(template("node-default.yaml").read_text()), nodes)
    return cluster


def pods(cluster: SimulatedCluster, prefix: str, count: int) -> list[str]:
    doc = yaml.safe_load(template("pod-default.yaml").read_text())
    doc["metadata"] = {"generateName": f"{prefix}-"}
    return cluster.create_pods(doc, count)


def settle_and_check(loop: SchedulingLoop, platform: Platform, cluster: SimulatedCluster) -> None:
    loop.run_until_settled()
    assert check_invariants(cluster, loop.dispatcher.unschedulable(), platform.store) == []
    assert len(cluster.bind_log) == len(cluster.bindings)  # each pod bound once


def test_a_shard_killed_mid_run_comes_back_and_nothing_is_lost(redis_url, key_prefix):
    settings = Settings(shards=2, redis_url=redis_url, key_prefix=key_prefix, batch_pods=32)
    cluster = cluster_of(settings, 60)
    with Platform(settings) as platform:
        before = ray.get(platform.shards[0].info.remote())["pid"]
        # Ray starts it again
        killed = FaultAfter(cluster, 300, lambda: ray.kill(platform.shards[0], no_restart=False))
        loop = SchedulingLoop(platform, cluster, on_bound=killed)
        first = pods(cluster, "p", 1500)
        settle_and_check(loop, platform, cluster)
        assert killed.at is not None and loop.faults.shard_failures >= 1
        after = loop.dispatcher.stats.decided_by_shard[0]
        later = pods(cluster, "later", 300)
        settle_and_check(loop, platform, cluster)
        assert loop.dispatcher.stats.decided_by_shard[0] > after  # the new shard decides
        assert ray.get(platform.shards[0].info.remote())["pid"] != before
    assert all(k in cluster.bindings for k in first + later)


def test_a_shard_that_stops_answering_is_restarted_and_its_pods_placed(redis_url, key_prefix):
    """SIGSTOP: the process lives but answers nothing, as when it is stuck or cut off.
    After `shard_timeout_s` the loop kills it, Ray starts it again, and its batches'
    units go to whichever shard asks next."""
    settings = Settings(
        shards=2, redis_url=redis_url, key_prefix=key_prefix, batch_pods=32, shard_timeout_s=1.0
    )
    cluster = cluster_of(settings, 60)
    with Platform(settings) as platform:
        pid = ray.get(platform.shards[1].info.remote())["pid"]
        stopped = FaultAfter(cluster, 200, lambda: os.kill(pid, signal.SIGSTOP))
        loop = SchedulingLoop(platform, cluster, on_bound=stopped)
        placed = pods(cluster, "p", 1200)
        try:
            settle_and_check(loop, platform, cluster)
        finally:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        assert (
            stopped.at is not None
            and loop.faults.shard_restarts >= 1
            and loop.faults.shard_failures >= 1
        )
        assert _answering(platform.shards[1])["pid"] != pid  # a new process
    assert all(k in cluster.bindings for k in placed)


def _answering(actor: ray.actor.ActorHandle, timeout_s: float = 60.0) -> dict:
    """The actor's info once it answers: Ray may still be starting it again."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return ray.get(actor.info.remote(), timeout=timeout_s)
        except ray.exceptions.ActorUnavailableError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_redis_killed_mid_run_is_started_again_built_again_and_nothing_is_lost():
    """The platform's own Redis is killed while pods are in flight at the shards, and
    nobody starts it again: the driver does (`Platform.revive_redis`), empty, and builds
    the store again from the cluster, under a new epoch; every placement made against
    the lost store is refused, never applied."""
    settings = Settings(shards=2, batch_pods=32)  # a private Redis, to kill
    cluster = cluster_of(settings, 60)
    with Platform(settings) as platform:
        assert platform.embedded_redis is not None
        epoch = platform.store.epoch
        killed = FaultAfter(cluster, 300, platform.embedded_redis.kill)
        loop = SchedulingLoop(platform, cluster, on_bound=killed)
        placed = pods(cluster, "p", 1500)
        settle_and_check(loop, platform, cluster)
        assert killed.at is not None and len(loop.faults.store_rebuilds) == 1
        assert platform.store.epoch != epoch
        later = pods(cluster, "later", 300)  # the shards work in the new store
        settle_and_check(loop, platform, cluster)
    assert all(k in cluster.bindings for k in placed + later)


def _bad(doc: dict, path: tuple, value: object) -> dict:
    """A copy of the pod template with one field set to `value` (path of keys/indices)."""
    bad = copy.deepcopy(doc)
    where = bad
    for step in path[:-1]:
        where = where[step] if isinstance(step, int) else where.setdefault(step, {})
    where[path[-1]] = value
    return bad


REQUESTS = ("spec", "containers", 0, "resources", "requests")
AFFINITY = ("spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")


@pytest.mark.parametrize(
    ("name", "path", "value", "told"),
    [
        ("quantity", (*REQUESTS, "cpu"), "12 cores", "spec.containers[0].resources.requests.cpu"),
        ("negative", (*REQUESTS, "memory"), "-1Gi", "spec.containers[0].resources.requests"),
        ("absurd", (*REQUESTS, "cpu"), "100000", "Insufficient cpu"),
        ("selector", ("spec", "nodeSelector"), {"zone": ["a"]}, "spec.nodeSelector"),
        (
            "operator",
            AFFINITY,
            {"nodeSelectorTerms": [{"matchExpressions": [{"key": "z", "operator": "Near"}]}]},
            "operator",
        ),
        ("labels", ("metadata", "labels"), {f"l{i}": "v" for i in range(5000)}, None),
    ],
)
def test_bad_pods_are_told_why_and_the_rest_is_scheduled(
    redis_url, key_prefix, name, path, value, told
):
    """One bad pod among good ones: it is reported (naming the field, or why it fits
    nowhere) or, with thousands of labels, simply placed; the good pods all bind."""
    settings = Settings(shards=2, redis_url=redis_url, key_prefix=key_prefix, batch_pods=16)
    cluster = cluster_of(settings, 20)
    doc = yaml.safe_load(template("pod-default.yaml").read_text())
    doc["metadata"] = {"generateName": "good-"}
    with Platform(settings) as platform:
        loop = SchedulingLoop(platform, cluster)
        good = cluster.create_pods(doc, 100)
        bad_doc = _bad({**doc, "metadata": {"generateName": f"{name}-"}}, path, value)
        [bad] = cluster.create_pods(bad_doc, 1)
        more = cluster.create_pods(doc, 100)
        settle_and_check(loop, platform, cluster)
        unschedulable = loop.dispatcher.unschedulable()
    assert all(k in cluster.bindings for k in good + more)
    if told is None:
        assert bad in cluster.bindings
    else:
        assert bad not in cluster.bindings and told in unschedulable[bad], unschedulable[bad]
        assert told in cluster.reports[bad][1]  # what the pod's condition would say
