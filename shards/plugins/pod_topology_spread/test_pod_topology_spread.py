"""PodTopologySpread on small clusters in the manner of the Kubernetes documentation.

Every case is checked against the per-node rule of cluster.crosspod too.
"""

import math
from dataclasses import replace

import numpy as np
import pytest

from cluster.crosspod.topology_spread import (
    REASON,
    REASON_MISSING_LABEL,
    spread_filter,
    spread_scores,
)
from cluster.crosspod.view import StaticView
from cluster.objects import ZONE_LABEL as ZONE
from cluster.objects import Peer
from cluster.profile_config import ProfileConfig
from cluster.selectors import LabelSelector
from shards.class_state import ClassState
from shards.framework import PodClass
from shards.plugins import build_profile
from shards.plugins.pod_topology_spread import PodTopologySpread
from shards.testing import compile_pod, every, hold_pods, node, pod_spec, table_of

HOST = "kubernetes.io/hostname"


def zoned(name, zone, **labels):
    return node(name, labels={HOST: name, **({"zone": zone} if zone else {}), **labels})


# two zones of two nodes, and the number of `app: shop` pods on each node
NODES = [zoned("a1", "amber"), zoned("a2", "amber"), zoned("b1", "blue"), zoned("b2", "blue")]
SHOP = {"a1": 2, "a2": 1, "b1": 1}


def world(nodes, pods, labels=None, namespace="default"):
    """The table and the view of these nodes with `pods[node]` pods of `labels` on them."""
    table, view = table_of(nodes), StaticView({n.name: n for n in nodes})
    peer = Peer(namespace, tuple(sorted((labels or {"app": "shop"}).items())))
    col = table.peer_column(peer.id, peer)
    for name, count in pods.items():
        table.peer_pods[table.index[name], col] += count
        view.add(name, peer, count)
    return table, view


def add(table, view, name, labels, count, namespace="default"):
    peer = Peer(namespace, tuple(sorted(labels.items())))
    hold_pods(table, name, peer, count)
    view.add(name, peer, count)


def spread(key="zone", skew=1, when="DoNotSchedule", selector=None, **extra):
    return {
        "maxSkew": skew,
        "topologyKey": key,
        "whenUnsatisfiable": when,
        "labelSelector": {"matchLabels": {"app": "shop"}} if selector is None else selector,
        **extra,
    }


def incoming(table, *constraints, labels=None, **spec):
    manifest = pod_spec({"cpu": "100m"}, topologySpreadConstraints=list(constraints), **spec)
    manifest["metadata"]["labels"] = {"app": "shop"} if labels is None else labels
    return compile_pod(manifest, table)


def feasible(table, view, pod, plugin=None):
    """Names of the nodes the plugin lets through; the per-node rule must agree."""
    plugin = plugin or PodTopologySpread()
    ok = plugin.filter(pod, table, every(table))
    names = [n for n, passes in zip(table.names, ok.tolist(), strict=True) if passes]
    want = [n for n in table.names if spread_filter(pod.spec, n, view, plugin.defaults) is None]
    assert names == want
    return names


def scores(table, view, pod, names=None, plugin=None):
    """Normalized scores over the given feasible nodes (default all); the rule must agree."""
    plugin = plugin or PodTopologySpread()
    names = table.names if names is None else names
    rows = np.array([table.index[n] for n in names], dtype=np.intp)
    raw = plugin.score(pod, table, every(table))
    got = dict(zip(names, plugin.normalize(pod, table, rows, raw[rows]).tolist(), strict=True))
    assert got == spread_scores(pod.spec, names, view, plugin.defaults)
    return got


# --- filter ---------------------------------------------------------------------------


def test_pod_goes_to_the_zone_with_fewer_matching_pods():
    table, view = world(NODES, SHOP)  # amber 3, blue 1
    assert feasible(table, view, incoming(table, spread())) == ["b1", "b2"]


def test_a_larger_max_skew_lets_the_pod_go_anywhere():
    table, view = world(NODES, SHOP)
    assert feasible(table, view, incoming(table, spread(skew=3))) == ["a1", "a2", "b1", "b2"]


def test_zone_and_node_constraints_together():
    table, view = world(NODES, SHOP)  # per node 2/1/1/0: only b2 keeps both skews at 1
    pod = incoming(table, spread(), spread(HOST))
    assert feasible(table, view, pod) == ["b2"]


