from shards.plugins.noderesources import NodeResourcesBalancedAllocation
from shards.plugins.noderesources.resource_allocation import ResourceWeight
from shards.testing import compile_pod, every, node, pod_spec, table_of

GPU = "example.com/gpu"


def score(table, requests, plugin=None):
    pod = compile_pod(pod_spec(requests), table)
    return (plugin or NodeResourcesBalancedAllocation()).score(pod, table, every(table)).tolist()


def test_two_resources_score_by_half_their_difference():
    table = table_of([node("a", cpu="4", memory="8Gi")], {"a": {"cpu": 1000, "memory": 2 * 2**30}})
    # cpu 2/4 = 0.5, memory 6/8 = 0.75: std 0.125, score 87.5 truncated
    assert score(table, {"cpu": "1", "memory": "4Gi"}) == [87]


def test_actual_requests_not_the_non_zero_defaults():
    # On a node with 1 CPU and 100Gi, the defaults (100m, 200Mi) would look unbalanced
    # (0.1 against 0.002: 95); upstream scores the actual requests, none at all.
    table = table_of([node("a", cpu="1", memory="100Gi")])
    assert score(table, {}) == [100]


def test_three_resources_use_the_standard_deviation():
    gpu = node("a", cpu="4", memory="8Gi")
    gpu.allocatable[GPU] = 4
    table = table_of([gpu])
    plugin = NodeResourcesBalancedAllocation(
        (ResourceWeight("cpu"), ResourceWeight("memory"), ResourceWeight(GPU))
    )
    # fractions 0.5, 0.25 and 1.0
    assert score(table, {"cpu": "2", "memory": "2Gi", GPU: "4"}, plugin) == [68]
    # without the gpu requested it is left out: 0.5 against 0.25
    assert score(table, {"cpu": "2", "memory": "2Gi"}, plugin) == [87]


def test_fractions_are_capped_at_one():
    table = table_of([node("a", cpu="4", memory="8Gi")], {"a": {"cpu": 5000}})
    # cpu 6/4 counts as 1.0, memory 2/8 = 0.25
    assert score(table, {"cpu": "1", "memory": "2Gi"}) == [62]


def test_resources_from_args():
    plugin = NodeResourcesBalancedAllocation.from_args(
        {"resources": [{"name": "cpu", "weight": 1}, {"name": GPU, "weight": 1}]}
    )
    assert plugin.resources == (ResourceWeight("cpu"), ResourceWeight(GPU))
    assert NodeResourcesBalancedAllocation.from_args({}).resources == (
        ResourceWeight("cpu"),
        ResourceWeight("memory"),
    )
    # a single fraction has no deviation
    table = table_of([node("a", cpu="4")])
    assert score(table, {"cpu": "3"}, plugin) == [100]
