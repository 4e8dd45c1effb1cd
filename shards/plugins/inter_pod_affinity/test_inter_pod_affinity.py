from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from cluster.crosspod.affinity import filter_node, score_nodes
from cluster.crosspod.view import StaticView
from cluster.manifests import pod_from_manifest
from cluster.objects import Node, SchedulingSpec
from cluster.profile_config import ProfileConfig
from shards.class_state import ClassState
from shards.framework import PodClass
from shards.plugins import REGISTRY, build_profile
from shards.plugins.inter_pod_affinity import InterPodAffinity
from shards.testing import every, hold_pods, node, pod_spec, table_of

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
AFFINITY = "node(s) didn't match pod affinity rules"
ANTI = "node(s) didn't match pod anti-affinity rules"
EXISTING = "node(s) didn't satisfy existing pods anti-affinity rules"


def host(name: str, zone: str | None = None) -> Node:
    labels = {HOST: name} | ({ZONE: zone} if zone else {})
    return node(name, labels=labels)


def term(
    key: str,
    *,
    namespaces: list[str] | None = None,
    namespace_selector: dict[str, Any] | None = None,
    expressions: Sequence[dict[str, Any]] = (),
    **labels: str,
) -> dict[str, Any]:
    out: dict[str, Any] = {"topologyKey": key, "labelSelector": {"matchLabels": labels}}
    if expressions:
        out["labelSelector"]["matchExpressions"] = list(expressions)
    if namespaces is not None:
        out["namespaces"] = namespaces
    if namespace_selector is not None:
        out["namespaceSelector"] = namespace_selector
    return out


