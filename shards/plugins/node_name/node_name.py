"""NodeName: a pod that names its node (spec.nodeName) fits only that node."""

from __future__ import annotations

from collections import Counter

import numpy as np
import numpy.typing as npt

from cluster.events import NODE_ADD, NODE_UPDATE
from cluster.objects import SchedulingSpec
from shards.framework import FilterPlugin, PodClass, Rows
from shards.node_table import NodeTable

REASON = "node(s) didn't match the requested node name"


class NodeName(FilterPlugin):
    name = "NodeName"
    events = frozenset({NODE_ADD, NODE_UPDATE})

    def filter(self, pod: PodClass, table: NodeTable, rows: Rows) -> npt.NDArray[np.bool_]:
        if not pod.spec.node_name:
            return np.ones(table.alive[rows].shape, dtype=bool)
        return table.named(rows, pod.spec.node_name)

    def static_key(self, spec: SchedulingSpec) -> str:
        return spec.node_name

    def reasons(self, pod: PodClass, table: NodeTable, rows: np.ndarray) -> Counter[str]:
        return Counter({REASON: len(rows)})
