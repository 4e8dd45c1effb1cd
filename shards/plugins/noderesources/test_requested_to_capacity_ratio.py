import numpy as np
import pytest

from shards.plugins.noderesources import NodeResourcesFit, RequestedToCapacityRatio
from shards.plugins.noderesources.noderesources_args import RequestedToCapacityRatioParam
from shards.plugins.noderesources.requested_to_capacity_ratio import (
    ShapePoint,
    broken_linear,
    shape_of,
)
from shards.plugins.noderesources.resource_allocation import ResourceWeight
from shards.testing import compile_pod, every, node, pod_spec, table_of

GPU = "example.com/gpu"


def shape(*points):
    """The shape as the args read it from the file, then as the strategy holds it."""
    wire = {"shape": [{"utilization": u, "score": s} for u, s in points]}
    return shape_of(RequestedToCapacityRatioParam.from_wire(wire))


def test_shape_scores_are_scaled_to_the_node_score_range():
    assert shape((0, 0), (100, 10)) == (ShapePoint(0, 0), ShapePoint(100, 100))


@pytest.mark.parametrize(
    ("points", "utilization", "score"),
    [
        (((20, 2), (60, 8)), [0, 20, 40, 59, 60, 100], [20, 20, 50, 78, 80, 80]),
        # a falling segment truncates toward zero, as Go divides: 100 - 23.3 is 77, not 76
        (((0, 10), (30, 3)), [0, 10, 30, 90], [100, 77, 30, 30]),
        (((50, 5),), [0, 50, 100], [50, 50, 50]),
    ],
)
def test_broken_linear_function(points, utilization, score):
    assert broken_linear(shape(*points), np.array(utilization)).tolist() == score


@pytest.mark.parametrize("points", [[], [(50, 1), (50, 2)], [(60, 1), (40, 2)]])
def test_shape_needs_increasing_utilization(points):
    with pytest.raises(ValueError):
        shape(*points)


def cluster():
    """A packed node and an empty one, with an extended resource."""
    packed, empty = node("packed", cpu="16", memory="4Gi"), node("empty", cpu="16", memory="4Gi")
    packed.allocatable[GPU] = empty.allocatable[GPU] = 6
    usage = {"packed": {"~cpu": 4000, "~memory": 2**30, GPU: 2}}
    return table_of([packed, empty], usage)


RESOURCES = (ResourceWeight(GPU, 4), ResourceWeight("memory", 1), ResourceWeight("cpu", 2))


@pytest.mark.parametrize(
    ("points", "scores"),
    [
        # bin packing, the documentation's usual shape:
        # packed: gpu 3/6 -> 50, memory 3/4 -> 75, cpu 6/16 -> 37: (4x50 + 75 + 2x37) / 7 = 49.9
        # empty: gpu 1/6 -> 16, memory 2/4 -> 50, cpu 2/16 -> 12: (4x16 + 50 + 2x12) / 7 = 19.7
        (((0, 0), (100, 10)), [50, 20]),
        # the reverse shape spreads: packed (4x50 + 25 + 2x63) / 7, empty (4x84 + 50 + 2x88) / 7
        (((0, 10), (100, 0)), [50, 80]),
    ],
)
def test_weighted_and_rounded_as_upstream(points, scores):
    table = cluster()
    pod = compile_pod(pod_spec({"cpu": "2", "memory": "2Gi", GPU: "1"}), table)
    strategy = RequestedToCapacityRatio(RESOURCES, shape(*points))
    assert strategy.score(pod, table, every(table)).tolist() == scores


def test_resources_scoring_zero_are_left_out_and_over_capacity_is_full():
    table = table_of(
        [node("roomy", cpu="4", memory="1000Gi"), node("over", cpu="4", memory="1Gi")],
        {"over": {"~memory": 2 * 2**30}},
    )
    pod = compile_pod(pod_spec({"cpu": "1", "memory": "1Mi"}), table)
    strategy = RequestedToCapacityRatio(
        (ResourceWeight("cpu"), ResourceWeight("memory")), shape((0, 0), (100, 10))
    )
    # roomy: memory is at 0%, scores 0 and drops out, leaving cpu's 25 alone
    # over: memory is past its capacity, so at 100%
    assert strategy.score(pod, table, every(table)).tolist() == [25, (25 + 100 + 1) // 2]


def test_chosen_by_the_fit_args():
    args = {
        "scoringStrategy": {
            "type": "RequestedToCapacityRatio",
            "resources": [{"name": "cpu", "weight": 2}],
            "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 10}]},
        }
    }
    strategy = NodeResourcesFit.from_args(args).strategy
    assert strategy == RequestedToCapacityRatio((ResourceWeight("cpu", 2),), (ShapePoint(0, 100),))
