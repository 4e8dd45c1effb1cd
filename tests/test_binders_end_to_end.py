"""Several binders, the whole way on real Ray and a real Redis: the driver's binder and
binder actors commit side by side, and the rules and invariants hold as with one."""

from __future__ import annotations

import copy
from collections import Counter

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

HOST = "kubernetes.io/hostname"


def labelled_nodes(cluster: SimulatedCluster, count: int) -> None:
    doc = yaml.safe_load(template("node-default.yaml").read_text())
    for i in range(count):
        one = copy.deepcopy(doc)
        one["metadata"] = {"name": f"node-{i}", "labels": {HOST: f"node-{i}"}}
        cluster.create_nodes(one, 1)


def pod_doc(prefix: str, app: str | None = None, anti: bool = False) -> dict:
    doc = yaml.safe_load(template("pod-default.yaml").read_text())
    doc["metadata"] = {"generateName": f"{prefix}-", "labels": {"app": app} if app else {}}
    if anti:
        term = {"topologyKey": HOST, "labelSelector": {"matchLabels": {"app": app}}}
        doc["spec"]["affinity"] = {
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        }
    return doc


def test_anti_affinity_holds_while_binder_actors_commit_pods_it_selects(redis_url, key_prefix):
    """Web pods keep every app=web pod off their host; loose app=web pods have no rules
    of their own, so until a web pod is committed they go to binder actors, which do
    not re-check anything. The fences make the driver's checks see those commits."""
    settings = Settings(
        shards=4, binders=3, redis_url=redis_url, key_prefix=key_prefix, batch_pods=2, seed=7
    )
    cluster = SimulatedCluster(settings.scheduler_names)
    labelled_nodes(cluster, 12)
    with Platform(settings) as platform:
        loop = SchedulingLoop(platform, cluster)
        loose = cluster.create_pods(pod_doc("loose", "web"), 6)
        webs = cluster.create_pods(pod_doc("web", "web", anti=True), 16)
        plain = cluster.create_pods(pod_doc("plain"), 200)
        loop.run_until_settled()
        unschedulable = loop.dispatcher.unschedulable()
        assert check_invariants(cluster, unschedulable, platform.store) == []
        assert all(loop.commits.by_binder), loop.commits.by_binder  # every binder committed
    assert all(k in cluster.bindings for k in plain)
    apps = Counter(cluster.bindings[k] for k in loose + webs if k in cluster.bindings)
    for key in webs:
        if key in cluster.bindings:  # a web pod is alone among app=web pods on its node
            assert apps[cluster.bindings[key]] == 1, key
    assert any(k in cluster.bindings for k in webs)
    assert all(k in cluster.bindings or k in unschedulable for k in loose + webs)


def test_a_binder_actor_killed_mid_run_loses_nothing(redis_url, key_prefix):
    settings = Settings(
        shards=2, binders=2, redis_url=redis_url, key_prefix=key_prefix, batch_pods=32, seed=8
    )
    cluster = SimulatedCluster(settings.scheduler_names)
    labelled_nodes(cluster, 60)
    with Platform(settings) as platform:
        # Ray starts it again
        killed = FaultAfter(cluster, 300, lambda: ray.kill(platform.binders[0], no_restart=False))
        loop = SchedulingLoop(platform, cluster, on_bound=killed)
        pods = cluster.create_pods(pod_doc("p"), 1500)
        loop.run_until_settled()
        assert killed.at is not None
        assert check_invariants(cluster, loop.dispatcher.unschedulable(), platform.store) == []
        after = loop.commits.by_binder[1]
        cluster.create_pods(pod_doc("later"), 200)
        loop.run_until_settled()
        assert loop.commits.by_binder[1] > after  # the restarted actor commits again
    assert all(k in cluster.bindings for k in pods)
    assert len(cluster.bind_log) == len(cluster.bindings) == 1700  # each bound once
