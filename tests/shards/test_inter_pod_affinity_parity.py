"""Parity of the vectorized InterPodAffinity with the per-node rule of cluster.crosspod.

Hypothesis draws small clusters (zone, hostname and rack labels, any of them
missing; a node deleted with pods still assumed on it), kinds of pods placed
there (committed and assumed counts, namespaces, labels, and their own required
and preferred affinity and anti-affinity), an incoming pod with random terms
(selectors with every operator or nil, namespaces, namespace selectors,
matchLabelKeys and mismatchLabelKeys) and the plugin's args. The shard's
filter must give the same feasible nodes and reasons, and its normalized
scores the same numbers, as the per-node rule over an equivalent StaticView,
both at first and after the pod is placed (the plugin keeping its caches), on
the drawn cluster and on its nodes emptied.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster.crosspod.affinity import filter_node, score_nodes
from cluster.crosspod.view import NAMESPACE_NAME_LABEL, StaticView
from cluster.objects import Node, Peer, PodAffinityTerm, SchedulingSpec, WeightedPodAffinityTerm
from cluster.selectors import LabelSelector, Requirement
from cluster.store import Delta
from shards.framework import PodClass
from shards.node_table import NodeTable
from shards.plugins.inter_pod_affinity import InterPodAffinity
from shards.testing import every, table_of

ZONE, HOST, RACK = "topology.kubernetes.io/zone", "kubernetes.io/hostname", "rack"
KEYS = (ZONE, HOST, RACK)
NAMESPACES = ("default", "prod")
GONE = "gone"
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass
class Scenario:
    nodes: list[Node]
    peers: list[Peer]
    committed: dict[str, dict[int, int]]  # node -> peer index -> pods
    assumed: dict[str, dict[int, int]]
    gone: Node | None  # deleted from the table while the shard still assumes pods there
    pod: SchedulingSpec
    hard: int
    ignore: bool
    target: str  # where the pod is placed before it is judged again

    def table(self) -> NodeTable:
        table = table_of([*self.nodes, *([self.gone] if self.gone else [])])
        columns = [table.peer_column(p.id, p) for p in self.peers]
        for name, pods in self.committed.items():
            for i, n in pods.items():
                table.peer_pods[table.index[name], columns[i]] += n
        for name, pods in self.assumed.items():
            for i, n in pods.items():
                for _ in range(n):
                    table.assume(table.index[name], np.zeros(0, np.int64), peer=columns[i])
        if self.gone:
            empty = np.zeros(0, np.int64)
            table.apply(Delta(2, [], empty, np.zeros((0, 0), np.int64), deleted=[GONE]))
        return table

    def view(self) -> StaticView:
        view = StaticView(nodes={n.name: n for n in self.nodes})
        for part in (self.committed, self.assumed):
            for name, pods in part.items():
                if name != GONE:
                    for i, n in pods.items():
                        if n:
                            view.add(name, self.peers[i], n)
        return view


# --- pods and their terms ------------------------------------------------------------------

pod_labels = st.tuples(
    st.sampled_from(("web", "db", None)), st.sampled_from(("front", "back", None))
).map(lambda v: tuple((k, x) for k, x in (("app", v[0]), ("tier", v[1])) if x is not None))
# each part of a term is drawn from a short list of telling cases: drawing them piece by
# piece made generation the bulk of the test's time
SELECTORS = (  # hypothesis favours the first: one that selects every pod
    LabelSelector(),
    None,  # selects no pod
    LabelSelector((("app", "web"),)),
    LabelSelector((("app", "db"),)),
    LabelSelector((("tier", "front"),)),
    LabelSelector((), (Requirement("app", "In", ("web", "db")),)),
    LabelSelector((), (Requirement("app", "NotIn", ("web",)),)),
    LabelSelector((), (Requirement("tier", "Exists", ()),)),
    LabelSelector((), (Requirement("app", "DoesNotExist", ()),)),
    LabelSelector((("app", "web"),), (Requirement("tier", "NotIn", ("db", "front")),)),
)
SCOPES = (  # (namespaces, namespaceSelector)
    ((), None),  # the owner's namespace
    ((), None),
    (("prod",), None),
    (("default", "prod"), None),
    ((), LabelSelector()),  # every namespace
    ((), LabelSelector(((NAMESPACE_NAME_LABEL, "prod"),))),
    (("default",), LabelSelector(((NAMESPACE_NAME_LABEL, "prod"),))),
    ((), LabelSelector((("env", "live"),))),  # no namespace has it
)
LABEL_KEYS = (  # (matchLabelKeys, mismatchLabelKeys)
    ((), ()),
    ((), ()),
    (("app",), ()),
    ((), ("tier",)),
    (("tier",), ("app",)),
)
term = st.builds(
    lambda key, selector, scope, keys: PodAffinityTerm(key, selector, *scope, *keys),
    st.sampled_from(KEYS),
    st.sampled_from(SELECTORS),
    st.sampled_from(SCOPES),
    st.sampled_from(LABEL_KEYS),
)
weighted = st.builds(WeightedPodAffinityTerm, st.integers(1, 100), term)


def terms(least: int, most: int) -> st.SearchStrategy[tuple[PodAffinityTerm, ...]]:
    return st.lists(term, min_size=least, max_size=most).map(tuple)


def preferences(least: int, most: int) -> st.SearchStrategy[tuple[WeightedPodAffinityTerm, ...]]:
    return st.lists(weighted, min_size=least, max_size=most).map(tuple)


peer = st.builds(
    Peer,
    st.sampled_from(NAMESPACES),
    pod_labels,
    terms(0, 1),
    preferences(0, 2),
    terms(0, 1),
    preferences(0, 2),
)


def incoming_with(
    affinity: int = 0, anti: int = 0, preferred: int = 0
) -> st.SearchStrategy[SchedulingSpec]:
    """An incoming pod with at least so many terms of each kind (hypothesis favours none)."""
    return st.builds(
        SchedulingSpec,
        requests=st.just(()),
        namespace=st.sampled_from(NAMESPACES),
        labels=pod_labels,
        affinity_required=terms(affinity, 2 * bool(affinity)),
        affinity_preferred=preferences(preferred, 2),
        anti_affinity_required=terms(anti, 2),
        anti_affinity_preferred=preferences(preferred, 2),
    )


plain = st.builds(
    SchedulingSpec, requests=st.just(()), namespace=st.sampled_from(NAMESPACES), labels=pod_labels
)
incoming = st.one_of(
    incoming_with(affinity=1), incoming_with(anti=1), incoming_with(preferred=1), plain
)


# --- clusters ------------------------------------------------------------------------------


def node_named(name: str) -> st.SearchStrategy[Node]:
    labels = st.tuples(
        st.sampled_from(("a", "b", "a", "b", None)),
        st.sampled_from((name, name, name, None)),
        st.sampled_from((None, "r1", "r2")),
    ).map(lambda values: {k: v for k, v in zip(KEYS, values, strict=True) if v is not None})
    return st.builds(Node, name=st.just(name), allocatable=st.just({}), labels=labels)


# built once: strategies made inside the composite are validated again on every draw
NODES = tuple(node_named(f"n{i}") for i in range(6))
GONE_NODE = st.none() | node_named(GONE)
PEERS = st.lists(peer, max_size=5, unique_by=lambda p: p.id)
# (node, peer, committed pods, assumed pods), the indices taken modulo what was drawn
PLACEMENTS = st.lists(
    st.tuples(*(st.integers(0, 6),) * 2, *(st.integers(0, 3),) * 2), min_size=1, max_size=10
)
HARD_WEIGHTS = st.sampled_from((1, 1, 0, 5))


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    nodes = [draw(s) for s in NODES[: draw(st.integers(1, len(NODES)))]]
    gone = draw(GONE_NODE)
    peers = draw(PEERS)
    names = [n.name for n in nodes] + ([GONE] if gone else [])
    committed: dict[str, dict[int, int]] = {}
    assumed: dict[str, dict[int, int]] = {}
    for at, kind, stored, own in draw(PLACEMENTS) if peers else ():
        name, kind = names[at % len(names)], kind % len(peers)
        if name != GONE:  # the delete dropped what the store had there
            committed.setdefault(name, {})[kind] = stored
        assumed.setdefault(name, {})[kind] = own
    return Scenario(
        nodes,
        peers,
        committed,
        assumed,
        gone,
        draw(incoming),
        draw(HARD_WEIGHTS),
        draw(st.booleans()),
        nodes[draw(st.integers(0, len(NODES) - 1)) % len(nodes)].name,
    )


# --- the property ----------------------------------------------------------------------------


def agree(plugin: InterPodAffinity, s: Scenario, table: NodeTable, view: StaticView) -> None:
    pod = PodClass.compile(s.pod, table)
    rows = np.flatnonzero(table.alive[: table.size])
    names = [table.names[r] for r in rows]
    mask = plugin.filter(pod, table, rows)
    assert (plugin.filter(pod, table, every(table))[rows] == mask).all()
    expected = {n: filter_node(s.pod, n, view) for n in names}
    assert {n for n, ok in zip(names, mask.tolist(), strict=True) if ok} == {
        n for n, reason in expected.items() if reason is None
    }
    assert plugin.reasons(pod, table, rows[~mask]) == Counter(
        r for r in expected.values() if r is not None
    )
    raw = plugin.score(pod, table, rows)
    assert (plugin.score(pod, table, every(table))[rows] == raw).all()
    for subset in (mask, np.ones(len(rows), dtype=bool)):
        chosen = [n for n, ok in zip(names, subset.tolist(), strict=True) if ok]
        got = plugin.normalize(pod, table, rows[subset], raw[subset]).tolist()
        assert dict(zip(chosen, got, strict=True)) == score_nodes(
            s.pod, chosen, view, s.hard, ignore_preferred_terms_of_existing_pods=s.ignore
        )
    if not plugin.spans_nodes(pod, table):
        assert mask.all() and not raw.any()  # nothing another pod does can change the answer


@PROPERTY
@given(scenarios())
def test_filter_reasons_and_scores_agree_with_the_per_node_rule(s: Scenario) -> None:
    # the drawn cluster, and the same nodes empty (where a pod may be the first of its group)
    for scenario in (s, replace(s, committed={}, assumed={})):
        table, view = scenario.table(), scenario.view()
        plugin = InterPodAffinity(s.hard, s.ignore)
        agree(plugin, s, table, view)
        # the shard places the pod and judges it again with the same plugin and its caches
        pod = PodClass.compile(s.pod, table)
        table.assume(table.index[s.target], pod.request, peer=pod.peer)
        view.add(s.target, s.pod.peer)
        agree(plugin, s, table, view)
