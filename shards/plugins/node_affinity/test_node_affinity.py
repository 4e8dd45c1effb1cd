import pytest

from shards.plugins.node_affinity import NodeAffinity
from shards.testing import compile_pod, every, node, pod_spec, table_of

NODES = [
    node("n1", labels={"zone": "a", "disk": "ssd", "cores": "8"}),
    node("n2", labels={"zone": "b", "disk": "hdd", "cores": "32"}),
    node("n3", labels={"zone": "c"}),
]


def required(*terms):
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
        }
    }


def expr(key, op, *values):
    return (
        {"key": key, "operator": op, "values": list(values)}
        if values
        else {"key": key, "operator": op}
    )


def feasible(**spec):
    table = table_of(NODES)
    pod = compile_pod(pod_spec({"cpu": "1"}, **spec), table)
    return [
        table.names[i] for i, ok in enumerate(NodeAffinity().filter(pod, table, every(table))) if ok
    ]


def test_node_selector_is_anded():
    assert feasible(nodeSelector={"zone": "a"}) == ["n1"]
    assert feasible(nodeSelector={"zone": "a", "disk": "hdd"}) == []
    assert feasible(nodeSelector={"zone": "nowhere"}) == []


@pytest.mark.parametrize(
    ("term", "expected"),
    [
        ({"matchExpressions": [expr("zone", "In", "a", "b")]}, ["n1", "n2"]),
        ({"matchExpressions": [expr("zone", "NotIn", "a")]}, ["n2", "n3"]),
        ({"matchExpressions": [expr("disk", "Exists")]}, ["n1", "n2"]),
        ({"matchExpressions": [expr("disk", "DoesNotExist")]}, ["n3"]),
        (
            {"matchExpressions": [expr("disk", "NotIn", "ssd")]},
            ["n2", "n3"],
        ),  # absent label satisfies NotIn
        ({"matchExpressions": [expr("cores", "Gt", "10")]}, ["n2"]),
        ({"matchExpressions": [expr("cores", "Lt", "10")]}, ["n1"]),
        ({"matchExpressions": [expr("zone", "In", "a", "b"), expr("disk", "In", "hdd")]}, ["n2"]),
        ({"matchFields": [expr("metadata.name", "In", "n3", "ghost")]}, ["n3"]),
        ({"matchFields": [expr("metadata.name", "NotIn", "n3")]}, ["n1", "n2"]),
    ],
)
def test_required_term(term, expected):
    assert feasible(affinity=required(term)) == expected


def test_terms_are_ored_and_selector_is_anded_with_them():
    terms = required(
        {"matchExpressions": [expr("zone", "In", "a")]},
        {"matchExpressions": [expr("zone", "In", "c")]},
    )
    assert feasible(affinity=terms) == ["n1", "n3"]
    assert feasible(affinity=terms, nodeSelector={"disk": "ssd"}) == ["n1"]
