"""InterPodAffinity over all nodes at once: required affinity and anti-affinity, the
existing pods' anti-affinity (filter), and the weighted terms of both sides (score,
normalized from min..max), with kube-scheduler v1.30's semantics.

The exact per-node rule is `cluster.crosspod.affinity`; this is its
vectorized form. Whether a term selects a kind of pod depends only on the two
kinds, never on counts, so a kind of pod (its peer: namespace, labels, terms;
classes that differ only in requests share it) is matched against each peer
once and the answers are kept (`_Relations`), extended as the table learns
new peers. A call
then counts the selected pods per row with `pods_of` and sums them per topology
domain with a bincount over the label's codes: never a loop over pods or nodes.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from cluster.crosspod.affinity import (
    AFFINITY_REASON,
    ANTI_AFFINITY_REASON,
    DEFAULT_HARD_POD_AFFINITY_WEIGHT,
    EXISTING_ANTI_AFFINITY_REASON,
    MAX_NODE_SCORE,
    keeps_away,
    score_weights,
    terms_of,
)
from cluster.events import ASSIGNED_POD_ADD, ASSIGNED_POD_DELETE, NODE_ADD, NODE_UPDATE
from cluster.objects import Peer
from shards.framework import FilterPlugin, PodClass, Rows, ScorePlugin
from shards.node_table import NodeTable
from shards.plugins.inter_pod_affinity.inter_pod_affinity_args import InterPodAffinityArgs

_CACHED_PEERS = 4096


def _grown(
    old: dict[str, np.ndarray], new: dict[str, list[Any]], before: int, added: int, dtype: type
) -> dict[str, np.ndarray]:
    """Per-key vectors over peers, the new peers' entries appended (zero where absent)."""
    return {
        key: np.concatenate(
            [old.get(key, np.zeros(before, dtype)), np.array(new.get(key, [0] * added), dtype)]
        )
        for key in old.keys() | new.keys()
    }


class _Relations:
    """How one kind of pod relates to each peer of one table, in the table's peer order."""

    __slots__ = (
        "all_affinity",
        "anti",
        "concerned",
        "done",
        "hard",
        "keeps_away",
        "namespace_labels",
        "namespaces_version",
        "peers",
        "pod",
        "scoring",
        "self_affinity",
        "weights",
    )

    def __init__(self, peer: Peer, table: NodeTable, hard: int, scoring: bool) -> None:
        self.peers = table.peers  # the table's list, which only grows
        # namespaceSelector's answers hold until the table's namespaces change
        self.namespace_labels = table.namespace_labels
        self.namespaces_version = table.namespaces_version
        self.pod = terms_of(peer)
        self.hard, self.scoring = hard, scoring
        self.done = 0
        self.self_affinity = self.pod.selected_by_all(
            self.pod.affinity_required, self.namespace_labels
        )
        # per peer: matches all the pod's required affinity terms
        self.all_affinity = np.zeros(0, dtype=bool)
        # per anti-affinity term of the pod, per peer: selected by it
        self.anti = np.zeros((len(self.pod.anti_affinity_required), 0), dtype=bool)
        # per topology key, per peer: has a required anti-affinity term selecting the pod
        self.keeps_away: dict[str, np.ndarray] = {}
        # per topology key, per peer: what each of its pods adds to the domain's score
        self.weights: dict[str, np.ndarray] = {}
        self.concerned = np.zeros(0, dtype=bool)  # per peer: its terms reach the pod

    def anti_selections(self) -> list[tuple[str, np.ndarray]]:
        """(topology key, peers selected) for each of the pod's required anti-affinity terms."""
        terms = self.pod.anti_affinity_required
        return [(t.topology_key, selected) for t, selected in zip(terms, self.anti, strict=True)]

    def extend(self) -> None:
        """Match the peers the table added since the last call."""
        new = [terms_of(peer) for peer in self.peers[self.done :]]
        pod, ns, added = self.pod, self.namespace_labels, len(new)
        away: dict[str, list[bool]] = {}
        weights: dict[str, list[int]] = {}
        for j, other in enumerate(new):
            for key in keeps_away(other, pod, ns):
                away.setdefault(key, [False] * added)[j] = True
            if self.scoring:
                for key, weight in score_weights(pod, other, self.hard, ns):
                    weights.setdefault(key, [0] * added)[j] += weight
        all_affinity = [o.selected_by_all(pod.affinity_required, ns) for o in new]
        anti = [[o.selected_by(t, ns) for o in new] for t in pod.anti_affinity_required]
        self.all_affinity = np.concatenate([self.all_affinity, np.array(all_affinity, bool)])
        self.anti = np.concatenate([self.anti, np.array(anti, bool).reshape(-1, added)], axis=1)
        self.keeps_away = _grown(self.keeps_away, away, self.done, added, bool)
        self.weights = _grown(self.weights, weights, self.done, added, np.int64)
        self.done += added
        self.concerned = np.zeros(self.done, dtype=bool)
        for selected in self.keeps_away.values():
            self.concerned |= selected
        for key_weights in self.weights.values():
            self.concerned |= key_weights != 0


