"""NodeUnschedulable: a cordoned node takes only pods that tolerate its cordon."""

from __future__ import annotations

from collections import Counter

import numpy as np

from cluster.events import NODE_ADD, NODE_UPDATE
from cluster.objects import SchedulingSpec, Taint
from shards.framework import FilterPlugin, PodClass, Rows
from shards.node_table import NodeTable

# The taint a cordon stands for; a pod that tolerates it may still go there.
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
REASON = "node(s) were unschedulable"


class NodeUnschedulable(FilterPlugin):
    name = "NodeUnschedulable"
    events = frozenset({NODE_ADD, NODE_UPDATE})  # a new node, or the cordon lifted

    def filter(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray:
        if self.static_key(pod.spec):
            return np.ones(table.alive[rows].shape, dtype=bool)
        return ~table.unschedulable[rows]

    def static_key(self, spec: SchedulingSpec) -> bool:
        """Whether the pod tolerates the cordon: all this filter asks of it."""
        return any(t.tolerates(UNSCHEDULABLE_TAINT) for t in spec.tolerations)

    def reasons(self, pod: PodClass, table: NodeTable, rows: np.ndarray) -> Counter[str]:
        return Counter({REASON: len(rows)})
