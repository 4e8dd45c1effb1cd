import numpy as np
import pytest

from cluster.errors import InvalidObject
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
        ({"matchFields": [expr("metadata.name", "In", "n3")]}, ["n3"]),
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


def preferred(*weighted):
    return {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "preference": t} for w, t in weighted
            ]
        }
    }


def test_preferred_weights_add_up_and_normalize_by_the_maximum():
    # As in the node affinity documentation, in our own data: a required zone, and two
    # preferences of different weight; the node matching both scores highest.
    table = table_of(
        [
            node("nvme", labels={"region": "north", "storage": "nvme"}),
            node("fast", labels={"region": "south", "network": "fast"}),
            node("both", labels={"region": "north", "storage": "nvme", "network": "fast"}),
            node("elsewhere", labels={"region": "west", "storage": "nvme", "network": "fast"}),
        ]
    )
    affinity = required({"matchExpressions": [expr("region", "In", "north", "south")]})
    affinity["nodeAffinity"].update(
        preferred(
            (10, {"matchExpressions": [expr("storage", "In", "nvme")]}),
            (40, {"matchExpressions": [expr("network", "Exists")]}),
        )["nodeAffinity"]
    )
    pod = compile_pod(pod_spec({"cpu": "1"}, affinity=affinity), table)
    plugin = NodeAffinity()
    assert plugin.filter(pod, table, every(table)).tolist() == [True, True, True, False]
    raw = plugin.score(pod, table, every(table))
    assert raw.tolist() == [10, 40, 50, 50]
    # normalized over the feasible nodes only
    assert plugin.normalize(pod, table, np.arange(3), raw[:3]).tolist() == [20, 80, 100]


def test_no_preference_scores_zero_everywhere():
    table = table_of(NODES)
    pod = compile_pod(pod_spec({"cpu": "1"}), table)
    plugin = NodeAffinity()
    scores = plugin.score(pod, table, every(table))
    assert scores.tolist() == [0, 0, 0]
    assert plugin.normalize(pod, table, np.arange(table.size), scores).tolist() == [0, 0, 0]


ADDED = {
    "addedAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [expr("zone", "NotIn", "c")]}]
        },
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 5, "preference": {"matchExpressions": [expr("disk", "In", "ssd")]}}
        ],
    }
}


def test_added_affinity_applies_to_every_pod_with_its_own_reason():
    table = table_of(NODES)
    plugin = NodeAffinity.from_args(ADDED)
    plain = compile_pod(pod_spec({"cpu": "1"}), table)
    assert plugin.filter(plain, table, every(table)).tolist() == [True, True, False]
    assert plugin.reasons(plain, table, np.array([2])) == {
        "node(s) didn't match scheduler-enforced node affinity": 1
    }
    picky = compile_pod(pod_spec({"cpu": "1"}, nodeSelector={"zone": "a"}), table)
    assert plugin.filter(picky, table, every(table)).tolist() == [True, False, False]
    assert plugin.reasons(picky, table, np.array([1, 2])) == {
        "node(s) didn't match scheduler-enforced node affinity": 1,
        "node(s) didn't match Pod's node affinity/selector": 1,
    }
    both = compile_pod(
        pod_spec(
            {"cpu": "1"},
            affinity=preferred((3, {"matchExpressions": [expr("cores", "Gt", "16")]})),
        ),
        table,
    )
    assert plugin.score(both, table, every(table)).tolist() == [5, 3, 0]


def test_without_args_nothing_is_added():
    table = table_of(NODES)
    pod = compile_pod(pod_spec({"cpu": "1"}), table)
    assert NodeAffinity.from_args({}).filter(pod, table, every(table)).tolist() == [True] * 3


def test_gt_reads_numbers_as_upstream_does():
    # '1_0' and numbers beyond int64 are not integers to Go's strconv.ParseInt
    table = table_of(
        [node("a", labels={"cores": "1_0"}), node("b", labels={"cores": "99999999999999999999"})]
    )
    term = {"matchExpressions": [expr("cores", "Gt", "5")]}
    pod = compile_pod(pod_spec({"cpu": "1"}, affinity=required(term)), table)
    assert NodeAffinity().filter(pod, table, every(table)).tolist() == [False, False]


def test_match_fields_with_several_values_is_refused():
    # the API server refuses it, and upstream could build no field selector from it
    term = {"matchFields": [expr("metadata.name", "In", "n3", "ghost")]}
    with pytest.raises(InvalidObject, match="matchFields takes exactly one value"):
        feasible(affinity=required(term))


def named(*nodes):
    return {"matchFields": [expr("metadata.name", "In", n) for n in nodes]}


@pytest.mark.parametrize(
    ("terms", "candidates"),
    [
        ([named("n3")], {"n3"}),  # a DaemonSet's pod
        ([named("n1"), named("n3")], {"n1", "n3"}),  # the terms are ORed
        ([named("n1"), {"matchExpressions": [expr("zone", "In", "c")]}], None),  # any node
        ([{"matchFields": [expr("metadata.name", "NotIn", "n3")]}], None),
        ([{"matchExpressions": [expr("zone", "In", "a")]}], None),
    ],
)
def test_terms_that_each_name_nodes_make_those_the_only_candidates(terms, candidates):
    table = table_of(NODES)
    spec = compile_pod(pod_spec({"cpu": "1"}, affinity=required(*terms)), table).spec
    names = NodeAffinity().candidates(spec)
    assert (None if names is None else set(names)) == candidates
    assert NodeAffinity().prefilter(spec) is None


def test_a_term_naming_two_nodes_at_once_conflicts_before_any_node_is_judged():
    table = table_of(NODES)
    spec = compile_pod(pod_spec({"cpu": "1"}, affinity=required(named("n1", "n2"))), table).spec
    assert NodeAffinity().prefilter(spec) == "pod affinity terms conflict"
    assert feasible(affinity=required(named("n1", "n2"))) == []  # the filter agrees
