"""TaintToleration: NoSchedule and NoExecute taints keep out pods that do not tolerate them.

Nodes are grouped by their set of taints; a pod is judged once per distinct
set, and the answer is spread to the rows with one gather.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from cluster.objects import Taint, Toleration
from shards.framework import FilterPlugin, PodClass, Rows
from shards.node_table import NodeTable

FILTERED_EFFECTS = ("NoSchedule", "NoExecute")


def first_untolerated(
    taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...]
) -> Taint | None:
    for taint in taints:
        if taint.effect in FILTERED_EFFECTS and not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None


class TaintToleration(FilterPlugin):
    name = "TaintToleration"

    def filter(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray:
        codes, groups = table.taint_groups()
        ok = np.array(
            [first_untolerated(g, pod.spec.tolerations) is None for g in groups], dtype=bool
        )
        return ok[codes[rows]]

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
