"""InterPodAffinity judged one node at a time, with kube-scheduler v1.30's semantics.

This is the exact rule: the binder re-checks placements with `filter_node`
against the committed pods, and the shard's vectorized plugin is tested
against `filter_node` and `score_nodes`. Pods are seen by peer (one kind of
pod, counted per node), so every rule reads "a pod of this peer" where
upstream reads "this pod".

A term is made concrete for the pod that carries it (`AffinityTerm.of`):
matchLabelKeys and mismatchLabelKeys are merged into its selector, as the
API server does when the pod is created, and its namespaces are resolved
(none listed and no selector: the pod's own namespace).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from cluster.crosspod.view import ClusterView
from cluster.objects import Peer, PodAffinityTerm, SchedulingSpec, WeightedPodAffinityTerm
from cluster.selectors import LabelSelector, Requirement

AFFINITY_REASON = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_REASON = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY_REASON = "node(s) didn't satisfy existing pods anti-affinity rules"
DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1
MAX_NODE_SCORE = 100

NamespaceLabels = Callable[[str], Mapping[str, str]]


def _merged_selector(term: PodAffinityTerm, labels: Mapping[str, str]) -> LabelSelector | None:
    """The selector with the owner's values of matchLabelKeys (In) and mismatchLabelKeys
    (NotIn) added; keys the owner lacks are skipped, and a nil selector stays nil."""
    selector = term.label_selector
    if selector is None:
        return None
    added = tuple(
        Requirement(key, operator, (labels[key],))
        for keys, operator in ((term.match_label_keys, "In"), (term.mismatch_label_keys, "NotIn"))
        for key in keys
        if key in labels
    )
    if not added:
        return selector
    return LabelSelector(selector.match_labels, selector.match_expressions + added)


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A pod affinity term as its owner means it: upstream's `framework.AffinityTerm`."""

    topology_key: str
    selector: LabelSelector | None  # None selects no pod
    namespaces: frozenset[str]
    namespace_selector: LabelSelector | None  # None selects no namespace; empty selects all

    @classmethod
    def of(cls, term: PodAffinityTerm, namespace: str, labels: Mapping[str, str]) -> AffinityTerm:
        listed = term.namespaces
        if not listed and term.namespace_selector is None:
            listed = (namespace,)
        return cls(
            term.topology_key,
            _merged_selector(term, labels),
            frozenset(listed),
            term.namespace_selector,
        )

    def selects(
        self, namespace: str, labels: Mapping[str, str], namespace_labels: NamespaceLabels
    ) -> bool:
        """Whether a pod in `namespace` with `labels` is one the term is about."""
        if self.selector is None:
            return False
        if namespace not in self.namespaces and (
            self.namespace_selector is None
            or not self.namespace_selector.matches(namespace_labels(namespace))
        ):
            return False
        return self.selector.matches(labels)


Weighted = tuple[tuple[int, AffinityTerm], ...]


@dataclass(frozen=True, slots=True)
class PodTerms:
    """What inter-pod affinity reads of a pod (incoming, or a peer): who it is, its terms."""

    namespace: str
    labels: Mapping[str, str]
    affinity_required: tuple[AffinityTerm, ...]
    anti_affinity_required: tuple[AffinityTerm, ...]
    affinity_preferred: Weighted
    anti_affinity_preferred: Weighted

    def selected_by(self, term: AffinityTerm, namespace_labels: NamespaceLabels) -> bool:
        return term.selects(self.namespace, self.labels, namespace_labels)

    def selected_by_all(
        self, terms: Sequence[AffinityTerm], namespace_labels: NamespaceLabels
    ) -> bool:
        """Upstream's `podMatchesAllAffinityTerms`: false when there are no terms."""
        return bool(terms) and all(self.selected_by(t, namespace_labels) for t in terms)

    @property
    def has_terms(self) -> bool:
        return bool(
            self.affinity_required
            or self.anti_affinity_required
            or self.affinity_preferred
            or self.anti_affinity_preferred
        )


