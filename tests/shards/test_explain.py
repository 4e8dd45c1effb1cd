"""`ShardCore.explain` against the shard's own choice, on random clusters and pods."""

import random

import pytest

from cluster.explanation import ExplainRequest, UnitExplanation
from cluster.manifests import pod_from_manifest
from cluster.messages import ShardBatch, UnitRequest
from optimist.configuration import default_configuration
from optimist.settings import Settings
from shards.plugins import build_profile
from shards.scheduler import ShardCore
from shards.testing import node, pod_spec

ZONES = ("a", "b", "c")


def default_profile(percentage, tie_seed):
    settings = Settings.from_configuration(default_configuration())
    profile = build_profile(settings.profiles[0])
    profile.percentage_of_nodes_to_score = percentage
    profile.tie_seed = tie_seed
    return profile


def random_node(rng, i):
    taints = []
    if rng.random() < 0.2:
        taints = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    if rng.random() < 0.1:
        taints.append({"key": "slow", "effect": "PreferNoSchedule"})
    return node(
        f"n{i:03d}",
        cpu=str(rng.choice([2, 4, 8])),
        memory=f"{rng.choice([4, 8, 16])}Gi",
        labels={"zone": rng.choice(ZONES), "disk": rng.choice(["ssd", "hdd"])},
        taints=taints,
        unschedulable=rng.random() < 0.05,
    )


def random_spec(rng):
    spec = {}
    if rng.random() < 0.3:
        spec["nodeSelector"] = {"zone": rng.choice(ZONES)}
    if rng.random() < 0.3:
        spec["affinity"] = {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": rng.randint(1, 100),
                        "preference": {
                            "matchExpressions": [
                                {"key": "disk", "operator": "In", "values": ["ssd"]}
                            ]
                        },
                    }
                ]
            }
        }
    if rng.random() < 0.3:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    cpu = rng.choice([100, 500, 1500, 3000, 12000])  # 12 cpus: no node has them
    requests = {"cpu": f"{cpu}m", "memory": f"{rng.randint(1, 6)}Gi"}
    return pod_from_manifest(pod_spec(requests, **spec)).spec


def one_pod(spec, key):
    return ShardBatch(1, [spec], [UnitRequest(f"unit-{key}", [(key, 0)])])


@pytest.mark.parametrize("percentage", [100, 30, None])
@pytest.mark.parametrize("tie_seed", [None, 7])
def test_explain_names_the_node_the_shard_then_chooses(store, percentage, tie_seed):
    rng = random.Random(f"{percentage}-{tie_seed}")
    store.put_nodes([random_node(rng, i) for i in range(150)])
    core = ShardCore(0, store, [default_profile(percentage, tie_seed)], seed=3)
    compared = unplaced = 0
    for n in range(60):
        spec = random_spec(rng)
        request = ExplainRequest(f"unit-{n}", [spec], [(f"ns/p{n}", 0)], top=3)
        explained = UnitExplanation.decode(core.explain(request).encode())
        [pod] = explained.pods
        decision = core.handle(one_pod(spec, f"ns/p{n}")).decisions[0]
        chosen = decision.placements[0].nodes[0] if decision.placed else ""
        assert pod.chosen == chosen, f"pod {n}"
        assert explained.fits == decision.placed
        if not chosen:
            unplaced += 1
            assert pod.summary == decision.summary()
            continue
        compared += 1
        best = pod.verdicts()[0]
        assert best.node == chosen and best.scored and not best.rejected_by
        # the scores add up: every feasible node's total is its parts, weighted
        weights = [s.weight for s in pod.scorers]
        for verdict in pod.verdicts():
            if verdict.total >= 0:
                assert verdict.total == sum(
                    n * w for n, w in zip(verdict.normalized, weights, strict=True)
                )
        assert len(pod.verdicts()) == 3 and pod.scored <= pod.feasible
        assert pod.margin >= 0
    assert compared > 30 and unplaced  # both kinds of answer were checked


def test_filters_are_judged_each_on_every_node_and_summed_as_upstream(store):
    store.put_nodes(
        [
            node("small", cpu="1"),
            node("tainted", cpu="8", taints=[{"key": "k", "effect": "NoSchedule"}]),
            node("cordoned", cpu="8", unschedulable=True),
            node("small-tainted", cpu="1", taints=[{"key": "k", "effect": "NoSchedule"}]),
        ]
    )
    core = ShardCore(0, store, [default_profile(100, None)], seed=1)
    spec = pod_from_manifest(pod_spec({"cpu": "2"})).spec
    [pod] = core.explain(ExplainRequest("u", [spec], [("ns/p", 0)])).pods
    verdicts = {f.plugin: f for f in pod.filters}
    assert (verdicts["TaintToleration"].rejected, verdicts["NodeResourcesFit"].rejected) == (2, 2)
    # upstream counts a node once, for the first filter that rejects it
    assert verdicts["NodeResourcesFit"].first == 1 and verdicts["TaintToleration"].first == 2
    assert verdicts["NodeUnschedulable"].first == 1
    assert pod.summary.startswith("0/4 nodes are available: ")
    by_node = {v.node: v.rejected_by for v in pod.verdicts()}
    assert by_node["small-tainted"] == ["TaintToleration", "NodeResourcesFit"]
    assert not pod.chosen and pod.feasible == 0 and len(pod.verdicts()) == 4


def test_a_gang_is_judged_pod_after_pod_and_nothing_stays_assumed(store):
    store.put_nodes([node("a", cpu="2"), node("b", cpu="2")])
    core = ShardCore(0, store, [default_profile(100, 1)], seed=1)
    spec = pod_from_manifest(pod_spec({"cpu": "1500m"})).spec
    request = ExplainRequest("gang", [spec], [(f"ns/p{i}", 0) for i in range(3)], 3)
    gang = core.explain(request)
    chosen = [p.chosen for p in gang.pods]
    assert sorted(chosen[:2]) == ["a", "b"] and chosen[2] == ""
    assert not gang.fits
    again = core.explain(request)  # the first explanation left nothing behind
    assert [p.chosen for p in again.pods] == chosen


def test_a_bound_pod_is_judged_with_its_own_room_given_back(store):
    store.put_nodes([node("a", cpu="2")])
    core = ShardCore(0, store, [default_profile(100, None)], seed=1)
    spec = pod_from_manifest(pod_spec({"cpu": "2"})).spec
    batch = one_pod(spec, "ns/p")
    store.commit(batch.classes, core.handle(batch).decisions)
    unbound = ExplainRequest("u", [spec], [("ns/p", 0)])
    assert core.explain(unbound).pods[0].chosen == ""  # the node is full: with this pod
    bound = ExplainRequest("u", [spec], [("ns/p", 0)], bound=["a"])
    assert core.explain(bound).pods[0].chosen == "a"
    assert core.explain(unbound).pods[0].chosen == ""
