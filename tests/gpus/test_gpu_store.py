"""GPUs per device in the node store: the commit script checks, chooses and gives back GPUs."""

import pytest

from cluster.errors import InvalidObject
from cluster.gpus import GPU, GPU_INDICES_ANNOTATION, GPU_MILLI, GpuDemand
from cluster.manifests import pod_from_manifest
from cluster.messages import Conflict, Decision, PodPlacement
from shards.testing import node, pod_spec


def share(milli):
    return pod_from_manifest(pod_spec({"cpu": "1", GPU_MILLI: str(milli)})).spec


def whole(gpus):
    return pod_from_manifest(pod_spec({"cpu": "1", GPU: str(gpus)})).spec


def placed(unit, pod, cls, nodes, gpus=()):
    return Decision(unit, [PodPlacement(pod, cls, list(nodes), [0] * len(nodes), list(gpus))])


def test_a_pod_asks_for_whole_gpus_or_a_share_and_whole_gpus_take_their_milli():
    assert dict(whole(2).requests)[GPU_MILLI] == 2000
    assert GpuDemand.of(dict(whole(2).requests)) == GpuDemand(whole=2)
    assert GpuDemand.of(dict(share(300).requests)) == GpuDemand(share=300)
    with pytest.raises(InvalidObject, match="at most 1000"):
        share(1500)
    with pytest.raises(InvalidObject, match="not both") as err:
        pod_from_manifest(pod_spec({GPU: "1", GPU_MILLI: "500"}))
    assert err.value.field.endswith(GPU_MILLI)


def test_a_node_has_a_thousand_milli_per_gpu():
    assert node("g", gpus=4).allocatable[GPU_MILLI] == 4000
    assert GPU_MILLI not in node("c").allocatable


def test_shares_fit_per_gpu_not_only_in_total(store):
    store.put_nodes([node("a", cpu="8", gpus=2)])
    decisions = [placed(f"u{i}", f"ns/p{i}", 0, ["a"]) for i in range(3)]
    _, outcomes, _ = store.commit([share(600)], decisions)
    # 1,800 of 2,000 milli in total, but no GPU has 600 left for the third
    assert [o.status for o in outcomes] == ["committed", "committed", "conflict"]
    assert sorted(g for o in outcomes[:2] for g in o.gpus) == [[0], [1]]
    assert "fewer than 1 of its 2 GPUs have 600 milli free" in outcomes[2].detail
    assert outcomes[2].conflict == Conflict.GPUS
    assert store.gpu_usage("a") == [600, 600]
    assert store.usage("a")[GPU_MILLI] == 1200


def test_whole_gpus_need_untouched_gpus(store):
    store.put_nodes([node("a", cpu="8", gpus=4)])
    _, [s0, s1], _ = store.commit(
        [share(300)], [placed("s0", "ns/s0", 0, ["a"], [0]), placed("s1", "ns/s1", 0, ["a"], [1])]
    )
    assert s0.gpus == [[0]] and s1.gpus == [[1]]  # the shard's choice, where it fits
    _, [big], _ = store.commit([whole(3)], [placed("w", "ns/w", 0, ["a"])])
    assert big.status == "conflict"  # 3,600 of 4,000 in total, but two GPUs untouched
    _, [two], _ = store.commit([whole(2)], [placed("w", "ns/w", 0, ["a"])])
    assert two.status == "committed" and two.gpus == [[2, 3]]
    assert store.gpu_usage("a") == [300, 300, 1000, 1000]


def test_a_stale_choice_is_replaced_by_the_tightest_gpu_that_fits(store):
    store.put_nodes([node("a", cpu="8", gpus=3)])
    store.commit(
        [share(500), share(200)],
        [placed("x", "ns/x", 0, ["a"], [0]), placed("y", "ns/y", 1, ["a"], [1])],
    )
    # the shard thought GPU 0 free; it is not: GPU 1 (800 free) fits tighter than GPU 2
    _, [o], _ = store.commit([share(700)], [placed("z", "ns/z", 0, ["a"], [0])])
    assert o.gpus == [[1]]
    # indices that are not the node's GPUs are no choice at all: GPU 1 has 100 left
    _, [o], _ = store.commit([share(100)], [placed("w", "ns/w", 0, ["a"], [7])])
    assert o.gpus == [[1]] and store.gpu_usage("a") == [500, 1000]


def test_later_pods_of_a_unit_see_the_gpus_earlier_ones_took(store):
    store.put_nodes([node("a", cpu="8", gpus=1)])
    gang = Decision(
        "g",
        [PodPlacement(f"ns/g{i}", 0, ["a"], [0], [0]) for i in range(2)],
    )
    _, [o], _ = store.commit([share(600)], [gang])
    assert o.status == "conflict" and store.gpu_usage("a") == []


def test_release_gives_the_gpus_back_and_readers_see_each_change(store):
    store.put_nodes([node("a", cpu="8", gpus=2)])
    v0 = store.version()
    store.commit([whole(1)], [placed("u", "ns/p", 0, ["a"], [1])])
    assert store.changes_since(v0, ["pods"]).gpus == {"a": [0, 1000]}
    assert store.committed_placements(["u"]) == {"u": {"ns/p": ("a", [1])}}
    v1 = store.version()
    store.release(["u"])
    assert store.gpu_usage("a") == [0, 0]
    assert store.changes_since(v1, ["pods"]).gpus == {"a": [0, 0]}


def test_pods_bound_by_others_keep_the_gpus_their_annotation_names(store):
    store.put_nodes([node("a", cpu="8", gpus=2)])
    manifest = pod_spec({"cpu": "1", GPU: "1"}, nodeName="a")
    manifest["metadata"]["annotations"] = {GPU_INDICES_ANNOTATION: "1"}
    running = pod_from_manifest(manifest)
    [outcome] = store.observe([running])
    assert outcome.gpus == [[1]] and store.gpu_usage("a") == [0, 1000]


def test_pods_bound_by_others_without_indices_go_on_the_least_used_gpus(store):
    store.put_nodes([node("a", cpu="8", gpus=3)])
    store.commit([share(700)], [placed("x", "ns/x", 0, ["a"], [0])])
    store.commit([share(300)], [placed("y", "ns/y", 0, ["a"], [2])])
    running = pod_from_manifest(pod_spec({"cpu": "1", GPU: "1"}, nodeName="a"))
    [outcome] = store.observe([running])
    assert outcome.gpus == [[1]]  # untouched; the fullest would have been GPU 0
    # fit or not, it is there: an over-full GPU is recorded as it is
    named = pod_spec({"cpu": "1", GPU: "1"}, nodeName="a")
    named["metadata"] = {
        "name": "q",
        "namespace": "default",
        "annotations": {GPU_INDICES_ANNOTATION: "0"},
    }
    [outcome] = store.observe([pod_from_manifest(named)])
    assert outcome.gpus == [[0]] and store.gpu_usage("a") == [1700, 1000, 300]
