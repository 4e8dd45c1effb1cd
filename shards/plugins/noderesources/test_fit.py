import numpy as np

from shards.plugins.noderesources import NodeResourcesFit
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
