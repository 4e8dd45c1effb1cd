"""Attachable volumes: which of a pod's volumes count against a node's attach limits,
and what those limits are (upstream's NodeVolumeLimits, its CSI limits).

A volume counts under its CSI driver, as `<driver>/<handle>`, so that pods sharing it
on a node count it once; an in-tree volume of a plugin migrated to CSI counts under
the driver it migrated to, on the nodes that have a CSINode (upstream's isCSIMigrationOn
takes these plugins as migrated wherever a CSINode exists, whatever its annotation). A
node's limits are its allocatable's `attachable-volumes-*` amounts, which its CSINode's
driver counts replace (v1.30 reads both; newer releases the CSINode alone).
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from urllib.parse import urlsplit

from cluster.objects import Node
from cluster.volumes.needs import Attachable
from cluster.volumes.storage_objects import CSINode, PersistentVolumeClaim, StorageClass

ATTACH_PREFIX = "attachable-volumes-"
CSI_ATTACH_PREFIX = "attachable-volumes-csi-"
_NAME_LIMIT = 63  # a resource name's length: a key as long is shortened with a hash
# Upstream counts a claim not yet bound under a random prefix of each scheduler's, so
# that it never meets a real handle; optimist's is fixed, so that a pod's class is too.
UNBOUND = "optimist-unbound"

AWS_EBS = "kubernetes.io/aws-ebs"
GCE_PD = "kubernetes.io/gce-pd"
AZURE_DISK = "kubernetes.io/azure-disk"
CINDER = "kubernetes.io/cinder"
# the in-tree plugins v1.30 counts once migrated (the rest need gates that are off),
# and the CSI drivers they migrate to
MIGRATED_TO = {
    AWS_EBS: "ebs.csi.aws.com",
    GCE_PD: "pd.csi.storage.gke.io",
    AZURE_DISK: "disk.csi.azure.com",
    CINDER: "cinder.csi.openstack.org",
}
_UNSPECIFIED = "UNSPECIFIED"  # the project (and a zone not known) of a migrated GCE disk


def limit_key(driver: str) -> str:
    """Upstream's GetCSIAttachLimitKey: the allocatable name of a driver's limit."""
    key = CSI_ATTACH_PREFIX + driver
    if len(key) < _NAME_LIMIT:
        return key
    digest = hashlib.sha1(driver.encode()).hexdigest()[:16]
    return CSI_ATTACH_PREFIX + driver[:23] + digest


def csi_volume(driver: str, handle: str, plugin: str = "") -> Attachable:
    return Attachable(limit_key(driver), f"{driver}/{handle}", plugin)


def in_tree_volume(
    plugin: str, handle: str, labels: dict[str, str] | None = None
) -> Attachable | None:
    """An in-tree volume as its translation to CSI names it; None where upstream's
    translation fails (the volume is then not counted)."""
    if plugin == AWS_EBS and handle.startswith("aws://"):
        # aws://<zone>/<volume id>: the id alone, as upstream's KubernetesVolumeIDToEBSVolumeID
        parts = urlsplit(handle)
        handle = parts.path.strip("/")
        if not handle.startswith("vol-") or "/" in handle:
            return None
    elif plugin == GCE_PD:
        handle = _gce_handle(handle, labels or {})
    return csi_volume(MIGRATED_TO[plugin], handle, plugin) if handle else None


def _gce_handle(disk: str, labels: dict[str, str]) -> str:
    """projects/UNSPECIFIED/zones/<zone>/disks/<disk>, or .../regions/<region>/... for a
    volume of several zones of one region, as upstream's GCE PD translation names it."""
    zones = (
        labels.get("failure-domain.beta.kubernetes.io/zone")
        or labels.get("topology.kubernetes.io/zone")
        or ""
    ).split("__")
    if len(zones) > 1:
        regions = {z.rsplit("-", 1)[0] for z in zones}
        if len(regions) != 1:
            return ""
        return f"projects/{_UNSPECIFIED}/regions/{regions.pop()}/disks/{disk}"
    zone = zones[0] or _UNSPECIFIED
    return f"projects/{_UNSPECIFIED}/zones/{zone}/disks/{disk}"


def unbound_volume(claim: PersistentVolumeClaim, storage_class: StorageClass) -> Attachable | None:
    """A claim with no volume yet counts under its class's provisioner (upstream's
    getCSIDriverInfoFromSC); a class with none is not counted."""
    provisioner = storage_class.provisioner
    if not provisioner:
        return None
    handle = f"{UNBOUND}-{claim.namespace}/{claim.name}"
    if provisioner in MIGRATED_TO:
        return csi_volume(MIGRATED_TO[provisioner], handle, provisioner)
    return csi_volume(provisioner, handle)


def node_with_limits(node: Node, csi_node: CSINode | None) -> Node:
    """The node with the attach limits and migrated plugins NodeVolumeLimits reads: a
    node with a CSINode counts the disks of the four plugins as their CSI drivers'
    (upstream's isCSIMigrationOn, which reads no annotation for them)."""
    limits = {k: v for k, v in node.allocatable.items() if k.startswith(ATTACH_PREFIX)}
    migrated: tuple[str, ...] = ()
    if csi_node is not None:
        limits.update((limit_key(d), n) for d, n in csi_node.limits)
        migrated = tuple(MIGRATED_TO)
    return replace(node, volume_limits=tuple(sorted(limits.items())), migrated_plugins=migrated)
