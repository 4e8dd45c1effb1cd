"""Cluster events that can make an unschedulable unit schedulable (upstream's ClusterEvent).

A filter plugin names the events that can turn its "no" into a "yes"
(`FilterPlugin.events`, upstream's EventsToRegister). A shard that finds no
node for a unit sends back the events named by the filters that rejected
it; the dispatcher keeps the unit aside until one of them happens
(upstream's QueueingHint, at the granularity of the event), or until it has
waited `UNSCHEDULABLE_TIMEOUT_S`.

The names are upstream's: a resource and what happened to it.
"""

from __future__ import annotations

NODE_ADD = "NodeAdd"
NODE_UPDATE = "NodeUpdate"  # labels, taints, allocatable or the cordon changed
NODE_DELETE = "NodeDelete"
# A pod bound to a node: committed and bound by optimist, or seen bound by the watch.
ASSIGNED_POD_ADD = "AssignedPodAdd"
# A bound pod's room given back: the pod deleted, or a reservation or a shard's
# assumption dropped (a conflict, a failed binding), as upstream's Unreserve does.
ASSIGNED_POD_DELETE = "AssignedPodDelete"

# the objects the volume plugins read (cluster/volumes): made, or changed
PVC_ADD = "PersistentVolumeClaimAdd"
PVC_UPDATE = "PersistentVolumeClaimUpdate"
PV_ADD = "PersistentVolumeAdd"
PV_UPDATE = "PersistentVolumeUpdate"
STORAGE_CLASS_ADD = "StorageClassAdd"
STORAGE_CLASS_UPDATE = "StorageClassUpdate"
CSI_NODE_ADD = "CSINodeAdd"
CSI_NODE_UPDATE = "CSINodeUpdate"

EVENTS = frozenset(
    {
        NODE_ADD,
        NODE_UPDATE,
        NODE_DELETE,
        ASSIGNED_POD_ADD,
        ASSIGNED_POD_DELETE,
        PVC_ADD,
        PVC_UPDATE,
        PV_ADD,
        PV_UPDATE,
        STORAGE_CLASS_ADD,
        STORAGE_CLASS_UPDATE,
        CSI_NODE_ADD,
        CSI_NODE_UPDATE,
    }
)

# what may leave a free volume for a claim once the commit found none (a gang's claims
# wanting one volume): volumes, claims or classes changed (a volume given to the claim of
# a pod gone is free again: PV_UPDATE)
VOLUMES_FREED = frozenset(
    {PVC_ADD, PVC_UPDATE, PV_ADD, PV_UPDATE, STORAGE_CLASS_ADD, STORAGE_CLASS_UPDATE}
)

# upstream's podMaxInUnschedulablePodsDuration: a unit no event has moved is tried
# again after this long anyway
UNSCHEDULABLE_TIMEOUT_S = 300.0
