"""VolumeRestrictions: a pod whose ReadWriteOncePod claim another pod uses fits no node
until that pod is gone (upstream's ReadWriteOncePod conflict, counted over the whole
cluster at PreFilter and said by Filter on every node).

Whether another pod uses the claim is resolved in the control process, from the pods
bound and committed (`cluster.volumes.resolve`). Rule across shards: two pods placed at
once with one claim are held apart by the commit, which keeps the claims in use in the
store and refuses the second (cluster/store/commit.lua).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable

import numpy as np

from cluster.events import ASSIGNED_POD_DELETE, NODE_ADD, PVC_ADD, PVC_UPDATE
from cluster.objects import SchedulingSpec
from cluster.volumes.resolve import VOLUME_RESTRICTIONS
from shards.framework import FilterPlugin, PodClass, Rows
from shards.node_table import NodeTable

REASON = (
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
)


class VolumeRestrictions(FilterPlugin):
    name = VOLUME_RESTRICTIONS
    events = frozenset({ASSIGNED_POD_DELETE, NODE_ADD, PVC_ADD, PVC_UPDATE})
    dynamic = False

    def prefilter(self, spec: SchedulingSpec) -> str | None:
        return spec.volumes.rejected(self.name) if spec.volumes is not None else None

    def filter(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray:
        needs = pod.spec.volumes
        taken = needs is not None and (needs.claim_in_use or self.prefilter(pod.spec) is not None)
        return np.full(table.alive[rows].shape, not taken, dtype=bool)

    def static_key(self, spec: SchedulingSpec) -> Hashable:
        needs = spec.volumes
        return None if needs is None else (needs.claim_in_use, self.prefilter(spec))

    def reasons(self, pod: PodClass, table: NodeTable, rows: np.ndarray) -> Counter[str]:
        return Counter({self.prefilter(pod.spec) or REASON: len(rows)})
