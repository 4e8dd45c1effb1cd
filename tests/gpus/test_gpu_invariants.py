"""The invariant checker counts GPUs one by one, from the indices written on the pods."""

from cluster.cluster_adapter import Binding
from cluster.gpus import GPU, GPU_MILLI
from optimist.offline.invariants import check_invariants
from optimist.offline.simulator import SimulatedCluster
from shards.testing import pod_spec


def cluster_with(*pods):
    cluster = SimulatedCluster()
    cluster.create_nodes(
        {"metadata": {"name": "g"}, "status": {"allocatable": {"cpu": "8", "pods": "9", GPU: "2"}}},
        1,
    )
    for name, requests in pods:
        manifest = pod_spec({"cpu": "1", **requests})
        manifest["metadata"]["name"] = name
        cluster.create_pods(manifest, 1)
    return cluster


def test_gpus_shared_within_their_milli_are_fine():
    cluster = cluster_with(("a", {GPU_MILLI: "600"}), ("b", {GPU_MILLI: "400"}), ("c", {GPU: "1"}))
    cluster.bind([Binding("default/a", "g", (0,)), Binding("default/b", "g", (0,))])
    cluster.bind([Binding("default/c", "g", (1,))])
    assert check_invariants(cluster, []) == []


def test_a_gpu_given_beyond_its_milli_is_a_violation_though_the_node_total_fits():
    cluster = cluster_with(("a", {GPU_MILLI: "600"}), ("b", {GPU_MILLI: "600"}))
    cluster.bind([Binding("default/a", "g", (1,)), Binding("default/b", "g", (1,))])
    assert check_invariants(cluster, []) == ["node g is over-committed on GPU 1: 1200 milli > 1000"]


def test_gpu_indices_must_be_there_and_match_the_request():
    cluster = cluster_with(("a", {GPU: "1"}), ("b", {GPU: "1"}))
    cluster.bind([Binding("default/a", "g", (0, 1)), Binding("default/b", "g")])
    assert check_invariants(cluster, []) == [
        "pod default/a got GPUs 0,1, but asks for 1",
        "pod default/b asks for GPUs but was bound without GPU indices",
    ]
