"""The whole way, on real Ray and a real Redis: dispatcher -> shards -> binder -> cluster.

Every run ends with the independent invariant checker, and the tests
recompute the essentials themselves as well.
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import replace

import pytest
import ray
import yaml

from benchmarks.cases import template
from benchmarks.simulated.sim_bench import Workload, run_bench
from cluster.manifests import pod_from_manifest
from optimist.offline.invariants import check_invariants
from optimist.settings import Settings

pytestmark = pytest.mark.usefixtures("ray_session")


def write_template(tmp_path, name, doc):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return path


def node_template(tmp_path, cpu="4", memory="32Gi", pods="110"):
    doc = yaml.safe_load(template("node-default.yaml").read_text())
    doc["status"]["capacity"] = {"cpu": cpu, "memory": memory, "pods": pods}
    return write_template(tmp_path, "node.yaml", doc)


def pod_template(tmp_path, name="pod.yaml", **requests):
    doc = yaml.safe_load(template("pod-default.yaml").read_text())
    resources = doc["spec"]["containers"][0]["resources"]
    resources["requests"].update(requests)
    resources["limits"] = dict(resources["requests"])
    return write_template(tmp_path, name, doc)


def assert_no_overcommit(cluster):
    """Recomputed here, apart from the checker: per node, requests within allocatable."""
    used: dict[str, Counter] = {}
    for pod_key, node in cluster.bindings.items():
        requests = pod_from_manifest(cluster.pod_manifests[pod_key]).spec.requests
        used.setdefault(node, Counter()).update(dict(requests))
    for node, usage in used.items():
        for resource in ("cpu", "memory", "pods"):
            assert usage[resource] <= cluster.nodes[node].allocatable[resource], (node, resource)


def test_two_thousand_pods_three_shards(tmp_path, redis_url, key_prefix):
    settings = Settings(
        shards=3, redis_url=redis_url, key_prefix=key_prefix, batch_pods=128, seed=3
    )
    run = run_bench(
        settings,
        Workload(200, 2000, template("node-default.yaml"), template("pod-default.yaml")),
    )
    r = run.report.model_dump()
    assert r["invariant_violations"] == []
    assert r["pods_scheduled"] == 2000 and r["pods_unschedulable"] == 0
    assert len(run.cluster.bindings) == len(run.cluster.bind_log) == 2000
    assert_no_overcommit(run.cluster)
    assert sum(s["pods"] for s in r["shards"]) == 2000
    assert all(s["pods"] > 0 for s in r["shards"])  # every shard did work
    assert all(s["busy_s"] > 0 and 0 <= s["idle_fraction"] <= 1 for s in r["shards"])
    assert r["throughput_pods_per_s"]["average"] > 0
    assert r["redis_commands"] > 0 and 0 < r["redis_commands_per_pod"] < 1000
    # 2000 pods in batches of 128: a sync and a commit per batch, and little else
    assert 0 < r["redis_round_trips_per_pod"] < 0.1
    assert r["rollbacks"] == {"total": 0, "shard": 0, "commit": 0}  # no gangs, nothing undone


@pytest.mark.parametrize("mode", ["fine", "coarse"])
def test_conflicts_happen_are_retried_and_nothing_breaks(tmp_path, redis_url, key_prefix, mode):
    """Four shards decide their first batches on one view of the store, before any is
    committed (the test waits for every answer first): each puts its ten pods on the
    node they all prefer, which holds twenty. Two batches fit there; the others
    conflict, are tried again, and land on the other node."""
    from optimist.loop import SchedulingLoop
    from optimist.offline.simulator import SimulatedCluster, load_template
    from optimist.runtime import Platform

    settings = Settings(
        shards=4,
        redis_url=redis_url,
        key_prefix=key_prefix,
        batch_pods=10,
        candidates=1,  # a conflict is not avoided by the binder taking a second choice
        seed=5,
        conflict_mode=mode,
    )
    cluster = SimulatedCluster(settings.scheduler_names)
    node = load_template(node_template(tmp_path, cpu="2"))  # twenty pods of 100m each
    preferred = copy.deepcopy(node)
    preferred["metadata"]["labels"] = {"zone": "preferred"}
    cluster.create_nodes(preferred, 1)
    cluster.create_nodes(node, 1)
    pod = load_template(pod_template(tmp_path, cpu="100m"))
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["preferred"]}]}
    pod["spec"]["affinity"] = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": term}]
        }
    }
    with Platform(settings) as platform:
        loop = SchedulingLoop(platform, cluster)
        cluster.create_pods(pod, 40)
        loop.ingest()
        loop.feed()
        sent = list(loop.pipelines.out)
        assert len(sent) == 4  # a batch of ten for each shard
        ray.wait(sent, num_returns=len(sent))  # every shard has decided: none committed yet
        loop.run_until_settled()
        unschedulable = loop.dispatcher.unschedulable()
        assert check_invariants(cluster, unschedulable, platform.store) == []
    stats = loop.dispatcher.stats
    # fine: the third and fourth batches found the node full; coarse: the second too,
    # as the node had changed since it looked
    assert stats.conflicts == 20 if mode == "fine" else stats.conflicts >= 30
    assert stats.pod_attempts == 40 + stats.conflicts  # each conflicted pod tried again
    assert unschedulable == {} and len(cluster.bindings) == 40
    assert sorted(Counter(cluster.bindings.values()).values()) == [20, 20]
    assert_no_overcommit(cluster)


def test_unschedulable_pods_are_reported_with_reasons(tmp_path, redis_url, key_prefix):
    settings = Settings(shards=2, redis_url=redis_url, key_prefix=key_prefix, seed=1)
    run = run_bench(
        settings,
        Workload(5, 50, node_template(tmp_path, cpu="1"), pod_template(tmp_path, cpu="300m")),
    )
    r = run.report.model_dump()
    assert r["pods_scheduled"] == 15  # 3 per node
    assert r["pods_unschedulable"] == 35
    assert r["unschedulable_reasons"] == {"0/5 nodes are available: 5 Insufficient cpu.": 35}
    assert r["invariant_violations"] == []


def test_bad_pods_are_reported_and_the_rest_is_scheduled(tmp_path, redis_url, key_prefix):
    from optimist.loop import SchedulingLoop
    from optimist.offline.simulator import SimulatedCluster, load_template
    from optimist.runtime import Platform

    settings = Settings(shards=2, redis_url=redis_url, key_prefix=key_prefix)
    cluster = SimulatedCluster(settings.scheduler_names)
    cluster.create_nodes(load_template(template("node-default.yaml")), 10)
    good = load_template(template("pod-default.yaml"))
    bad = copy.deepcopy(good)
    bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    other = copy.deepcopy(good)
    other["spec"]["schedulerName"] = "someone-else"
    with Platform(settings) as platform:
        loop = SchedulingLoop(platform, cluster)
        cluster.create_pods(good, 40)
        bad_keys = cluster.create_pods(bad, 3)
        others = cluster.create_pods(other, 5)
        loop.run_until_settled()
        unschedulable = loop.dispatcher.unschedulable()
        assert check_invariants(cluster, unschedulable, platform.store) == []
    assert set(unschedulable) == set(bad_keys)
    assert all("spec.containers[0].resources.requests.cpu" in unschedulable[k] for k in bad_keys)
    assert all("'lots'" in unschedulable[k] for k in bad_keys)
    assert len(cluster.bindings) == 40
    assert not set(others) & set(cluster.bindings)  # another scheduler's pods are left alone


def test_host_ports_across_shards_are_never_doubled(tmp_path, redis_url, key_prefix):
    # Eight nodes, twelve pods that each want host port 8080 from four shards: the shards
    # do not see each other's choices, so the binder's re-check is what keeps one per node.
    doc = yaml.safe_load(template("pod-default.yaml").read_text())
    doc["spec"]["containers"][0]["ports"] = [{"containerPort": 8080, "hostPort": 8080}]
    pods = write_template(tmp_path, "hostport.yaml", doc)
    settings = Settings(shards=4, redis_url=redis_url, key_prefix=key_prefix, batch_pods=1, seed=2)
    settings = replace(
        settings,
        profiles=(
            replace(settings.profiles[0], filters=(*settings.profiles[0].filters, "NodePorts")),
        ),
    )
    run = run_bench(settings, Workload(8, 12, template("node-default.yaml"), pods))
    r = run.report.model_dump()
    assert r["invariant_violations"] == []
    assert r["pods_scheduled"] == 8
    assert sorted(Counter(run.cluster.bindings.values()).values()) == [1] * 8
    assert r["unschedulable_reasons"] == {
        "0/8 nodes are available: 8 node(s) didn't have free ports for the requested pod ports.": 4
    }


def test_cross_pod_rules_hold_across_shards(redis_url, key_prefix):
    """Four shards race to place pods whose rules depend on each other's pods.

    Each shard sees the others' pods only after they commit; the binder's
    re-check against the committed state is what keeps the rules. Checked
    here directly from the bindings, apart from the plugins' own code.
    """
    from optimist.loop import SchedulingLoop
    from optimist.offline.simulator import SimulatedCluster
    from optimist.runtime import Platform

    settings = Settings(shards=4, redis_url=redis_url, key_prefix=key_prefix, batch_pods=2, seed=4)
    cluster = SimulatedCluster(settings.scheduler_names)
    node_doc = yaml.safe_load(template("node-default.yaml").read_text())
    for i in range(12):
        doc = copy.deepcopy(node_doc)
        name = f"node-{i}"
        doc["metadata"] = {
            "name": name,
            "labels": {"zone": f"z{i % 3}", "kubernetes.io/hostname": name},
        }
        cluster.create_nodes(doc, 1)
    pod_doc = yaml.safe_load(template("pod-default.yaml").read_text())
    web = copy.deepcopy(pod_doc)
    web["metadata"] = {"generateName": "web-", "labels": {"app": "web"}}
    web["spec"]["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "topologyKey": "kubernetes.io/hostname",
                    "labelSelector": {"matchLabels": {"app": "web"}},
                }
            ]
        }
    }
    spread = copy.deepcopy(pod_doc)
    spread["metadata"] = {"generateName": "spread-", "labels": {"app": "spread"}}
    spread["spec"]["topologySpreadConstraints"] = [
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "spread"}},
        }
    ]
    with Platform(settings) as platform:
        loop = SchedulingLoop(platform, cluster)
        webs = cluster.create_pods(web, 16)
        spreads = cluster.create_pods(spread, 30)
        loop.run_until_settled()
        unschedulable = loop.dispatcher.unschedulable()
        assert check_invariants(cluster, unschedulable, platform.store) == []
    web_nodes = Counter(cluster.bindings[k] for k in webs if k in cluster.bindings)
    assert len(web_nodes) == 12 and max(web_nodes.values()) == 1  # one per node, never two
    assert len(set(webs) & set(unschedulable)) == 4
    zones = Counter(cluster.nodes[cluster.bindings[k]].labels["zone"] for k in spreads)
    assert sum(zones.values()) == 30 and max(zones.values()) - min(zones.values()) <= 1
