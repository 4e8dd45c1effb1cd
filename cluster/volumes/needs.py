"""What a pod's volumes ask of a node, once its claims are resolved in the control
process (`cluster.volumes.resolve`): the part of `SchedulingSpec` a shard judges.

Node-side rules only, in tuples, so that pods whose volumes ask the same of a node stay
one equivalence class and are judged once per node like any other static filter.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from cluster.selectors import NodeSelectorTerm
from cluster.wire import Wire

# PersistentVolume labels VolumeZone reads, in upstream's order; a beta key also
# matches a node by its GA key, a GA key never by the beta one
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
ZONE_KEYS = (BETA_ZONE, BETA_REGION, ZONE, REGION)
GA_OF_BETA = {BETA_ZONE: ZONE, BETA_REGION: REGION}


@dataclass(frozen=True, slots=True)
class Attachable:
    """A volume NodeVolumeLimits counts against a node's attach limit (upstream's CSI
    driver and volume handle of a claim, `cluster.volumes.attach`)."""

    key: str  # the node's limit it counts against: attachable-volumes-csi-<driver>
    volume: str  # `<driver>/<handle>`: pods that share it on a node count it once
    # the in-tree plugin it was migrated from: counted only on nodes whose CSINode says
    # that plugin is migrated there ("" for a CSI volume: counted everywhere)
    plugin: str = ""


def attach_counts(volumes: tuple[Attachable, ...]) -> tuple[tuple[str, str, int], ...]:
    """`VolumeNeeds.attach` of a pod attaching these volumes."""
    counts = Counter((v.key, v.plugin) for v in volumes)
    return tuple((key, plugin, n) for (key, plugin), n in sorted(counts.items()))


@dataclass(frozen=True, slots=True)
class SharedVolumes(Wire):
    """Claims of a pod, of one class, that may be given the same free volume: upstream
    takes them smallest request first, giving each the smallest free volume that fits it,
    that the node reaches and that no earlier claim took; a claim left without one is
    provisioned where its class provisions (`cluster.volumes.matching`)."""

    # per candidate volume: the node terms it reaches (None: every node)
    reach: tuple[tuple[NodeSelectorTerm, ...] | None, ...]
    claims: tuple[tuple[int, ...], ...]  # per claim, in that order: its candidates, smallest first
    provisions: tuple[NodeSelectorTerm, ...] | None  # where the class provisions (None: anywhere)


@dataclass(frozen=True, slots=True)
class VolumeNeeds(Wire):
    # per bound claim whose PersistentVolume has required node affinity: its terms, ORed
    bound_affinity: tuple[tuple[NodeSelectorTerm, ...], ...] = ()
    # a bound claim's PersistentVolume does not exist (no node can take the pod)
    missing_volume: bool = False
    # VolumeZone's (label key, values) of the pods' volumes: a zoned node must have each
    zones: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # per claim waiting for its first consumer that not every node can serve: the terms
    # of the nodes where a volume of it, or provisioning, can (`cluster.volumes.matching`)
    unbound: tuple[tuple[NodeSelectorTerm, ...], ...] = ()
    # claims waiting for their first consumer that may take the same free volume, per class
    shared: tuple[SharedVolumes, ...] = ()
    selected_node: str = ""  # a claim's volume is being provisioned for this node alone
    # NodeVolumeLimits: how many volumes the pod attaches, per limit key and in-tree plugin
    # they migrated from ("" for CSI ones): (key, plugin, volumes). Which volumes goes
    # with the pod (`Pod.attached`): pods of a volume each still share a class.
    attach: tuple[tuple[str, str, int], ...] = ()
    # VolumeRestrictions: one of its ReadWriteOncePod claims is used by a pod bound, or
    # committed, already (no node can take it while that pod holds the claim)
    claim_in_use: bool = False
    # a plugin's PreFilter rejected the pod before any node was judged: which, and why
    rejected_by: str = ""
    rejection: str = ""

    def rejected(self, plugin: str) -> str | None:
        """Why `plugin`'s PreFilter rejected the pod, if it did."""
        return self.rejection if self.rejected_by == plugin else None
