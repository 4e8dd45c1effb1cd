"""PodTopologySpread: DoNotSchedule constraints filter, ScheduleAnyway constraints score.

The rules are upstream's (v1.30), written one node at a time in
`cluster.crosspod.topology_spread`; here they run over every row at once.
A constraint's matching pods are counted per row from the table's peer
columns (a peer is one kind of placed pod), then summed per domain with one
bincount over the rows' codes for the topology key. Placing a pod changes the
counts of a whole domain, so the plugin spans nodes: the shard judges every
row again after each placement of a pod with constraints. A pod without
constraints costs one attribute test.

Scoring depends on the feasible set (upstream's PreScore sees only the nodes
that passed the filters: their number of domains weighs each constraint, and
those lacking a topology key are ignored). The framework names the feasible
rows only to `normalize`, so `score` leaves the raw scores at zero and
`normalize` counts and computes upstream's Score and NormalizeScore over
exactly those rows.

Default constraints (PodTopologySpreadArgs) take effect upstream only for pods
without constraints of their own, with a selector built from the pod's
Services, ReplicationControllers, ReplicaSets and StatefulSets. optimist does
not know those, so the args are accepted and kept but, as upstream does for a
pod that no Service or controller selects, no default constraint applies.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from cluster.crosspod.topology_spread import (
    DO_NOT_SCHEDULE,
    MAX_NODE_SCORE,
    REASON,
    REASON_MISSING_LABEL,
    SCHEDULE_ANYWAY,
    Spread,
    normalizing_weight,
    spreads,
)
from cluster.objects import HOSTNAME_LABEL, Peer, TopologySpreadConstraint
from cluster.selectors import LabelSelector
from shards.framework import FilterPlugin, PodClass, Rows, ScorePlugin
from shards.node_table import NodeTable
from shards.plugins.node_affinity import NodeAffinity
from shards.plugins.pod_topology_spread.pod_topology_spread_args import PodTopologySpreadArgs
from shards.plugins.taint_toleration.taint_toleration import first_untolerated

_PASSES, _SKEWED, _MISSING_LABEL = 0, 1, 2
_REASONS = {_SKEWED: REASON, _MISSING_LABEL: REASON_MISSING_LABEL}
_POD_AFFINITY = NodeAffinity()  # the pod's own nodeSelector and required terms, nothing added
_MASKS = 4096  # (namespace, selector) pairs whose peer masks are kept


@dataclass(slots=True)
class _Counted:
    """What a class's spreading counts, for `normalize` to score over the feasible rows."""

    constraints: tuple[Spread, ...]
    codes: list[np.ndarray]  # per constraint, each row's domain code (-1: no such label)
    scorable: np.ndarray  # rows with every topology key; the others are ignored
    # per constraint, the counted pods: per domain code, with a last slot (0) that code -1
    # gathers; on the hostname key per row, as a node's own pods count there
    counts: list[np.ndarray]