def test_constraints_that_cannot_both_hold_leave_no_node_and_say_why():
    nodes = [*NODES, node("c1", labels={HOST: "c1"})]  # no zone label
    table, view = world(nodes, {"a1": 1, "b1": 1, "b2": 1})
    pod = incoming(table, spread(HOST), spread())  # hosts allow a2 and c1; zones allow amber
    plugin = PodTopologySpread()
    ok = plugin.filter(pod, table, every(table))
    assert feasible(table, view, pod, plugin) == ["a2"]
    rejected = np.flatnonzero(~ok)
    assert plugin.reasons(pod, table, rejected) == {REASON: 3, REASON_MISSING_LABEL: 1}
    assert spread_filter(pod.spec, "c1", view) == REASON_MISSING_LABEL


def test_a_node_without_the_key_is_no_domain_and_cannot_take_the_pod():
    nodes = [*NODES, node("c1", labels={HOST: "c1"})]
    table, view = world(nodes, {"a1": 1, "b1": 1, "c1": 5})  # c1's pods count nowhere
    assert feasible(table, view, incoming(table, spread())) == ["a1", "a2", "b1", "b2"]


def test_the_pod_counts_itself_only_when_its_selector_matches_it():
    table, view = world(NODES, {"a1": 1})  # amber 1, blue 0
    assert feasible(table, view, incoming(table, spread())) == ["b1", "b2"]
    other = incoming(table, spread(), labels={"app": "till"})
    assert feasible(table, view, other) == ["a1", "a2", "b1", "b2"]


def test_pods_of_other_namespaces_and_labels_do_not_count():
    table, view = world(NODES, {"a1": 3}, namespace="elsewhere")
    add(table, view, "a2", {"app": "till"}, 4)
    assert feasible(table, view, incoming(table, spread())) == ["a1", "a2", "b1", "b2"]


def test_an_empty_selector_counts_no_placed_pod_but_the_pod_itself():
    table, view = world(NODES, {"a1": 3})
    pod = incoming(table, spread(selector={}))
    assert feasible(table, view, pod) == ["a1", "a2", "b1", "b2"]  # 0 + 1 - 0 everywhere


def test_no_selector_selects_nothing():
    table, view = world(NODES, {"a1": 3})
    pod = incoming(table, {k: v for k, v in spread().items() if k != "labelSelector"})
    assert feasible(table, view, pod) == ["a1", "a2", "b1", "b2"]


@pytest.mark.parametrize(("min_domains", "expected"), [(2, ["b1", "b2"]), (3, [])])
def test_min_domains_takes_the_global_minimum_as_zero_when_domains_are_too_few(
    min_domains, expected
):
    table, view = world(NODES, {"a1": 2, "b1": 1})  # amber 2, blue 1
    pod = incoming(table, spread(minDomains=min_domains))
    assert feasible(table, view, pod) == expected


# a third zone, cyan, whose only node has an HDD and a taint; amber and blue hold 2 each.
# c1 always passes this filter (its zone holds none); NodeAffinity or TaintToleration keep
# the pod off it. What the policies decide is whether empty cyan makes the minimum 0.
POLICY_NODES = [
    zoned("a1", "amber", disk="ssd"),
    zoned("b1", "blue", disk="ssd"),
    node(
        "c1",
        labels={HOST: "c1", "zone": "cyan", "disk": "hdd"},
        taints=[{"key": "batch", "value": "only", "effect": "NoSchedule"}],
    ),
]
POLICY_PODS = {"a1": 2, "b1": 2}


@pytest.mark.parametrize(
    ("policy", "expected"),
    [("Honor", ["a1", "b1", "c1"]), ("Ignore", ["c1"])],
)
def test_node_affinity_policy(policy, expected):
    table, view = world(POLICY_NODES, POLICY_PODS)
    pod = incoming(table, spread(nodeAffinityPolicy=policy), nodeSelector={"disk": "ssd"})
    assert feasible(table, view, pod) == expected


def test_node_affinity_policy_honors_required_terms_too():
    table, view = world(POLICY_NODES, POLICY_PODS)
    term = {"matchExpressions": [{"key": "disk", "operator": "NotIn", "values": ["hdd"]}]}
    required = {"nodeSelectorTerms": [term]}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    pod = incoming(table, spread(), affinity=affinity)
    assert feasible(table, view, pod) == ["a1", "b1", "c1"]


