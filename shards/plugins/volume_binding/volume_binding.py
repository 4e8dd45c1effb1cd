"""VolumeBinding: a pod's bound claims' volumes must be reachable from the node (their
required node affinity, judged on the node's labels); a claim whose volume is gone fits
no node; and a pod whose claims cannot be used (missing, lost, being deleted, not bound
and not waiting for a consumer) is rejected before any node, in upstream's words.

Claims waiting for their first consumer are not matched to volumes here yet: such a pod
passes, and Reserve and PreBind are reported inactive (optimist/configuration).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable

import numpy as np

from cluster.events import (
    NODE_ADD,
    NODE_UPDATE,
    PV_ADD,
    PV_UPDATE,
    PVC_ADD,
    PVC_UPDATE,
    STORAGE_CLASS_ADD,
    STORAGE_CLASS_UPDATE,
)
from cluster.objects import SchedulingSpec
from cluster.volumes.resolve import VOLUME_BINDING
from shards.framework import FilterPlugin, PodClass, Rows
from shards.node_table import NodeTable
from shards.selector_rows import any_term

AFFINITY_CONFLICT = "node(s) had volume node affinity conflict"
MISSING_VOLUME = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"


class VolumeBinding(FilterPlugin):
    name = VOLUME_BINDING
    events = frozenset(
        {
            STORAGE_CLASS_ADD,
            STORAGE_CLASS_UPDATE,
            PVC_ADD,
            PVC_UPDATE,
            PV_ADD,
            PV_UPDATE,
            NODE_ADD,
            NODE_UPDATE,
        }
    )
    dynamic = False  # node labels against the volumes the dispatcher resolved

    def prefilter(self, spec: SchedulingSpec) -> str | None:
        return spec.volumes.rejected(self.name) if spec.volumes is not None else None

    def filter(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray:
        needs = pod.spec.volumes
        mask = np.ones(table.alive[rows].shape, dtype=bool)
        if needs is None:
            return mask
        if needs.missing_volume or self.prefilter(pod.spec) is not None:
            return ~mask
        for terms in needs.bound_affinity:
            mask &= any_term(terms, table, rows, names=False)
        return mask

    def static_key(self, spec: SchedulingSpec) -> Hashable:
        needs = spec.volumes
        if needs is None:
            return None
        return needs.bound_affinity, needs.missing_volume, self.prefilter(spec)

    def reasons(self, pod: PodClass, table: NodeTable, rows: np.ndarray) -> Counter[str]:
        """Upstream stops at the first bound claim whose volume is missing; a PreFilter
        rejection is its own words on every node (`optimist explain`)."""
        if (why := self.prefilter(pod.spec)) is not None:
            return Counter({why: len(rows)})
        needs = pod.spec.volumes
        missing = needs is not None and needs.missing_volume
        return Counter({MISSING_VOLUME if missing else AFFINITY_CONFLICT: len(rows)})
