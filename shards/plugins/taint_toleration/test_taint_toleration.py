import pytest

from shards.plugins.taint_toleration import TaintToleration
from shards.testing import compile_pod, every, node, pod_spec, table_of

NODES = [
    node("clean"),
    node("gpu", taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}]),
    node("draining", taints=[{"key": "drain", "effect": "NoExecute"}]),
    node("soft", taints=[{"key": "spot", "value": "yes", "effect": "PreferNoSchedule"}]),
]


@pytest.mark.parametrize(
    ("tolerations", "expected"),
    [
        ([], [True, False, False, True]),  # PreferNoSchedule never filters
        (
            [{"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
            [True, True, False, True],
        ),
        ([{"key": "gpu", "operator": "Equal", "value": "false"}], [True, False, False, True]),
        ([{"key": "gpu", "operator": "Exists"}], [True, True, False, True]),
        ([{"key": "gpu", "operator": "Exists", "effect": "NoExecute"}], [True, False, False, True]),
        ([{"operator": "Exists"}], [True, True, True, True]),  # empty key + Exists tolerates all
        (
            [{"key": "drain", "operator": "Exists"}, {"key": "gpu", "operator": "Exists"}],
            [True, True, True, True],
        ),
    ],
)
def test_filter(tolerations, expected):
    table = table_of(NODES)
    pod = compile_pod(pod_spec({"cpu": "1"}, tolerations=tolerations), table)
    assert TaintToleration().filter(pod, table, every(table)).tolist() == expected


def test_reason_names_the_taint():
    table = table_of(NODES)
    pod = compile_pod(pod_spec({"cpu": "1"}), table)
    reasons = TaintToleration().reasons(pod, table, [1, 2])
    assert reasons == {
        "node(s) had untolerated taint {gpu: true}": 1,
        "node(s) had untolerated taint {drain: }": 1,
    }
