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

Default constraints (PodTopologySpreadArgs; upstream's system defaults unless
the args say List) take effect only for pods without constraints of their own,
with the selector of the pod's Services and controller, which the pod's spec
carries (`spread_selector`, cluster/workload_selectors.py). A pod that nothing
selects has no default constraint, as upstream.
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
    NO_DEFAULTS,
    REASON,
    REASON_MISSING_LABEL,
    SCHEDULE_ANYWAY,
    DefaultSpreading,
    Spread,
    normalizing_weight,
    requires_every_key,
    spreads,
)
from cluster.events import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    NODE_DELETE,
    NODE_UPDATE,
)
from cluster.objects import HOSTNAME_LABEL, Peer
from cluster.selectors import LabelSelector
from shards.framework import FilterPlugin, PodClass, Rows, ScorePlugin
from shards.node_table import NodeTable
from shards.plugins.node_affinity import NodeAffinity
from shards.plugins.taint_toleration.taint_toleration import first_untolerated

_PASSES, _SKEWED, _MISSING_LABEL = 0, 1, 2
_REASONS = {_SKEWED: REASON, _MISSING_LABEL: REASON_MISSING_LABEL}
_POD_AFFINITY = NodeAffinity()  # the pod's own nodeSelector and required terms, nothing added
_MASKS = 4096  # (namespace, selector) pairs whose peer masks are kept


@dataclass(slots=True)
class _Counted:
    """What a class's spreading counts, for `normalize` to score over the feasible rows."""

    codes: list[np.ndarray]  # per constraint, each row's domain code (-1: no such label)
    # per constraint, the code a row counts in: where a missing key is the value ""
    # (the system defaults), rows lacking it share that value's code
    domains: list[np.ndarray]
    scorable: np.ndarray  # rows with every topology key, or every row; the others are ignored
    # per constraint, the counted pods: per domain code, with a last slot that code -1
    # reads (0 where every key is required); on the hostname key per row, as a node's own
    # pods count there
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
    # pods and nodes alike move its counts per domain
    events = frozenset({ASSIGNED_POD_ADD, ASSIGNED_POD_DELETE, NODE_ADD, NODE_UPDATE, NODE_DELETE})
    dynamic = True  # counts of placed pods
    normalizes = True

    def __init__(self, defaults: DefaultSpreading = NO_DEFAULTS) -> None:
        self.defaults = defaults
        self._masks = _PeerMasks()

    @classmethod
    def from_args(cls, wire: Mapping[str, Any]) -> PodTopologySpread:
        return cls(DefaultSpreading.from_args(wire))

    def spans_nodes(self, pod: PodClass, table: NodeTable) -> bool:
        return bool(pod.spec.topology_spread) or (
            pod.spec.spread_selector is not None and bool(self.defaults.constraints)
        )

    # --- filter -------------------------------------------------------------------

    def filter(self, pod: PodClass, table: NodeTable, rows: Rows) -> npt.NDArray[np.bool_]:
        if not self.spans_nodes(pod, table):
            return np.ones(table.alive[rows].shape, dtype=bool)
        passes: npt.NDArray[np.bool_] = self._verdicts(pod, table)[rows] == _PASSES
        return passes

    def reasons(self, pod: PodClass, table: NodeTable, rows: np.ndarray) -> Counter[str]:
        verdicts = self._verdicts(pod, table)[rows]
        return +Counter({reason: int((verdicts == v).sum()) for v, reason in _REASONS.items()})

    def _verdicts(self, pod: PodClass, table: NodeTable) -> npt.NDArray[np.int8]:
        """Per row of the table, _PASSES or why the first failing constraint rejects it."""
        verdicts = np.full(table.size, _PASSES, dtype=np.int8)
        constraints = spreads(pod.spec, DO_NOT_SCHEDULE, self.defaults)
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

    def _count(self, pod: PodClass, table: NodeTable, constraints: tuple[Spread, ...]) -> _Counted:
        """Per ScheduleAnyway constraint, the matching pods per domain (or node, for hostname)."""
        every = slice(0, table.size)
        every_key = requires_every_key(pod.spec, self.defaults)
        coded = [table.label_codes(c.topology_key) for c in constraints]
        scorable = table.alive[every].copy()
        domains = [code for code, _ in coded]
        if every_key:
            for code in domains:
                scorable &= code >= 0
        else:  # a missing key is the value "": its own domain, shared with a label set to ""
            domains = [np.where(code < 0, vocab.get("", len(vocab)), code) for code, vocab in coded]
        counts = []
        for c, domain, (_, vocab), admitted in zip(
            constraints, domains, coded, _included(constraints, pod, table), strict=True
        ):
            pods = table.pods_of(self._masks.of(c, pod.spec.namespace, table), every)
            if c.topology_key == HOSTNAME_LABEL:
                counts.append(pods)
                continue
            counted = scorable if admitted is None else scorable & admitted
            # one slot more than there are values: the missing key's, where it is no value's
            counts.append(_per_domain(domain[counted], pods[counted], len(vocab) + 1))
        return _Counted([code for code, _ in coded], domains, scorable, counts)

    def normalize(
        self, pod: PodClass, table: NodeTable, rows: np.ndarray, scores: np.ndarray
    ) -> np.ndarray:
        """Upstream's PreScore, Score and NormalizeScore over the feasible `rows`."""
        out = np.zeros_like(scores)
        constraints = spreads(pod.spec, SCHEDULE_ANYWAY, self.defaults)
        if not constraints:
            return out  # upstream skips the plugin for this pod
        counted = self._count(pod, table, constraints)
        scored = counted.scorable[rows]
        if not scored.any():
            return out
        total = np.zeros(len(rows))
        for c, codes, domains, counts in zip(
            constraints, counted.codes, counted.domains, counted.counts, strict=True
        ):
            labelled = codes[rows] >= 0  # a row lacking the key scores nothing for it
            if c.topology_key == HOSTNAME_LABEL:  # upstream: every scored node is its own domain
                size, pods = int(scored.sum()), counts[rows]
            else:
                domain = domains[rows]
                size, pods = len(np.unique(domain[scored])), counts[domain]
            share = pods * normalizing_weight(size) + (c.max_skew - 1)
            total = total + np.where(labelled, share, 0)
        whole = np.floor(total)
        raw = (whole + (total - whole >= 0.5)).astype(np.int64)[scored]  # Go's math.Round
        top, bottom = int(raw.max()), int(raw.min())
        out[scored] = MAX_NODE_SCORE if top == 0 else MAX_NODE_SCORE * (top + bottom - raw) // top
        return out
