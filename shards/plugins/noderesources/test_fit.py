import numpy as np
import pytest

from shards.plugins.noderesources import LeastAllocated, MostAllocated, NodeResourcesFit
from shards.plugins.noderesources.resource_allocation import ResourceWeight
from shards.testing import compile_pod, every, node, pod_spec, table_of


def test_filter_checks_every_requested_resource_and_pod_count():
    table = table_of(
        [node("roomy"), node("busy"), node("full-of-pods", pods="2")],
        usage={"busy": {"cpu": 3500}, "full-of-pods": {"pods": 2}},
    )
    pod = compile_pod(pod_spec({"cpu": "1", "memory": "1Gi"}), table)
    fit = NodeResourcesFit()
    assert fit.filter(pod, table, every(table)).tolist() == [True, False, False]
    assert fit.reasons(pod, table, np.array([1, 2])) == {"Insufficient cpu": 1, "Too many pods": 1}


def test_assumed_usage_counts_like_committed():
    table = table_of([node("a", cpu="1")])
    pod = compile_pod(pod_spec({"cpu": "600m"}), table)
    fit = NodeResourcesFit()
    assert fit.filter(pod, table, every(table)).tolist() == [True]
    table.assume(0, pod.request)
    assert fit.filter(pod, table, every(table)).tolist() == [False]
    table.forget(0, pod.request)
    assert fit.filter(pod, table, every(table)).tolist() == [True]


def test_extended_resource_missing_on_node_is_insufficient():
    table = table_of([node("a")])
    pod = compile_pod(pod_spec({"example.com/foo": "1"}), table)
    fit = NodeResourcesFit()
    assert fit.filter(pod, table, every(table)).tolist() == [False]
    assert fit.reasons(pod, table, np.array([0])) == {"Insufficient example.com/foo": 1}


def test_zero_request_is_not_checked():
    # An over-committed resource the pod does not ask for must not block it.
    table = table_of([node("a", memory="1Gi")], usage={"a": {"memory": 2 * 2**30}})
    pod = compile_pod(pod_spec({"cpu": "1"}), table)
    assert NodeResourcesFit().filter(pod, table, every(table)).tolist() == [True]


@pytest.mark.parametrize(
    ("strategy", "kind"),
    [
        (None, LeastAllocated),
        ({"type": "LeastAllocated"}, LeastAllocated),
        ({"type": "MostAllocated"}, MostAllocated),
    ],
)
def test_args_choose_the_scoring_strategy(strategy, kind):
    args = {} if strategy is None else {"scoringStrategy": strategy}
    chosen = NodeResourcesFit.from_args(args).strategy
    assert chosen == kind((ResourceWeight("cpu"), ResourceWeight("memory")))


def test_args_resources_default_their_weight():
    args = {
        "scoringStrategy": {
            "type": "MostAllocated",
            "resources": [{"name": "cpu", "weight": 0}, {"name": "example.com/gpu", "weight": 3}],
        }
    }
    assert NodeResourcesFit.from_args(args).strategy == MostAllocated(
        (ResourceWeight("cpu", 1), ResourceWeight("example.com/gpu", 3))
    )


@pytest.mark.parametrize(
    "strategy",
    [{"type": "Balanced"}, {"type": "RequestedToCapacityRatio"}],
)
def test_bad_strategies_are_refused(strategy):
    with pytest.raises(ValueError):
        NodeResourcesFit.from_args({"scoringStrategy": strategy})


@pytest.mark.parametrize(
    ("args", "fits"),
    [
        ({}, False),
        ({"ignoredResources": ["example.com/foo"]}, True),
        ({"ignoredResources": ["example.com/bar"]}, False),
        ({"ignoredResourceGroups": ["example.com"]}, True),
        ({"ignoredResourceGroups": ["example"]}, False),
    ],
)
def test_ignored_extended_resources_are_not_checked(args, fits):
    table = table_of([node("a")])
    pod = compile_pod(pod_spec({"cpu": "1", "example.com/foo": "2"}), table)
    fit = NodeResourcesFit.from_args(args)
    assert fit.filter(pod, table, every(table)).tolist() == [fits]
    if not fits:
        assert fit.reasons(pod, table, np.array([0])) == {"Insufficient example.com/foo": 1}


def test_only_extended_resources_can_be_ignored():
    # a native resource stays checked even when its name looks like an ignored group
    table = table_of([node("a", cpu="1")])
    pod = compile_pod(pod_spec({"cpu": "2"}), table)
    fit = NodeResourcesFit.from_args(
        {"ignoredResources": ["cpu"], "ignoredResourceGroups": ["cpu"]}
    )
    assert fit.filter(pod, table, every(table)).tolist() == [False]