def weighted(weight: int, of: dict[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": of}


Terms = Sequence[dict[str, Any]]


def pod(
    labels: dict[str, str] | None = None,
    namespace: str = "default",
    *,
    needs: Terms = (),
    likes: Terms = (),
    avoids: Terms = (),
    dislikes: Terms = (),
) -> SchedulingSpec:
    """A pod spec: required (needs) and preferred (likes) affinity, required (avoids) and
    preferred (dislikes) anti-affinity."""
    affinity: dict[str, Any] = {}
    if needs or likes:
        affinity["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": list(needs),
            "preferredDuringSchedulingIgnoredDuringExecution": list(likes),
        }
    if avoids or dislikes:
        affinity["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": list(avoids),
            "preferredDuringSchedulingIgnoredDuringExecution": list(dislikes),
        }
    manifest = pod_spec({"cpu": "100m"}, **({"affinity": affinity} if affinity else {}))
    manifest["metadata"].update(namespace=namespace, labels=labels or {})
    return pod_from_manifest(manifest).spec


class Cluster:
    """Nodes and the pods placed on them, as a shard's table and as the binder's view."""

    def __init__(self, *nodes: Node) -> None:
        self.table = table_of(nodes)
        self.view = StaticView(nodes={n.name: n for n in nodes})

    def place(self, name: str, spec: SchedulingSpec, pods: int = 1) -> Cluster:
        hold_pods(self.table, name, spec.peer, pods)
        self.view.add(name, spec.peer, pods)
        return self

    def feasible(self, spec: SchedulingSpec, plugin: InterPodAffinity | None = None) -> list[str]:
        """Names of the nodes the plugin lets the pod on, checked against the per-node rule."""
        plugin = plugin or InterPodAffinity()
        pod = PodClass.compile(spec, self.table)
        mask = plugin.filter(pod, self.table, every(self.table))
        names = [n for n, ok in zip(self.table.names, mask.tolist(), strict=True) if ok]
        assert names == [n for n in self.table.names if filter_node(spec, n, self.view) is None]
        return names

    def reasons(self, spec: SchedulingSpec) -> Counter[str]:
        pod = PodClass.compile(spec, self.table)
        rows = np.arange(self.table.size)
        mask = InterPodAffinity().filter(pod, self.table, rows)
        found = InterPodAffinity().reasons(pod, self.table, rows[~mask])
        expected = Counter(filter_node(spec, n, self.view) for n in self.table.names)
        del expected[None]
        assert found == expected
        return found

    def scores(
        self, spec: SchedulingSpec, plugin: InterPodAffinity | None = None, **args: Any
    ) -> dict[str, int]:
        """Normalized scores over every node, checked against the per-node rule."""
        plugin = plugin or InterPodAffinity()
        pod = PodClass.compile(spec, self.table)
        raw = plugin.score(pod, self.table, every(self.table))
        scores = dict(
            zip(
                self.table.names,
                plugin.normalize(pod, self.table, np.arange(self.table.size), raw).tolist(),
                strict=True,
            )
        )
        assert scores == score_nodes(spec, self.table.names, self.view, **args)
        return scores


# A web front end wants a cache on its node and no other front end there; the caches
# keep one per node. Three hosts in two zones, a fourth host with no zone.
CACHE = pod(
    {"app": "cache"},
    avoids=[term(HOST, app="cache")],
)
WEB = pod(
    {"app": "web"},
    needs=[term(HOST, app="cache")],
    avoids=[term(HOST, app="web")],
)


def shop() -> Cluster:
    return Cluster(host("h1", "east"), host("h2", "east"), host("h3", "west"), host("h4"))


def test_web_goes_where_a_cache_is_and_no_web_yet() -> None:
    cluster = shop().place("h1", CACHE).place("h2", CACHE).place("h1", WEB)
    assert cluster.feasible(WEB) == ["h2"]
    assert cluster.reasons(WEB) == {AFFINITY: 2, ANTI: 1}


def test_caches_spread_one_per_host_by_their_own_and_the_others_rules() -> None:
    cluster = shop().place("h1", CACHE).place("h2", CACHE)
    assert cluster.feasible(CACHE) == ["h3", "h4"]
    # a plain pod labelled like a cache is kept away by the existing caches' terms alone
    lookalike = pod({"app": "cache"})
    assert cluster.feasible(lookalike) == ["h3", "h4"]
    assert cluster.reasons(lookalike) == {EXISTING: 2}
    assert cluster.feasible(pod({"app": "other"})) == ["h1", "h2", "h3", "h4"]


def test_zone_affinity_needs_the_zone_label() -> None:
    cluster = shop().place("h3", pod({"security": "s1"}))
    near_s1 = pod(needs=[term(ZONE, security="s1")])
    assert cluster.feasible(near_s1) == ["h3"]
    cluster.place("h2", pod({"security": "s1"}))
    assert cluster.feasible(near_s1) == ["h1", "h2", "h3"]  # h4 has no zone


def test_all_terms_must_be_met_by_pods_matching_every_term() -> None:
    # a pod matching only the first term in the zone and one matching only the second
    # on the host do not make a pod matching both
    cluster = shop().place("h1", pod({"tier": "db"})).place("h2", pod({"role": "primary"}))
    both = pod(needs=[term(ZONE, tier="db"), term(HOST, role="primary")])
    assert cluster.feasible(both) == []
    cluster.place("h2", pod({"tier": "db", "role": "primary"}))
    assert cluster.feasible(both) == ["h2"]


def test_first_of_a_self_affine_group_may_go_to_any_node_with_the_keys() -> None:
    group = pod({"team": "a"}, needs=[term(ZONE, team="a")])
    cluster = shop()
    assert cluster.feasible(group) == ["h1", "h2", "h3"]
    # a matching pod on a node without the zone label does not count anywhere
    cluster.place("h4", pod({"team": "a"}))
    assert cluster.feasible(group) == ["h1", "h2", "h3"]
    cluster.place("h3", pod({"team": "a"}))
    assert cluster.feasible(group) == ["h3"]
    # a pod that does not match its own term waits for a match
    outsider = pod({"team": "b"}, needs=[term(ZONE, team="c")])
    assert shop().feasible(outsider) == []


def test_anti_affinity_ignores_nodes_without_the_key() -> None:
    cluster = shop().place("h1", pod({"app": "batch"}))
    loner = pod(avoids=[term(ZONE, app="batch")])
    assert cluster.feasible(loner) == ["h3", "h4"]
    assert cluster.reasons(loner) == {ANTI: 2}


def test_existing_anti_affinity_in_a_zone_keeps_the_incoming_pod_away() -> None:
    keeper = pod({"app": "keeper"}, avoids=[term(ZONE, app="web")])
    cluster = shop().place("h2", keeper)
    assert cluster.feasible(pod({"app": "web"})) == ["h3", "h4"]
    assert cluster.feasible(pod({"app": "web"}, "other")) == ["h1", "h2", "h3", "h4"]


@pytest.mark.parametrize(
    ("namespaces", "selector", "expected"),
    [
        (None, None, ["h2", "h3", "h4"]),  # the pod's own namespace: only the prod pod counts
        (["dev"], None, ["h1", "h3", "h4"]),
        (["dev", "prod"], None, ["h3", "h4"]),
        (None, {}, ["h3", "h4"]),  # an empty namespace selector selects every namespace
        (None, {"matchLabels": {"kubernetes.io/metadata.name": "dev"}}, ["h1", "h3", "h4"]),
        (["prod"], {"matchLabels": {"kubernetes.io/metadata.name": "dev"}}, ["h3", "h4"]),
        (None, {"matchLabels": {"env": "dev"}}, ["h1", "h2", "h3", "h4"]),  # labels unknown
    ],
)
def test_namespaces(
    namespaces: list[str] | None, selector: dict[str, Any] | None, expected: list[str]
) -> None:
    cluster = shop().place("h1", pod({"app": "db"}, "prod")).place("h2", pod({"app": "db"}, "dev"))
    avoid = term(HOST, namespaces=namespaces, namespace_selector=selector, app="db")
    assert cluster.feasible(pod(namespace="prod", avoids=[avoid])) == expected


def test_existing_pods_terms_default_to_their_own_namespace() -> None:
    cluster = shop().place("h1", pod({"app": "x"}, "prod", avoids=[term(HOST, app="web")]))
    assert cluster.feasible(pod({"app": "web"}, "prod")) == ["h2", "h3", "h4"]
    assert cluster.feasible(pod({"app": "web"}, "dev")) == ["h1", "h2", "h3", "h4"]


def test_view_namespace_labels_feed_the_namespace_selector() -> None:
    view = StaticView(nodes={"h1": host("h1")}, namespaces={"prod": {"env": "live"}})
    view.add("h1", pod({"app": "db"}, "prod").peer)
    avoid = term(HOST, namespace_selector={"matchLabels": {"env": "live"}}, app="db")
    assert filter_node(pod(avoids=[avoid]), "h1", view) == ANTI


def test_match_and_mismatch_label_keys_are_merged_from_the_owner() -> None:
    same_release = term(HOST, app="web")
    same_release["matchLabelKeys"] = ["release"]
    other_tenant = term(HOST, expressions=[{"key": "tenant", "operator": "Exists"}])
    other_tenant["mismatchLabelKeys"] = ["tenant"]
    cluster = (
        shop()
        .place("h1", pod({"app": "web", "release": "v1", "tenant": "t1"}))
        .place("h2", pod({"app": "web", "release": "v2", "tenant": "t2"}))
    )
    v2 = pod({"app": "web", "release": "v2", "tenant": "t1"}, needs=[same_release])
    assert cluster.feasible(v2) == ["h2"]
    unlabelled = pod({"app": "web"}, needs=[same_release])  # no release: the key is skipped
    assert cluster.feasible(unlabelled) == ["h1", "h2"]
    t1 = pod({"tenant": "t1"}, avoids=[other_tenant])
    assert cluster.feasible(t1) == ["h1", "h3", "h4"]


def test_preferences_score_domains_and_normalize_from_min_to_max() -> None:
    cluster = shop().place("h1", pod({"app": "cache"}), 2).place("h3", pod({"app": "noisy"}))
    spec = pod(
        likes=[weighted(40, term(ZONE, app="cache"))],
        dislikes=[weighted(25, term(HOST, app="noisy"))],
    )
    # raw: h1 and h2 80 (zone east holds two caches), h3 -25, h4 0: 100 * 25 / 105 = 23.8
    assert cluster.scores(spec) == {"h1": 100, "h2": 100, "h3": 0, "h4": 23}


def test_existing_pods_terms_score_the_incoming_pod() -> None:
    fan = pod({"app": "fan"}, needs=[term(ZONE, app="star")])
    shy = pod({"app": "shy"}, dislikes=[weighted(5, term(HOST, app="star"))])
    cluster = shop().place("h1", fan, 3).place("h3", shy)
    star = pod({"app": "star"})
    # hardPodAffinityWeight 1: east gets 3, h3 -5, h4 0
    assert cluster.scores(star) == {"h1": 100, "h2": 100, "h3": 0, "h4": 62}
    heavy = InterPodAffinity.from_args({"hardPodAffinityWeight": 10})
    assert cluster.scores(star, heavy, hard_pod_affinity_weight=10) == {
        "h1": 100,
        "h2": 100,
        "h3": 0,
        "h4": 14,
    }
    off = InterPodAffinity.from_args({"hardPodAffinityWeight": 0})
    assert cluster.scores(star, off, hard_pod_affinity_weight=0) == {
        "h1": 100,
        "h2": 100,
        "h3": 0,
        "h4": 100,
    }


def test_ignoring_existing_pods_preferences_skips_pods_without_their_own() -> None:
    cluster = shop().place("h3", pod({"app": "x"}, likes=[weighted(50, term(HOST, app="y"))]))
    plugin = InterPodAffinity.from_args({"ignorePreferredTermsOfExistingPods": True})
    assert cluster.scores(pod({"app": "y"}))["h3"] == 100
    flat = cluster.scores(pod({"app": "y"}), plugin, ignore_preferred_terms_of_existing_pods=True)
    assert set(flat.values()) == {0}
    # with preferences of its own, the existing pods' terms count again
    chooser = pod({"app": "y"}, likes=[weighted(1, term(ZONE, app="none"))])
    assert cluster.scores(chooser, plugin, ignore_preferred_terms_of_existing_pods=True) == {
        "h1": 0,
        "h2": 0,
        "h3": 100,
        "h4": 0,
    }


def test_plain_pods_are_cheap_and_span_nodes_only_when_reached() -> None:
    cluster = shop()
    plain, plugin = pod({"app": "web"}), InterPodAffinity()
    pod_class = PodClass.compile(plain, cluster.table)
    assert not plugin.spans_nodes(pod_class, cluster.table)
    keeper = pod({"app": "keeper"}, avoids=[term(ZONE, app="web")])
    peer = keeper.peer
    column = cluster.table.peer_column(peer.id, peer)
    assert not plugin.spans_nodes(pod_class, cluster.table)  # known, but no such pod placed
    cluster.table.assume(0, np.zeros(0, dtype=np.int64), peer=column)
    assert plugin.spans_nodes(pod_class, cluster.table)
    assert plugin.filter(pod_class, cluster.table, every(cluster.table)).tolist() == [
        False,
        False,
        True,
        True,
    ]
    assert plugin.spans_nodes(PodClass.compile(keeper, cluster.table), cluster.table)
    db = PodClass.compile(pod({"app": "db"}), cluster.table)
    assert not plugin.spans_nodes(db, cluster.table)
    cluster.place("h4", pod(likes=[weighted(1, term(HOST, app="db"))]))  # scores reach db
    assert plugin.spans_nodes(db, cluster.table)


def test_registered_with_args() -> None:
    plugin = REGISTRY["InterPodAffinity"](
        {"hardPodAffinityWeight": 7, "ignorePreferredTermsOfExistingPods": True}
    )
    assert isinstance(plugin, InterPodAffinity)
    assert plugin.hard_pod_affinity_weight == 7 and plugin.ignore_preferred_terms_of_existing_pods
    assert REGISTRY["InterPodAffinity"]({}).hard_pod_affinity_weight == 1


def test_the_shard_judges_every_node_again_after_each_placement() -> None:
    profile = build_profile(
        ProfileConfig(
            "default-scheduler",
            filters=("InterPodAffinity",),
            scorers=(("InterPodAffinity", 1),),
            percentage_of_nodes_to_score=100,
        )
    )
    table = shop().table
    caches = PodClass.compile(CACHE, table)
    state, rng, placed = ClassState(caches, profile, table), np.random.default_rng(0), []
    for _ in range(4):
        row, _ = state.best(rng, 0)
        table.assume(row, caches.request, caches.ports, caches.peer)
        placed.append(row)
    assert sorted(placed) == [0, 1, 2, 3]  # one cache per host
    assert state.best(rng, 0)[0] == -1
    assert state.why().reasons == {ANTI: 4}
    assert state.why().plugins == ("InterPodAffinity",)
