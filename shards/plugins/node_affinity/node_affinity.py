"""NodeAffinity: the pod's nodeSelector AND its required node affinity (filter), and the
weights of the preferred terms a node matches (score, normalized by the maximum).

The plugin's args may add affinity every pod gets (NodeAffinityArgs
addedAffinity): its required terms are ANDed into the filter, with their
own reason, and its preferred terms add to the score.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from cluster.events import NODE_ADD, NODE_UPDATE
from cluster.objects import SchedulingSpec
from cluster.selectors import NodeSelectorTerm, Requirement, named_nodes
from shards.framework import FilterPlugin, PodClass, Rows, ScorePlugin, default_normalize
from shards.node_table import NodeTable
from shards.plugins.node_affinity.node_affinity_args import (
    NodeAffinityArgs,
    NodeFieldSelectorRequirement,
    NodeSelectorRequirement,
)
from shards.plugins.node_affinity.node_affinity_args import NodeSelectorTerm as NodeSelectorTermArgs
from shards.selector_rows import Preferences, any_term, label_requirement, preference

REASON = "node(s) didn't match Pod's node affinity/selector"
ENFORCED_REASON = "node(s) didn't match scheduler-enforced node affinity"
CONFLICT_REASON = "pod affinity terms conflict"


def _requirements(
    rules: Iterable[NodeSelectorRequirement | NodeFieldSelectorRequirement] | None,
) -> tuple[Requirement, ...]:
    return tuple(Requirement(r.key, r.operator, tuple(r.values)) for r in rules or ())


def _term_of(args: NodeSelectorTermArgs) -> NodeSelectorTerm:
    return NodeSelectorTerm(_requirements(args.match_expressions), _requirements(args.match_fields))


class NodeAffinity(FilterPlugin, ScorePlugin):
    name = "NodeAffinity"
    events = frozenset({NODE_ADD, NODE_UPDATE})  # a new node, or its labels changed
    dynamic = False  # labels and names are specs
    normalizes = True

    def __init__(
        self,
        added_required: tuple[NodeSelectorTerm, ...] | None = None,
        added_preferred: Preferences = (),
    ) -> None:
        self.added_required = added_required  # None: the args add no requirement
        self.added_preferred = added_preferred

    @classmethod
    def from_args(cls, wire: Mapping[str, Any]) -> NodeAffinity:
        added = NodeAffinityArgs.from_wire(wire).added_affinity
        if added is None:
            return cls()
        required = added.required_during_scheduling_ignored_during_execution
        preferred = added.preferred_during_scheduling_ignored_during_execution or ()
        return cls(
            None if required is None else tuple(map(_term_of, required.node_selector_terms)),
            tuple((p.weight, _term_of(p.preference)) for p in preferred),
        )

    def _enforced(self, table: NodeTable, rows: Rows) -> np.ndarray:
        if self.added_required is None:
            return np.ones(table.alive[rows].shape, dtype=bool)
        return any_term(self.added_required, table, rows)

    def filter(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray:
        mask = self._enforced(table, rows)
        for key, value in pod.spec.node_selector:
            mask &= label_requirement(Requirement(key, "In", (value,)), table, rows)
        if pod.spec.required_terms is not None:
            mask &= any_term(pod.spec.required_terms, table, rows)
        return mask

    def candidates(self, spec: SchedulingSpec) -> frozenset[str] | None:
        return named_nodes(spec.required_terms)

    def prefilter(self, spec: SchedulingSpec) -> str | None:
        """Required terms that each name nodes, but no node in common with each other."""
        return CONFLICT_REASON if named_nodes(spec.required_terms) == frozenset() else None

    def static_key(self, spec: SchedulingSpec) -> Hashable:
        return spec.node_selector, spec.required_terms

    def reasons(self, pod: PodClass, table: NodeTable, rows: np.ndarray) -> Counter[str]:
        """Upstream checks the added affinity first and names it apart."""
        enforced = self._enforced(table, rows)
        return +Counter({ENFORCED_REASON: int((~enforced).sum()), REASON: int(enforced.sum())})

    def score(self, pod: PodClass, table: NodeTable, rows: Rows) -> npt.NDArray[np.int64]:
        return preference(self.added_preferred, table, rows) + preference(
            pod.spec.preferred_terms, table, rows
        )

    def normalize(
        self, pod: PodClass, table: NodeTable, rows: np.ndarray, scores: np.ndarray
    ) -> np.ndarray:
        return default_normalize(scores, reverse=False)
