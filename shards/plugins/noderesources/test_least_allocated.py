from shards.plugins.noderesources import LeastAllocated
from shards.plugins.noderesources.resource_allocation import ResourceWeight
from shards.testing import compile_pod, every, node, pod_spec, table_of


def reference(requested, capacity):
    """Upstream's leastRequestedScore, per resource, then the integer weighted mean."""
    scores = [
        0 if c == 0 or r > c else (c - r) * 100 // c
        for r, c in zip(requested, capacity, strict=True)
    ]
    return sum(scores) // len(scores)


def test_matches_upstream_arithmetic():
    # Documented example: node 4 CPU / 10000 MiB; pod 3 CPU / 5000 MiB on an empty node.
    table = table_of([node("a", cpu="4", memory="10000Mi"), node("b", cpu="6", memory="10000Mi")])
    pod = compile_pod(pod_spec({"cpu": "3", "memory": "5000Mi"}), table)
    scores = LeastAllocated().score(pod, table, every(table)).tolist()
    mib = 2**20
    assert scores == [
        reference([3000, 5000 * mib], [4000, 10000 * mib]),  # (25 + 50) // 2 = 37
        reference([3000, 5000 * mib], [6000, 10000 * mib]),  # (50 + 50) // 2 = 50
    ]
    assert scores == [37, 50]


def test_pods_without_requests_score_with_nonzero_defaults():
    table = table_of([node("a", cpu="1", memory="1000Mi")])
    pod = compile_pod(pod_spec({}), table)
    # 100m of 1 CPU -> 90; 200Mi of 1000Mi -> 80
    assert LeastAllocated().score(pod, table, every(table)).tolist() == [85]


def test_over_capacity_scores_zero_for_that_resource():
    table = table_of([node("a", cpu="1", memory="1Gi")], usage={"a": {"~cpu": 2000}})
    # memory asked as an explicit 0 stays 0 (only a missing request is defaulted)
    pod = compile_pod(pod_spec({"cpu": "100m", "memory": "0"}), table)
    assert LeastAllocated().score(pod, table, every(table)).tolist() == [(0 + 100) // 2]


def test_resources_a_node_lacks_or_upstream_never_scores_are_left_out():
    gpu = node("gpu", cpu="4", memory="8Gi")
    gpu.allocatable["example.com/gpu"] = 2
    table = table_of([gpu, node("plain", cpu="4", memory="8Gi")])
    resources = (
        ResourceWeight("cpu"),
        ResourceWeight("memory"),
        ResourceWeight("example.com/gpu", 5),
        ResourceWeight("pods", 5),
    )
    asks_gpu = compile_pod(pod_spec({"cpu": "2", "memory": "2Gi", "example.com/gpu": "1"}), table)
    # gpu: (50 + 75 + 5 x 50) / 7; plain has no gpu: (50 + 75) / 2
    assert LeastAllocated(resources).score(asks_gpu, table, every(table)).tolist() == [53, 62]
    no_gpu = compile_pod(pod_spec({"cpu": "2", "memory": "2Gi"}), table)
    assert LeastAllocated(resources).score(no_gpu, table, every(table)).tolist() == [62, 62]
