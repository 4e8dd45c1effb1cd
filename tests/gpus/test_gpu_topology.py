"""NVLink islands and NUMA nodes: pods of several GPUs prefer one, or require it."""

import itertools
import json

import pytest

from cluster.errors import InvalidObject
from cluster.gpus import GPU, GPU_LOCALITY_ANNOTATION, GPU_MILLI, GPU_TOPOLOGY_ANNOTATION
from cluster.manifests import node_from_manifest, pod_from_manifest
from cluster.messages import Decision, PodPlacement
from shards.scheduler import ShardCore
from shards.testing import default_profile, pod_spec, single_pod_batch

_ids = itertools.count(1)
ISLANDS = {"nvlink": [[0, 1, 2, 3], [4, 5, 6, 7]], "numa": [0, 0, 0, 0, 1, 1, 1, 1], "nics": [1]}


def gpu_node(name, topology=ISLANDS, gpus=8):
    meta = {"name": name, "annotations": {GPU_TOPOLOGY_ANNOTATION: json.dumps(topology)}}
    return node_from_manifest(
        {"metadata": meta, "status": {"allocatable": {"cpu": "64", "pods": "110", GPU: str(gpus)}}}
    )


def spec(locality="", **gpu):
    requests = {"cpu": "1", **{GPU_MILLI if k == "share" else GPU: str(v) for k, v in gpu.items()}}
    manifest = pod_spec(requests)
    if locality:
        manifest["metadata"]["annotations"] = {GPU_LOCALITY_ANNOTATION: locality}
    return pod_from_manifest(manifest).spec


def place(core, *specs):
    batch = single_pod_batch(specs)
    return core.handle(batch).decisions


def take(store, node, gpus):
    key = f"ns/x{next(_ids)}"
    store.commit([spec(share=100)], [Decision(key, [PodPlacement(key, 0, [node], [0], gpus)])])


def test_the_topology_annotation_is_read_and_checked():
    node = gpu_node("a")
    assert node.gpu_topology.nvlink == (0, 0, 0, 0, 1, 1, 1, 1)
    assert node.gpu_topology.nics == (1,)
    with pytest.raises(InvalidObject, match="names GPU 3 twice") as err:
        gpu_node("b", {"nvlink": [[0, 1, 3], [3]]}, gpus=4)
    assert err.value.field == f"metadata.annotations.{GPU_TOPOLOGY_ANNOTATION}.nvlink"
    with pytest.raises(InvalidObject, match="one per GPU"):
        gpu_node("c", {"numa": [0, 1]}, gpus=4)
    with pytest.raises(InvalidObject, match="must be JSON"):
        gpu_node("d", "not json")
    with pytest.raises(InvalidObject, match="must be one of nvlink, numa"):
        spec(locality="pcie", gpu=2)


def test_several_gpus_come_from_one_island_when_one_can_hold_them(store):
    store.put_nodes([gpu_node("a")])
    take(store, "a", [0])
    take(store, "a", [5])
    core = ShardCore(0, store, [default_profile()], seed=1)
    [three] = place(core, spec(gpu=3))
    assert three.placements[0].gpus == [1, 2, 3]  # island 0: GPU 0 holds a share
    [four] = place(core, spec(gpu=3))
    assert four.placements[0].gpus == [4, 6, 7]


def test_a_pod_that_requires_one_island_waits_rather_than_span_two(store):
    store.put_nodes([gpu_node("a")])
    take(store, "a", [0])
    take(store, "a", [5])
    core = ShardCore(0, store, [default_profile()], seed=1)
    [spanning] = place(core, spec(gpu=4))
    assert len(spanning.placements[0].gpus) == 4  # preferred only: it may span
    core = ShardCore(1, store, [default_profile()], seed=1)
    [strict] = place(core, spec("nvlink", gpu=4))
    assert not strict.placed
    assert strict.reasons == {f"Insufficient {GPU} within one NVLink island": 1}


def test_the_commit_keeps_a_required_island_whole(store):
    store.put_nodes([gpu_node("a")])
    take(store, "a", [0])
    pod = spec("nvlink", gpu=2)
    # the shard's choice spans islands: the commit picks two GPUs of one island instead
    _, [o], _ = store.commit([pod], [Decision("w", [PodPlacement("ns/w", 0, ["a"], [0], [3, 4])])])
    assert o.status == "committed" and o.gpus in ([[1, 2]], [[4, 5]])
    assert len({g // 4 for g in o.gpus[0]}) == 1
    # a node that says nothing of its islands cannot hold such a pod
    store.put_nodes([gpu_node("plain", {}, gpus=8)])
    _, [o], _ = store.commit([pod], [Decision("v", [PodPlacement("ns/v", 0, ["plain"], [0])])])
    assert o.status == "conflict" and "no nvlink group" in o.detail
