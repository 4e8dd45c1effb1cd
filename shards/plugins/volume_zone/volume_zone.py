"""VolumeZone: a pod's volumes' zone and region labels, against the node's. A node with
none of those labels fits (a cluster of one zone); else each volume label's key must be
on the node with one of its values, a beta key also matched by the node's GA key."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable

import numpy as np

from cluster.events import NODE_ADD, NODE_UPDATE, PV_ADD, PV_UPDATE, PVC_ADD, STORAGE_CLASS_ADD
from cluster.objects import SchedulingSpec
from cluster.selectors import Requirement
from cluster.volumes.needs import GA_OF_BETA, ZONE_KEYS
from cluster.volumes.resolve import VOLUME_ZONE
from shards.framework import FilterPlugin, PodClass, Rows
from shards.node_table import NodeTable
from shards.selector_rows import label_requirement

REASON = "node(s) had no available volume zone"


class VolumeZone(FilterPlugin):
    name = VOLUME_ZONE
    events = frozenset({STORAGE_CLASS_ADD, NODE_ADD, NODE_UPDATE, PVC_ADD, PV_ADD, PV_UPDATE})
    dynamic = False

    def prefilter(self, spec: SchedulingSpec) -> str | None:
        return spec.volumes.rejected(self.name) if spec.volumes is not None else None

    def filter(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray:
        needs = pod.spec.volumes
        mask = np.ones(table.alive[rows].shape, dtype=bool)
        if needs is None or not (needs.zones or needs.rejection):
            return mask
        if self.prefilter(pod.spec) is not None:
            return ~mask
        zoned = np.zeros_like(mask)
        for key in ZONE_KEYS:
            zoned |= label_requirement(Requirement(key, "Exists", ()), table, rows)
        for key, values in needs.zones:
            fits = label_requirement(Requirement(key, "In", values), table, rows)
            if key in GA_OF_BETA:  # the node's GA label, where it lacks the beta one
                lacks = ~label_requirement(Requirement(key, "Exists", ()), table, rows)
                fits |= lacks & label_requirement(
                    Requirement(GA_OF_BETA[key], "In", values), table, rows
                )
            mask &= fits
        return mask | ~zoned

    def static_key(self, spec: SchedulingSpec) -> Hashable:
        needs = spec.volumes
        return None if needs is None else (needs.zones, self.prefilter(spec))

    def reasons(self, pod: PodClass, table: NodeTable, rows: np.ndarray) -> Counter[str]:
        return Counter({self.prefilter(pod.spec) or REASON: len(rows)})