class _PeerMasks:
    """Which peer columns a constraint counts, extended as the table learns new peers."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, LabelSelector | None], tuple[list[Peer], np.ndarray]] = {}

    def of(self, spread: Spread, namespace: str, table: NodeTable) -> np.ndarray:
        key = (namespace, spread.selector)
        peers = table.peers
        cached = self._cache.get(key)
        mask = cached[1] if cached is not None and cached[0] is peers else np.zeros(0, bool)
        if len(mask) < len(peers):
            new = peers[len(mask) :]
            extra = np.fromiter((spread.counts(p, namespace) for p in new), bool, len(new))
            mask = np.concatenate([mask, extra])
            if len(self._cache) >= _MASKS:
                self._cache.clear()
            self._cache[key] = (peers, mask)
        return mask


def _included(
    constraints: tuple[Spread, ...], pod: PodClass, table: NodeTable
) -> list[np.ndarray | None]:
    """Per constraint, the rows its inclusion policies admit (None: every row)."""
    every = slice(0, table.size)
    affinity = taints = None
    out: list[np.ndarray | None] = []
    for c in constraints:
        mask = None
        if c.honor_affinity:
            if affinity is None:
                affinity = _POD_AFFINITY.filter(pod, table, every)
            mask = affinity
        if c.honor_taints:
            if taints is None:
                groups, sets = table.taint_groups()
                ok = [first_untolerated(s, pod.spec.tolerations) is None for s in sets]
                taints = np.array(ok, dtype=bool)[groups]
            mask = taints if mask is None else mask & taints
        out.append(mask)
    return out


def _per_domain(codes: np.ndarray, pods: np.ndarray, domains: int) -> np.ndarray:
    """The pods summed per domain code."""
    return np.bincount(codes, weights=pods, minlength=domains).astype(np.int64)


def _with_absent(per_domain: np.ndarray) -> np.ndarray:
    """One more slot, 0, that code -1 (label absent) gathers."""
    return np.append(per_domain, 0)


class PodTopologySpread(FilterPlugin, ScorePlugin):
    name = "PodTopologySpread"
    dynamic = True  # counts of placed pods
    normalizes = True

    def __init__(
        self,
        defaulting_type: str = "System",
        default_constraints: tuple[TopologySpreadConstraint, ...] = (),
    ) -> None:
        self.defaulting_type = defaulting_type
        self.default_constraints = default_constraints  # kept, never applied: see the module
        self._masks = _PeerMasks()

    @classmethod
    def from_args(cls, wire: Mapping[str, Any]) -> PodTopologySpread:
        args = PodTopologySpreadArgs.from_wire(wire)
        return cls(
            args.defaulting_type,
            tuple(
                TopologySpreadConstraint(
                    max_skew=c.max_skew,
                    topology_key=c.topology_key,
                    when_unsatisfiable=c.when_unsatisfiable,
                    label_selector=None,  # deduced per pod upstream
                    min_domains=c.min_domains,
                    node_affinity_policy=c.node_affinity_policy or "Honor",
                    node_taints_policy=c.node_taints_policy or "Ignore",
                    match_label_keys=tuple(c.match_label_keys or ()),
                )
                for c in args.default_constraints or ()
            ),
        )

    def spans_nodes(self, pod: PodClass, table: NodeTable) -> bool:
        return bool(pod.spec.topology_spread)

    # --- filter -------------------------------------------------------------------

    def filter(self, pod: PodClass, table: NodeTable, rows: Rows) -> npt.NDArray[np.bool_]:
        if not pod.spec.topology_spread:
            return np.ones(table.alive[rows].shape, dtype=bool)
        passes: npt.NDArray[np.bool_] = self._verdicts(pod, table)[rows] == _PASSES
        return passes

    def reasons(self, pod: PodClass, table: NodeTable, rows: np.ndarray) -> Counter[str]:
        verdicts = self._verdicts(pod, table)[rows]
        return +Counter({reason: int((verdicts == v).sum()) for v, reason in _REASONS.items()})

    def _verdicts(self, pod: PodClass, table: NodeTable) -> npt.NDArray[np.int8]:
        """Per row of the table, _PASSES or why the first failing constraint rejects it."""
        verdicts = np.full(table.size, _PASSES, dtype=np.int8)
        constraints = spreads(pod.spec, DO_NOT_SCHEDULE)
        if not constraints:
            return verdicts
        every = slice(0, table.size)
        coded = [table.label_codes(c.topology_key) for c in constraints]
        eligible = table.alive[every].copy()
        for code, _ in coded:
            eligible &= code >= 0
        labels = dict(pod.spec.labels)
        for c, (code, vocab), admitted in zip(
            constraints, coded, _included(constraints, pod, table), strict=True
        ):
            counted = eligible if admitted is None else eligible & admitted
            pods = table.pods_of(self._masks.of(c, pod.spec.namespace, table), every)
            present = np.bincount(code[counted], minlength=len(vocab)) > 0
            totals = _per_domain(code[counted], pods[counted], len(vocab))
            minimum = 0 if present.sum() < c.min_domains else int(totals[present].min())
            skew = _with_absent(totals)[code] + c.selects(labels) - minimum
            undecided = verdicts == _PASSES
            verdicts[undecided & (code < 0)] = _MISSING_LABEL
            verdicts[undecided & (code >= 0) & (skew > c.max_skew)] = _SKEWED
        return verdicts

    # --- score --------------------------------------------------------------------

    def score(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray:
        """Nothing yet: the score depends on which nodes are feasible, so `normalize` makes it."""
        return np.zeros(table.alive[rows].shape, dtype=np.int64)

    def _count(self, pod: PodClass, table: NodeTable) -> _Counted:
        """Per ScheduleAnyway constraint, the matching pods per domain (or node, for hostname)."""
        constraints = spreads(pod.spec, SCHEDULE_ANYWAY)
        every = slice(0, table.size)
        coded = [table.label_codes(c.topology_key) for c in constraints]
        scorable = table.alive[every].copy()
        for code, _ in coded:
            scorable &= code >= 0
        counts = []
        for c, (code, vocab), admitted in zip(
            constraints, coded, _included(constraints, pod, table), strict=True
        ):
            pods = table.pods_of(self._masks.of(c, pod.spec.namespace, table), every)
            if c.topology_key == HOSTNAME_LABEL:
                counts.append(pods)
                continue
            counted = scorable if admitted is None else scorable & admitted
            counts.append(_with_absent(_per_domain(code[counted], pods[counted], len(vocab))))
        return _Counted(constraints, [code for code, _ in coded], scorable, counts)

    def normalize(
        self, pod: PodClass, table: NodeTable, rows: np.ndarray, scores: np.ndarray
    ) -> np.ndarray:
        """Upstream's PreScore, Score and NormalizeScore over the feasible `rows`."""
        out = np.zeros_like(scores)
        if not any(c.when_unsatisfiable == SCHEDULE_ANYWAY for c in pod.spec.topology_spread):
            return out  # upstream skips the plugin for this pod
        counted = self._count(pod, table)
        scored = counted.scorable[rows]
        if not scored.any():
            return out
        total = np.zeros(len(rows))
        for c, codes, counts in zip(
            counted.constraints, counted.codes, counted.counts, strict=True
        ):
            if c.topology_key == HOSTNAME_LABEL:  # upstream: every scored node is its own domain
                size, pods = int(scored.sum()), counts[rows]
            else:
                code = codes[rows]
                size, pods = len(np.unique(code[scored])), counts[code]
            total = total + (pods * normalizing_weight(size) + (c.max_skew - 1))
        whole = np.floor(total)
        raw = (whole + (total - whole >= 0.5)).astype(np.int64)[scored]  # Go's math.Round
        top, bottom = int(raw.max()), int(raw.min())
        out[scored] = MAX_NODE_SCORE if top == 0 else MAX_NODE_SCORE * (top + bottom - raw) // top
        return out
