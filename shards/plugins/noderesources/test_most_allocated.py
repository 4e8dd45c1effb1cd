from shards.plugins.noderesources import MostAllocated
from shards.plugins.noderesources.resource_allocation import ResourceWeight
from shards.testing import compile_pod, every, node, pod_spec, table_of

GPU = "example.com/gpu"
# as the bin packing documentation configures it: an extended resource weighs more
RESOURCES = (ResourceWeight("cpu", 1), ResourceWeight("memory", 1), ResourceWeight(GPU, 3))


def gpu_nodes():
    busy, idle = node("busy", cpu="4", memory="8Gi"), node("idle", cpu="4", memory="8Gi")
    busy.allocatable[GPU] = idle.allocatable[GPU] = 4
    usage = {"busy": {"~cpu": 1000, "~memory": 2 * 2**30, GPU: 2}}
    return table_of([busy, idle], usage)


def test_fuller_nodes_score_higher():
    table = gpu_nodes()
    pod = compile_pod(pod_spec({"cpu": "1", "memory": "2Gi", GPU: "1"}), table)
    # busy: cpu 2/4 = 50, memory 4/8 = 50, gpu 3/4 = 75 -> (50 + 50 + 3 x 75) / 5
    # idle: 25 everywhere
    assert MostAllocated(RESOURCES).score(pod, table, every(table)).tolist() == [65, 25]


def test_an_extended_resource_the_pod_does_not_ask_for_is_left_out():
    table = gpu_nodes()
    pod = compile_pod(pod_spec({"cpu": "1", "memory": "2Gi"}), table)
    assert MostAllocated(RESOURCES).score(pod, table, every(table)).tolist() == [50, 25]


def test_requests_beyond_capacity_count_as_full():
    # non-zero defaults can exceed what a node has; upstream caps them rather than scoring 0
    table = table_of([node("small", cpu="1", memory="1000Mi")], {"small": {"~cpu": 2000}})
    pod = compile_pod(pod_spec({}), table)  # no requests: 100m and 200Mi
    assert MostAllocated().score(pod, table, every(table)).tolist() == [(100 + 20) // 2]
