"""GPUTopology: tiers by whether one NVLink island, or one NUMA node, can hold the pod."""

import json

from cluster.gpus import GPU, GPU_MILLI, GPU_TOPOLOGY_ANNOTATION
from cluster.manifests import node_from_manifest, pod_from_manifest
from cluster.messages import Decision, PodPlacement
from cluster.profile_config import ProfileConfig
from shards.plugins import build_profile
from shards.plugins.gpu_topology import GPUTopology
from shards.scheduler import ShardCore
from shards.testing import compile_pod, every, pod_spec, single_pod_batch, table_of

# four islands of two GPUs, two NUMA nodes of four
PAIRS = {"nvlink": [[0, 1], [2, 3], [4, 5], [6, 7]], "numa": [0, 0, 0, 0, 1, 1, 1, 1]}
QUADS = {"nvlink": [[0, 1, 2, 3], [4, 5, 6, 7]], "numa": [0, 0, 0, 0, 1, 1, 1, 1]}


def gpu_node(name, topology=None):
    meta = {"name": name, "annotations": {}}
    if topology is not None:
        meta["annotations"][GPU_TOPOLOGY_ANNOTATION] = json.dumps(topology)
    allocatable = {"cpu": "64", "memory": "256Gi", "pods": "110", GPU: "8"}
    return node_from_manifest({"metadata": meta, "status": {"allocatable": allocatable}})


def gpus(n=0, share=0):
    return pod_spec({"cpu": "1", GPU: str(n)} if n else {"cpu": "1", GPU_MILLI: str(share)})


def test_an_island_that_holds_the_pod_beats_a_numa_node_beats_neither():
    nodes = [gpu_node("island", QUADS), gpu_node("numa", PAIRS), gpu_node("unsaid")]
    table = table_of(nodes)
    plugin = GPUTopology()
    assert plugin.score(compile_pod(gpus(4), table), table, every(table)).tolist() == [100, 50, 0]
    assert plugin.score(compile_pod(gpus(2), table), table, every(table)).tolist() == [100, 100, 0]
    for alike in (gpus(1), gpus(share=300), pod_spec({"cpu": "1"})):
        assert plugin.score(compile_pod(alike, table), table, every(table)).tolist() == [0, 0, 0]


def test_a_group_counts_only_with_enough_gpus_free(store):
    """GPU 1 in use: the first island can no longer hold four, the first NUMA node
    neither; the second island can."""
    store.put_nodes([gpu_node("a", QUADS)])
    key = "ns/x"
    share = pod_from_manifest(gpus(share=100)).spec
    store.commit([share], [Decision(key, [PodPlacement(key, 0, ["a"], [0], [1])])])
    core = ShardCore(0, store, [build_profile(_profile())], seed=1)
    core.handle(single_pod_batch([]))  # sync the store
    plugin, table = GPUTopology(), core.table
    assert plugin.score(compile_pod(gpus(4), table), table, every(table)).tolist() == [100]
    assert plugin.score(compile_pod(gpus(5), table), table, every(table)).tolist() == [0]


def test_the_shard_takes_the_node_whose_island_holds_the_pod(store):
    """LeastAllocated alone would take the emptier node, where four GPUs must span two
    islands; with GPUTopology the pod goes where one island holds it."""
    store.put_nodes([gpu_node("pairs", PAIRS), gpu_node("quads", QUADS)])
    key = "ns/x"
    share = pod_from_manifest(gpus(share=100)).spec
    store.commit([share], [Decision(key, [PodPlacement(key, 0, ["quads"], [0], [7])])])
    four = pod_from_manifest(gpus(4)).spec
    chosen = {}
    for scorers in ((("NodeResourcesFit", 1),), (("NodeResourcesFit", 1), ("GPUTopology", 2))):
        core = ShardCore(0, store, [build_profile(_profile(scorers))], seed=1)
        [decision] = core.handle(single_pod_batch([four])).decisions
        chosen[len(scorers)] = decision.placements[0].nodes[0]
    assert chosen == {1: "pairs", 2: "quads"}


def _profile(scorers=(("GPUTopology", 1),)):
    return ProfileConfig(
        "default-scheduler",
        filters=("NodeResourcesFit",),
        scorers=scorers,
        percentage_of_nodes_to_score=100,
    )