def _per_domain(table: NodeTable, key: str, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row codes of the key's values, and the sum of `counts` per value with a last 0 slot
    that rows lacking the key (code -1) read."""
    codes, vocab = table.label_codes(key)
    has = codes >= 0
    sums = np.bincount(codes[has], weights=counts[has], minlength=len(vocab))
    return codes, np.append(sums, 0).astype(np.int64)  # exact: integers far below 2**53


def _occupied(
    table: NodeTable, key: str, selected: np.ndarray, rows: Rows
) -> npt.NDArray[np.bool_]:
    """Per row: some pod of the selected peers is in the row's domain for the key."""
    if not selected.any():
        return np.zeros(table.alive[rows].shape, dtype=bool)
    codes, domains = _per_domain(table, key, table.pods_of(selected, slice(0, table.size)))
    occupied: npt.NDArray[np.bool_] = domains[codes[rows]] > 0
    return occupied


class InterPodAffinity(FilterPlugin, ScorePlugin):
    name = "InterPodAffinity"
    events = frozenset({ASSIGNED_POD_ADD, ASSIGNED_POD_DELETE, NODE_ADD, NODE_UPDATE})
    dynamic = True  # counts of pods per domain
    normalizes = True

    def __init__(
        self,
        hard_pod_affinity_weight: int = DEFAULT_HARD_POD_AFFINITY_WEIGHT,
        ignore_preferred_terms_of_existing_pods: bool = False,
    ) -> None:
        self.hard_pod_affinity_weight = hard_pod_affinity_weight
        self.ignore_preferred_terms_of_existing_pods = ignore_preferred_terms_of_existing_pods
        # by the pod's peer column in the table (`PodClass.peer`): one per kind of pod
        self._relations_by_peer: OrderedDict[int, _Relations] = OrderedDict()

    @classmethod
    def from_args(cls, wire: Mapping[str, Any]) -> InterPodAffinity:
        args = InterPodAffinityArgs.from_wire(wire)
        return cls(args.hard_pod_affinity_weight, args.ignore_preferred_terms_of_existing_pods)

    def _relations(self, pod: PodClass, table: NodeTable) -> _Relations:
        cache, key = self._relations_by_peer, pod.peer
        rel = cache.get(key)
        if (
            rel is None
            or rel.peers is not table.peers
            or rel.namespaces_version != table.namespaces_version
        ):
            peer = table.peers[pod.peer]
            terms = terms_of(peer)
            # upstream skips scoring when told to ignore existing pods' terms and the pod has none
            scoring = not self.ignore_preferred_terms_of_existing_pods or bool(
                terms.affinity_preferred or terms.anti_affinity_preferred
            )
            rel = cache[key] = _Relations(peer, table, self.hard_pod_affinity_weight, scoring)
            if len(cache) > _CACHED_PEERS:
                cache.popitem(last=False)
        else:
            cache.move_to_end(key)
        if rel.done < len(table.peers):
            rel.extend()
        return rel

    def spans_nodes(self, pod: PodClass, table: NodeTable) -> bool:
        """A pod with terms counts pods per domain; a plain pod only while pods whose
        terms reach it are placed somewhere."""
        rel = self._relations(pod, table)
        if rel.pod.has_terms:
            return True
        if not rel.concerned.any():
            return False
        return bool(table.pods_of(rel.concerned, slice(0, table.size)).any())

    @staticmethod
    def _affinity(rel: _Relations, table: NodeTable, rows: Rows) -> npt.NDArray[np.bool_]:
        """Per row: the pod's required affinity is met."""
        terms = rel.pod.affinity_required
        ok = np.ones(table.alive[rows].shape, dtype=bool)
        if not terms:
            return ok
        counts = table.pods_of(rel.all_affinity, slice(0, table.size))
        found = ok.copy()
        anywhere = False  # a pod matching all terms, on a node with one of the keys
        for term in terms:
            codes, domains = _per_domain(table, term.topology_key, counts)
            ok &= codes[rows] >= 0  # every topology key must be on the node
            found &= domains[codes[rows]] > 0
            anywhere = anywhere or bool(counts[codes >= 0].any())
        # the first of a group of pods with affinity to each other may go anywhere
        return ok & (found | (not anywhere and rel.self_affinity))

    @staticmethod
    def _free(
        table: NodeTable, selections: Iterable[tuple[str, np.ndarray]], rows: Rows
    ) -> npt.NDArray[np.bool_]:
        """Per row: no pod of the selected peers in the row's domain, for every (key, peers)."""
        ok = np.ones(table.alive[rows].shape, dtype=bool)
        for key, selected in selections:
            ok &= ~_occupied(table, key, selected, rows)
        return ok

    def filter(self, pod: PodClass, table: NodeTable, rows: Rows) -> npt.NDArray[np.bool_]:
        """Anti-affinity either way bars a node alike, so it is counted once per topology key."""
        rel = self._relations(pod, table)
        if not (rel.keeps_away or rel.pod.affinity_required or rel.pod.anti_affinity_required):
            return np.ones(table.alive[rows].shape, dtype=bool)  # upstream's PreFilter Skip
        barred = dict(rel.keeps_away)
        for key, selected in rel.anti_selections():
            barred[key] = barred[key] | selected if key in barred else selected
        return self._affinity(rel, table, rows) & self._free(table, barred.items(), rows)

    def reasons(self, pod: PodClass, table: NodeTable, rows: np.ndarray) -> Counter[str]:
        """Each row is counted under the first rule it breaks, as upstream checks them."""
        rel = self._relations(pod, table)
        affinity = self._affinity(rel, table, rows)
        anti = self._free(table, rel.anti_selections(), rows)
        existing = self._free(table, rel.keeps_away.items(), rows)
        return +Counter(
            {
                AFFINITY_REASON: int((~affinity).sum()),
                ANTI_AFFINITY_REASON: int((affinity & ~anti).sum()),
                EXISTING_ANTI_AFFINITY_REASON: int((affinity & anti & ~existing).sum()),
            }
        )

    def score(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray:
        """The sum, over topology keys, of the weights of the pods in the row's domain."""
        rel = self._relations(pod, table)
        total = np.zeros(table.alive[rows].shape, dtype=np.int64)
        every = slice(0, table.size)
        for key, weights in rel.weights.items():
            counts = np.zeros(table.size, dtype=np.int64)
            for weight in np.unique(weights[weights != 0]).tolist():
                counts += weight * table.pods_of(weights == weight, every)
            if counts.any():
                codes, domains = _per_domain(table, key, counts)
                total += domains[codes[rows]]
        return total

    def normalize(
        self, pod: PodClass, table: NodeTable, rows: np.ndarray, scores: np.ndarray
    ) -> npt.NDArray[np.int64]:
        """Upstream's min..max scaling in float64, truncated; all 0 when the scores are flat."""
        if not len(scores):
            return scores
        low = scores.min()
        spread = int(scores.max() - low)
        if spread <= 0:
            return np.zeros_like(scores)
        scaled = float(MAX_NODE_SCORE) * ((scores - low) / spread)
        truncated: npt.NDArray[np.int64] = scaled.astype(np.int64)
        return truncated