@lru_cache(maxsize=8192)
def terms_of(peer: Peer) -> PodTerms:
    """A pod's terms made concrete, once per distinct kind of pod (`SchedulingSpec.peer`)."""
    labels = dict(peer.labels)

    def required(terms: Iterable[PodAffinityTerm]) -> tuple[AffinityTerm, ...]:
        return tuple(AffinityTerm.of(t, peer.namespace, labels) for t in terms)

    def preferred(terms: Iterable[WeightedPodAffinityTerm]) -> Weighted:
        return tuple((w.weight, AffinityTerm.of(w.term, peer.namespace, labels)) for w in terms)

    return PodTerms(
        peer.namespace,
        labels,
        required(peer.affinity_required),
        required(peer.anti_affinity_required),
        preferred(peer.affinity_preferred),
        preferred(peer.anti_affinity_preferred),
    )


def keeps_away(existing: PodTerms, pod: PodTerms, namespace_labels: NamespaceLabels) -> set[str]:
    """Topology keys of the existing pod's required anti-affinity terms that select the pod."""
    return {
        t.topology_key
        for t in existing.anti_affinity_required
        if pod.selected_by(t, namespace_labels)
    }


def score_weights(
    pod: PodTerms,
    existing: PodTerms,
    hard_pod_affinity_weight: int,
    namespace_labels: NamespaceLabels,
) -> Iterator[tuple[str, int]]:
    """(topology key, signed weight) for each term relating one existing pod to the pod:
    the pod's preferred affinity (+) and anti-affinity (-) selecting the existing pod,
    and the existing pod's required affinity (+hardPodAffinityWeight), preferred
    affinity (+) and anti-affinity (-) selecting the pod. Upstream's `processExistingPod`."""
    for weight, term in pod.affinity_preferred:
        if existing.selected_by(term, namespace_labels):
            yield term.topology_key, weight
    for weight, term in pod.anti_affinity_preferred:
        if existing.selected_by(term, namespace_labels):
            yield term.topology_key, -weight
    if hard_pod_affinity_weight > 0:
        for term in existing.affinity_required:
            if pod.selected_by(term, namespace_labels):
                yield term.topology_key, hard_pod_affinity_weight
    for weight, term in existing.affinity_preferred:
        if pod.selected_by(term, namespace_labels):
            yield term.topology_key, weight
    for weight, term in existing.anti_affinity_preferred:
        if pod.selected_by(term, namespace_labels):
            yield term.topology_key, -weight


@dataclass(frozen=True, slots=True)
class _Bearing:
    """How one kind of placed pod bears on the incoming pod's filter; each topology key
    with the view's counts of that kind by domain, which it keeps as pods move."""

    matches_affinity: bool  # selected by all the pod's required affinity terms
    # topology keys of the pod's anti-affinity terms selecting it
    barred: tuple[tuple[str, Mapping[str, int]], ...]
    # topology keys of its anti-affinity terms selecting the pod
    keeps_away: tuple[tuple[str, Mapping[str, int]], ...]


def _bearing(pod: PodTerms, peer: Peer, view: ClusterView) -> _Bearing | None:
    """None when the kind of pod has no bearing at all: most kinds, in most clusters."""
    other, labels = terms_of(peer), view.namespace_labels
    barred = {t.topology_key for t in pod.anti_affinity_required if other.selected_by(t, labels)}
    away = set(keeps_away(other, pod, labels))
    affine = other.selected_by_all(pod.affinity_required, labels)
    if not (affine or barred or away):
        return None
    return _Bearing(
        affine,
        tuple((key, view.pods_by_domain(peer, key)) for key in sorted(barred)),
        tuple((key, view.pods_by_domain(peer, key)) for key in sorted(away)),
    )


