"""NodeVolumeLimits: the volumes a pod attaches must not take a node past the number
of volumes of that CSI driver the node may attach (upstream's CSI limits).

Each volume counts once per node however many pods use it there: one already on a
node adds nothing. A node with no limit for a driver takes any number of its volumes,
and a pod adding none of a driver is not held to that driver's limit even where the
node is over it, as upstream.

A class says how many volumes its pods attach, not which (each replica of a StatefulSet
has its own, and would otherwise be a class of its own); a pod that shares a volume
some node has already is judged alone with its own (`PodClass.attach`), so that a node
holding it counts it once.

Rule across shards: re-checked by the binder. The commit script keeps each node's
attached volumes in the store and refuses a pod that would take it past a limit, with
the same rule as here (cluster/store/commit.lua).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from cluster.events import ASSIGNED_POD_DELETE, CSI_NODE_ADD, CSI_NODE_UPDATE, NODE_ADD, PVC_ADD
from cluster.objects import SchedulingSpec
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
        needs = pod.spec.volumes
        if needs is None:
            return fits
        if self.prefilter(pod.spec) is not None:
            return ~fits
        if not needs.attach:  # none, or another plugin refused the pod before this one
            return fits
        new: dict[str, np.ndarray] = {}  # limit key -> per row, the volumes added there
        for key, plugin, volumes in needs.attach:
            added = new.setdefault(key, np.zeros(len(ids), dtype=np.int64))
            added += volumes * table.migrated(plugin)[ids] if plugin else volumes
        for volume in pod.attach:  # the pod's own, where known: a node's already adds nothing
            if on := table.volumes.rows_with(volume.volume):
                new[volume.key] -= np.isin(ids, list(on))
        for key, added in new.items():
            limit = table.volume_limit(key)[ids]
            attached = table.volumes.counts(key, ids)
            fits &= (limit < 0) | (added == 0) | (attached + added <= limit)
        return fits

    def reasons(self, pod: PodClass, table: NodeTable, rows: np.ndarray) -> Counter[str]:
        return Counter({self.prefilter(pod.spec) or REASON: len(rows)})
