"""TaintToleration: NoSchedule and NoExecute taints keep out pods that do not tolerate them;
PreferNoSchedule taints the pod does not tolerate make a node less preferred.

Nodes are grouped by their set of taints; a pod is judged once per distinct
set, and the answer is spread to the rows with one gather.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import numpy.typing as npt

from cluster.events import NODE_ADD, NODE_UPDATE
from cluster.objects import SchedulingSpec, Taint, Toleration
from shards.framework import FilterPlugin, PodClass, Rows, ScorePlugin, default_normalize
from shards.node_table import NodeTable

FILTERED_EFFECTS = ("NoSchedule", "NoExecute")
PREFER_NO_SCHEDULE = "PreferNoSchedule"


def first_untolerated(
    taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...]
) -> Taint | None:
    for taint in taints:
        if taint.effect in FILTERED_EFFECTS and not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None


def intolerable_preferences(taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...]) -> int:
    """Upstream's countIntolerableTaintsPreferNoSchedule: PreferNoSchedule taints not tolerated.

    Only tolerations with no effect or PreferNoSchedule take part, as upstream
    selects them in PreScore.
    """
    soft = [t for t in tolerations if t.effect in ("", PREFER_NO_SCHEDULE)]
    return sum(
        1
        for taint in taints
        if taint.effect == PREFER_NO_SCHEDULE and not any(t.tolerates(taint) for t in soft)
    )


class TaintToleration(FilterPlugin, ScorePlugin):
    name = "TaintToleration"
    events = frozenset({NODE_ADD, NODE_UPDATE})  # a new node, or a taint removed
    dynamic = False  # taints and tolerations are specs
    normalizes = True

    def filter(self, pod: PodClass, table: NodeTable, rows: Rows) -> npt.NDArray[np.bool_]:
        codes, groups = table.taint_groups()
        ok = np.array(
            [first_untolerated(g, pod.spec.tolerations) is None for g in groups], dtype=bool
        )
        tolerated: npt.NDArray[np.bool_] = ok[codes[rows]]
        return tolerated

    def static_key(self, spec: SchedulingSpec) -> tuple[Toleration, ...]:
        return spec.tolerations

    def reasons(self, pod: PodClass, table: NodeTable, rows: np.ndarray) -> Counter[str]:
        codes, groups = table.taint_groups()
        reasons: Counter[str] = Counter()
        for code, count in zip(*np.unique(codes[rows], return_counts=True), strict=True):
            taint = first_untolerated(groups[code], pod.spec.tolerations)
            if taint is not None:
                reasons[f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"] += int(
                    count
                )
        return reasons

    def score(self, pod: PodClass, table: NodeTable, rows: Rows) -> npt.NDArray[np.int64]:
        """How many PreferNoSchedule taints of the node the pod does not tolerate."""
        codes, groups = table.taint_groups()
        counts = np.array(
            [intolerable_preferences(g, pod.spec.tolerations) for g in groups], dtype=np.int64
        )
        intolerable: npt.NDArray[np.int64] = counts[codes[rows]]
        return intolerable

    def normalize(
        self, pod: PodClass, table: NodeTable, rows: np.ndarray, scores: np.ndarray
    ) -> np.ndarray:
        """Fewer intolerable taints is better: scaled by the maximum and reversed."""
        return default_normalize(scores, reverse=True)