@pytest.mark.parametrize(
    ("policy", "tolerations", "expected"),
    [
        ("Ignore", [], ["c1"]),  # the default: the tainted node's zone counts
        ("Honor", [], ["a1", "b1", "c1"]),
        ("Honor", [{"key": "batch", "operator": "Exists"}], ["c1"]),
    ],
)
def test_node_taints_policy(policy, tolerations, expected):
    table, view = world(POLICY_NODES, POLICY_PODS)
    pod = incoming(table, spread(nodeTaintsPolicy=policy), tolerations=tolerations)
    assert feasible(table, view, pod) == expected


def test_match_label_keys_narrow_the_count_to_the_pods_own_values():
    table, view = world(NODES, {"a1": 3}, labels={"app": "shop", "rev": "1"})
    add(table, view, "b1", {"app": "shop", "rev": "2"}, 1)
    labels = {"app": "shop", "rev": "2"}
    plain = incoming(table, spread(), labels=labels)  # amber 3, blue 1
    assert feasible(table, view, plain) == ["b1", "b2"]
    by_rev = incoming(table, spread(matchLabelKeys=["rev"]), labels=labels)  # amber 0, blue 1
    assert feasible(table, view, by_rev) == ["a1", "a2"]
    absent = incoming(table, spread(matchLabelKeys=["track"]), labels=labels)  # key ignored
    assert feasible(table, view, absent) == ["b1", "b2"]


def test_placed_pods_this_shard_assumes_count():
    table, view = world(NODES, {})
    pod = incoming(table, spread())
    table.assume(table.index["b1"], pod.request, pod.ports, pod.peer)
    view.add("b1", pod.spec.peer)
    assert feasible(table, view, pod) == ["a1", "a2"]


def test_schedule_anyway_never_filters():
    table, view = world(NODES, SHOP)
    pod = incoming(table, spread(when="ScheduleAnyway"))
    assert feasible(table, view, pod) == ["a1", "a2", "b1", "b2"]


# --- score ----------------------------------------------------------------------------


def test_fewer_matching_pods_in_the_domain_score_higher():
    table, view = world(NODES, SHOP)  # amber 3, blue 1; two domains weigh log(4)
    raw_amber, raw_blue = round(3 * math.log(4)), round(math.log(4))  # 4 and 1
    top = 100 * (raw_amber + raw_blue - raw_amber) // raw_amber
    got = scores(table, view, incoming(table, spread(when="ScheduleAnyway")))
    assert got == {"a1": top, "a2": top, "b1": 100, "b2": 100} and top == 25


def test_hostname_spreads_by_each_nodes_own_pods():
    table, view = world(NODES, SHOP)  # 2/1/1/0 over four scored nodes: weight log(6)
    got = scores(table, view, incoming(table, spread(HOST, when="ScheduleAnyway")))
    assert got == {"a1": 0, "a2": 50, "b1": 50, "b2": 100}


def test_nodes_lacking_a_key_are_ignored_and_score_zero():
    nodes = [*NODES, node("c1", labels={HOST: "c1"})]
    table, view = world(nodes, SHOP)
    got = scores(table, view, incoming(table, spread(when="ScheduleAnyway")))
    assert got["c1"] == 0 and got["b1"] == 100


def test_the_weight_counts_domains_among_the_feasible_nodes_only():
    three = [*NODES, zoned("c1", "cyan")]
    table, view = world(three, {"a1": 1, "b1": 1, "c1": 2})
    pod = incoming(table, spread(when="ScheduleAnyway", skew=2))
    # all feasible: log(5) per pod, maxSkew adds 1: amber 2.6 -> 3, cyan 4.2 -> 4
    assert scores(table, view, pod)["a1"] == 100 * (4 + 3 - 3) // 4
    # cyan not feasible: log(4): amber 2.39 -> 2 for every node left, so all score 100
    assert set(scores(table, view, pod, ["a1", "a2", "b1", "b2"]).values()) == {100}


def test_a_pod_without_soft_constraints_scores_zero_everywhere():
    table, view = world(NODES, SHOP)
    assert set(scores(table, view, incoming(table)).values()) == {0}
    assert set(scores(table, view, incoming(table, spread())).values()) == {0}


def test_equal_domains_all_score_the_maximum():
    table, view = world(NODES, {"a1": 1, "b2": 1})
    got = scores(table, view, incoming(table, spread(when="ScheduleAnyway")))
    assert set(got.values()) == {100}


# --- the plugin in a profile ------------------------------------------------------------