def filter_node(spec: SchedulingSpec, node_name: str, view: ClusterView) -> str | None:
    """Why the pod cannot go to the node, as upstream words it; None when it can.

    Upstream's three checks, in its order: affinity (every term has, in the
    node's domain, a pod matching all terms; or, for the first of a group, no
    such pod on any node with one of the keys and the pod matching its own
    terms; the node must have every key), the pod's anti-affinity (no selected
    pod in the node's domain for the term's key), and the placed pods'
    anti-affinity (none of them selects the pod from within the node's domain
    for its term's key). How each kind of placed pod bears on this one is
    worked out once, until the node specs or the namespaces change; the pods in
    the node's domain are then read off the view's counts by domain
    (`pods_by_domain`, kept as pods move), never by going through the nodes
    that hold them.
    """
    pod = terms_of(spec.peer)
    node = view.node(node_name).labels
    bearings = _bearings(spec.peer, pod, view)

    def held(peer: Peer, key: str) -> bool:  # a pod of the peer in the node's domain for key
        return key in node and view.pods_by_domain(peer, key).get(node[key], 0) > 0

    affinity = pod.affinity_required
    if affinity:
        matching = [peer for peer, b in bearings if b.matches_affinity]
        if not all(t.topology_key in node for t in affinity):
            return AFFINITY_REASON
        if not all(any(held(p, t.topology_key) for p in matching) for t in affinity):
            anywhere = any(
                any(view.pods_by_domain(p, t.topology_key).values())
                for p in matching
                for t in affinity
            )
            if anywhere or not pod.selected_by_all(affinity, view.namespace_labels):
                return AFFINITY_REASON
    if any(_in_domain(node, key, counts) for _, b in bearings for key, counts in b.barred):
        return ANTI_AFFINITY_REASON
    if any(_in_domain(node, key, counts) for _, b in bearings for key, counts in b.keeps_away):
        return EXISTING_ANTI_AFFINITY_REASON
    return None


def _in_domain(node: Mapping[str, str], key: str, counts: Mapping[str, int]) -> bool:
    return key in node and counts.get(node[key], 0) > 0


_UNSEEN = object()


def _bearings(peer: Peer, pod: PodTerms, view: ClusterView) -> list[tuple[Peer, _Bearing]]:
    """The placed kinds of pods that bear on this one, and how. How a kind bears is
    worked out once (it depends on the two kinds and the namespaces alone, and a change
    of namespaces is a change of specs to the view); only which kinds are placed is read
    afresh."""
    known: dict[Peer, Any] = view.derived(("inter-pod-affinity", peer), dict)
    out = []
    for other in view.placed():
        bearing = known.get(other, _UNSEEN)
        if bearing is _UNSEEN:
            bearing = known[other] = _bearing(pod, other, view)
        if bearing is not None:
            out.append((other, bearing))
    return out


def normalize(scores: Sequence[int]) -> list[int]:
    """Upstream's NormalizeScore: min..max to 0..100 in float64, truncated; all 0 if flat."""
    if not scores:
        return []
    low, spread = min(scores), max(scores) - min(scores)
    if spread <= 0:
        return [0] * len(scores)
    return [int(float(MAX_NODE_SCORE) * (float(s - low) / float(spread))) for s in scores]


def score_nodes(
    spec: SchedulingSpec,
    nodes: Sequence[str],
    view: ClusterView,
    hard_pod_affinity_weight: int = DEFAULT_HARD_POD_AFFINITY_WEIGHT,
    *,
    ignore_preferred_terms_of_existing_pods: bool = False,
) -> dict[str, int]:
    """Normalized scores of the (feasible) nodes: PreScore over every node's pods, Score
    summing the weights of each node's domains, NormalizeScore over `nodes`."""
    pod = terms_of(spec.peer)
    if ignore_preferred_terms_of_existing_pods and not (
        pod.affinity_preferred or pod.anti_affinity_preferred
    ):
        return dict.fromkeys(nodes, 0)  # upstream skips the plugin
    by_domain: defaultdict[str, defaultdict[str, int]] = defaultdict(lambda: defaultdict(int))
    weights: dict[int, list[tuple[str, int]]] = {}  # by identity, as in filter_node
    for name in view.node_names():
        present = view.peers_on(name)
        if not present:
            continue
        labels = view.node(name).labels
        for peer, pods in present.items():
            if pods <= 0:
                continue
            relation = weights.get(id(peer))
            if relation is None:
                relation = weights[id(peer)] = list(
                    score_weights(
                        pod, terms_of(peer), hard_pod_affinity_weight, view.namespace_labels
                    )
                )
            for key, weight in relation:
                if key in labels:
                    by_domain[key][labels[key]] += weight * pods
    raw = []
    for name in nodes:
        labels = view.node(name).labels
        raw.append(sum(v.get(labels[k], 0) for k, v in by_domain.items() if k in labels))
    return dict(zip(nodes, normalize(raw), strict=True))
