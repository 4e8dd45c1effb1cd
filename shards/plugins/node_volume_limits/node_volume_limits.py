"""NodeVolumeLimits: the volumes a pod attaches must not take a node past the number
of volumes of that CSI driver the node may attach (upstream's CSI limits).

Each volume counts once per node however many pods use it there: one already on a
node adds nothing. A node with no limit for a driver takes any number of its volumes,
and a pod adding none of a driver is not held to that driver's limit even where the
node is over it, as upstream.

Rule across shards: re-checked by the binder. The commit script keeps each node's
attached volumes in the store and refuses a pod that would take it past a limit, with
the same rule as here (cluster/store/commit.lua).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from cluster.events import ASSIGNED_POD_DELETE, CSI_NODE_ADD, CSI_NODE_UPDATE, NODE_ADD, PVC_ADD
from cluster.objects import SchedulingSpec
from cluster.volumes.needs import Attachable
from cluster.volumes.resolve import NODE_VOLUME_LIMITS
from shards.framework import FilterPlugin, PodClass, Rows
from shards.node_table import NodeTable, row_numbers

REASON = "node(s) exceed max volume count"


class NodeVolumeLimits(FilterPlugin):
    name = NODE_VOLUME_LIMITS
    events = frozenset({ASSIGNED_POD_DELETE, CSI_NODE_ADD, CSI_NODE_UPDATE, NODE_ADD, PVC_ADD})
    dynamic = True

    def prefilter(self, spec: SchedulingSpec) -> str | None:
        return spec.volumes.rejected(self.name) if spec.volumes is not None else None

    def filter(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray:
        ids = row_numbers(rows, table.size)
        fits = np.ones(len(ids), dtype=bool)
        if self.prefilter(pod.spec) is not None:
            return ~fits
        by_key: dict[str, list[Attachable]] = {}
        for volume in pod.attach:
            by_key.setdefault(volume.key, []).append(volume)
        for key, volumes in by_key.items():
            limit = table.volume_limit(key)[ids]
            limited = limit >= 0
            if not limited.any():
                continue
            new = np.zeros(len(ids), dtype=np.int64)
            for volume in volumes:
                counts = table.migrated(volume.plugin)[ids] if volume.plugin else True
                new += counts
                on = table.volumes.rows_with(volume.volume)
                if on:  # already attached there: it adds nothing
                    new -= counts & np.isin(ids, list(on))
            attached = table.volumes.counts(key, ids)
            fits &= ~(limited & (new > 0) & (attached + new > limit))
        return fits

    def reasons(self, pod: PodClass, table: NodeTable, rows: np.ndarray) -> Counter[str]:
        return Counter({self.prefilter(pod.spec) or REASON: len(rows)})