def test_spans_nodes_only_with_constraints():
    table, _ = world(NODES, {})
    plugin = PodTopologySpread()
    assert plugin.spans_nodes(incoming(table, spread()), table)
    assert not plugin.spans_nodes(incoming(table), table)


@pytest.mark.parametrize("when", ["DoNotSchedule", "ScheduleAnyway"])
def test_a_shard_spreads_a_class_evenly_over_zones(when):
    nodes = [zoned(f"{z}{i}", z) for z in ("amber", "blue", "cyan") for i in range(3)]
    table, _ = world(nodes, {})
    profile = build_profile(
        ProfileConfig(
            "p",
            filters=("PodTopologySpread",),
            scorers=(("PodTopologySpread", 1),),
            percentage_of_nodes_to_score=100,
        )
    )
    pod = incoming(table, spread(when=when))
    state, rng = ClassState(pod, profile, table), np.random.default_rng(3)
    for _ in range(9):
        row, _ = state.best(rng, 0)
        table.assume(row, pod.request, pod.ports, pod.peer)
    per_zone = table.assumed_peer_pods[: table.size, pod.peer].reshape(3, 3).sum(axis=1)
    assert per_zone.tolist() == [3, 3, 3]


# --- default constraints ------------------------------------------------------------


def selected(table, *constraints, selector=(("app", "shop"),), labels=None):
    """A pod that a Service or controller selects: its spec carries their selector."""
    pod = incoming(table, *constraints, labels=labels)
    spec = replace(pod.spec, spread_selector=LabelSelector(selector) if selector else None)
    return PodClass.compile(spec, table)


LIST_ZONE = {
    "defaultingType": "List",
    "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
    ],
}


def test_list_defaults_filter_a_selected_pod_as_its_own_constraint_would():
    plugin = PodTopologySpread.from_args(LIST_ZONE)
    [default] = plugin.defaults.constraints
    assert (default.max_skew, default.topology_key, default.label_selector) == (1, "zone", None)
    table, view = world(NODES, SHOP)  # amber 3, blue 1
    assert feasible(table, view, selected(table), plugin) == ["b1", "b2"]
    assert plugin.spans_nodes(selected(table), table)


def test_defaults_leave_alone_a_pod_nothing_selects_and_one_with_its_own_constraints():
    plugin = PodTopologySpread.from_args(LIST_ZONE)
    table, view = world(NODES, SHOP)
    assert feasible(table, view, selected(table, selector=()), plugin) == ["a1", "a2", "b1", "b2"]
    own = selected(table, spread(skew=3))  # its own, looser constraint wins
    assert feasible(table, view, own, plugin) == ["a1", "a2", "b1", "b2"]


def test_system_defaults_spread_by_hostname_and_zone_and_keep_nodes_without_a_zone():
    plugin = PodTopologySpread.from_args({})
    assert plugin.defaults.system
    nodes = [
        *(node(f"{z}{i}", labels={HOST: f"{z}{i}", ZONE: z}) for z in "ab" for i in (1, 2)),
        node("c1", labels={HOST: "c1"}),  # no zone: still scored, by hostname
    ]
    table, view = world(nodes, {"a1": 3, "a2": 2, "b1": 1})
    got = scores(table, view, selected(table), plugin=plugin)
    # raw: per node its pods * log(5 + 2) + 2, plus where it has a zone its zone's pods *
    # log(3 + 2) + 4, the domains being amber, blue and c1's missing zone; then reversed
    assert got == {"a1": 10, "a2": 20, "b1": 60, "b2": 70, "c1": 100}
    assert feasible(table, view, selected(table), plugin) == table.names  # scoring only


def test_system_defaults_fill_zones_and_nodes_evenly():
    plugin = PodTopologySpread.from_args({})
    profile = build_profile(
        ProfileConfig(
            "default-scheduler",
            ("PodTopologySpread",),
            (("PodTopologySpread", 2),),
            percentage_of_nodes_to_score=100,
        )
    )
    nodes = [node(f"{z}{i}", labels={HOST: f"{z}{i}", ZONE: z}) for z in "abc" for i in (1, 2, 3)]
    table, _ = world(nodes, {})
    pod = selected(table)
    assert profile.spans_nodes(pod, table) and plugin.spans_nodes(pod, table)
    state, rng = ClassState(pod, profile, table), np.random.default_rng(3)
    for _ in range(9):
        row, _ = state.best(rng, 0)
        table.assume(row, pod.request, pod.ports, pod.peer)
    assert table.assumed_peer_pods[: table.size, pod.peer].tolist() == [1] * 9
