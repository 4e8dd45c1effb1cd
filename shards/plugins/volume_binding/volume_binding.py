"""VolumeBinding: a pod's bound claims' volumes must be reachable from the node (their
required node affinity, judged on the node's labels); a claim whose volume is gone fits
no node; each claim waiting for its first consumer needs a free volume of its class that
the node reaches, or a class that provisions there (the dispatcher resolved which nodes
those are: `cluster.volumes.matching`), claims of one class that may take the same free
volume each a volume of its own there (matched together, as upstream), and only the node
chosen for its provisioning once one was; and a pod whose claims cannot be used
(missing, lost, being deleted, not bound and not waiting for a consumer) is rejected
before any node, in upstream's words.
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
from cluster.selectors import NodeSelectorTerm
from cluster.volumes.needs import SharedVolumes, VolumeNeeds
from cluster.volumes.resolve import VOLUME_BINDING
from shards.framework import FilterPlugin, PodClass, Rows
from shards.node_table import NodeTable
from shards.selector_rows import any_term

AFFINITY_CONFLICT = "node(s) had volume node affinity conflict"
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
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

    def candidates(self, spec: SchedulingSpec) -> frozenset[str] | None:
        needs = spec.volumes
        return frozenset({needs.selected_node}) if needs and needs.selected_node else None

    def filter(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray:
        needs = pod.spec.volumes
        if needs is None:
            return np.ones(table.alive[rows].shape, dtype=bool)
        if needs.missing_volume or self.prefilter(pod.spec) is not None:
            return np.zeros(table.alive[rows].shape, dtype=bool)
        mask: np.ndarray = self._bound(needs, table, rows) & self._unbound(needs, table, rows)
        return mask

    @staticmethod
    def _bound(needs: VolumeNeeds, table: NodeTable, rows: Rows) -> np.ndarray:
        mask = np.ones(table.alive[rows].shape, dtype=bool)
        for terms in needs.bound_affinity:
            mask &= any_term(terms, table, rows, names=False)
        return mask

    @staticmethod
    def _unbound(needs: VolumeNeeds, table: NodeTable, rows: Rows) -> np.ndarray:
        mask = np.ones(table.alive[rows].shape, dtype=bool)
        for terms in needs.unbound:
            mask &= any_term(terms, table, rows, names=False)
        for shared in needs.shared:
            mask &= _matched(shared, table, rows)
        if needs.selected_node:
            mask &= table.named(rows, needs.selected_node)
        return mask

    def static_key(self, spec: SchedulingSpec) -> Hashable:
        needs = spec.volumes
        if needs is None:
            return None
        return (
            needs.bound_affinity,
            needs.missing_volume,
            needs.unbound,
            needs.shared,
            needs.selected_node,
            self.prefilter(spec),
        )

    def reasons(self, pod: PodClass, table: NodeTable, rows: np.ndarray) -> Counter[str]:
        """A node says each kind of claim it fails: its bound claims' volumes (up to the
        first that is gone: a node that reaches those before it says the volume is
        missing) and its unbound ones. A PreFilter rejection is its own words on every
        node (`optimist explain`)."""
        if (why := self.prefilter(pod.spec)) is not None:
            return Counter({why: len(rows)})
        needs = pod.spec.volumes
        if needs is None:
            return Counter()
        bound = int((~self._bound(needs, table, rows)).sum())
        missing = len(rows) - bound if needs.missing_volume else 0
        unbound = int((~self._unbound(needs, table, rows)).sum())
        return +Counter({AFFINITY_CONFLICT: bound, BIND_CONFLICT: unbound, MISSING_VOLUME: missing})


def _matched(shared: SharedVolumes, table: NodeTable, rows: Rows) -> np.ndarray:
    """Per row, whether upstream's findMatchingVolumes serves every claim of the group
    there: each claim in turn takes the first of its candidates the node reaches that no
    earlier claim took there, else is provisioned where the class provisions."""
    everywhere = np.ones(table.alive[rows].shape, dtype=bool)

    def reached(terms: tuple[NodeSelectorTerm, ...] | None) -> np.ndarray:
        if terms is None:
            return everywhere
        return any_term(terms, table, rows, names=False) if terms else ~everywhere

    reach = [reached(terms) for terms in shared.reach]
    free = [mask.copy() for mask in reach]  # not yet taken by an earlier claim, per row
    provisioned = reached(shared.provisions)
    served = everywhere.copy()
    for candidates in shared.claims:
        found = ~everywhere
        for volume in candidates:
            took = free[volume] & ~found
            free[volume] &= ~took
            found = found | took
        served &= found | provisioned
    return served
