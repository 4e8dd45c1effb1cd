"""Claims, volumes, classes and CSINodes from their manifests, decoded to what the volume plugins
read; a value optimist cannot read is an `InvalidObject` naming the object, the field
and the value, and only the pods that use that object are held back by it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cluster.errors import InvalidObject
from cluster.manifest_fields import (
    label_selector,
    list_field,
    map_field,
    metadata,
    node_selector_term,
    string_map,
    strings,
)
from cluster.quantity import quantity_field
from cluster.selectors import NodeSelectorTerm, Requirement
from cluster.volumes.attach import (
    AWS_EBS,
    AZURE_DISK,
    CINDER,
    GCE_PD,
    csi_volume,
    in_tree_volume,
)
from cluster.volumes.needs import Attachable
from cluster.volumes.storage_objects import (
    BETA_CLASS,
    BIND_COMPLETED,
    FILESYSTEM,
    SELECTED_NODE,
    ClaimRef,
    CSINode,
    PersistentVolume,
    PersistentVolumeClaim,
    PodVolume,
    StorageClass,
)

BINDING_MODES = ("Immediate", "WaitForFirstConsumer")
# the in-tree sources a migrated plugin reads: the spec field, and its field naming the disk
_IN_TREE_SOURCES = {
    "awsElasticBlockStore": (AWS_EBS, "volumeID"),
    "gcePersistentDisk": (GCE_PD, "pdName"),
    "azureDisk": (AZURE_DISK, "diskURI"),
    "cinder": (CINDER, "volumeID"),
}
VOLUME_MODES = (FILESYSTEM, "Block")
STORAGE = "storage"


def _text(obj: str, path: str, raw: object) -> str:
    if raw is None:
        return ""
    if not isinstance(raw, str):
        raise InvalidObject(obj, path, raw, "must be a string")
    return raw


def _storage_class(obj: str, meta: Mapping[str, Any], spec: Mapping[str, Any]) -> str:
    """The beta annotation wins where it is there, even empty; else the field."""
    annotations = string_map(obj, "metadata.annotations", meta.get("annotations"))
    if BETA_CLASS in annotations:
        return annotations[BETA_CLASS]
    return _text(obj, "spec.storageClassName", spec.get("storageClassName"))


def _storage(obj: str, path: str, amounts: Mapping[str, Any]) -> int:
    """The `storage` of a map of quantities, in bytes (0 where it is left out)."""
    raw = amounts.get(STORAGE)
    return (
        0
        if raw is None
        else quantity_field(obj, f"{path}.{STORAGE}", raw, milli=False, whole=False)
    )


def _volume_mode(obj: str, spec: Mapping[str, Any]) -> str:
    mode = spec.get("volumeMode")
    if mode is None:
        return FILESYSTEM
    if mode not in VOLUME_MODES:
        raise InvalidObject(obj, "spec.volumeMode", mode, f"must be one of {VOLUME_MODES}")
    return str(mode)


def claim_from_manifest(raw: Mapping[str, Any]) -> PersistentVolumeClaim:
    name, namespace, meta = metadata(raw, "PersistentVolumeClaim")
    obj = f"PersistentVolumeClaim {namespace}/{name}"
    spec = map_field(obj, "spec", raw.get("spec"))
    annotations = string_map(obj, "metadata.annotations", meta.get("annotations"))
    owner = ""
    for i, ref in enumerate(
        list_field(obj, "metadata.ownerReferences", meta.get("ownerReferences"))
    ):
        ref = map_field(obj, f"metadata.ownerReferences[{i}]", ref)
        if ref.get("controller") is True:
            owner = _text(obj, f"metadata.ownerReferences[{i}].uid", ref.get("uid"))
    status = map_field(obj, "status", raw.get("status"))
    resources = map_field(obj, "spec.resources", spec.get("resources"))
    requests = map_field(obj, "spec.resources.requests", resources.get("requests"))
    return PersistentVolumeClaim(
        namespace=namespace,
        name=name,
        storage_class=_storage_class(obj, meta, spec),
        volume_name=_text(obj, "spec.volumeName", spec.get("volumeName")),
        bind_completed=BIND_COMPLETED in annotations,
        lost=status.get("phase") == "Lost",
        deleting=meta.get("deletionTimestamp") is not None,
        controller_uid=owner,
        uid=_text(obj, "metadata.uid", meta.get("uid")),
        request=_storage(obj, "spec.resources.requests", requests),
        access_modes=frozenset(strings(obj, "spec.accessModes", spec.get("accessModes"))),
        volume_mode=_volume_mode(obj, spec),
        selector=label_selector(obj, "spec.selector", spec.get("selector")),
        selected_node=annotations.get(SELECTED_NODE, ""),
        resource_version=_text(obj, "metadata.resourceVersion", meta.get("resourceVersion")),
    )


def volume_from_manifest(raw: Mapping[str, Any]) -> PersistentVolume:
    name, _, meta = metadata(raw, "PersistentVolume")
    obj = f"PersistentVolume {name}"
    spec = map_field(obj, "spec", raw.get("spec"))
    affinity = map_field(obj, "spec.nodeAffinity", spec.get("nodeAffinity"))
    terms = None
    if affinity.get("required") is not None:
        path = "spec.nodeAffinity.required.nodeSelectorTerms"
        required = map_field(obj, "spec.nodeAffinity.required", affinity["required"])
        terms = tuple(
            node_selector_term(obj, f"{path}[{i}]", t)
            for i, t in enumerate(list_field(obj, path, required.get("nodeSelectorTerms")))
        )
    claim_ref = None
    if (ref := spec.get("claimRef")) is not None:
        ref = map_field(obj, "spec.claimRef", ref)
        claim_ref = ClaimRef(
            _text(obj, "spec.claimRef.namespace", ref.get("namespace")) or "default",
            _text(obj, "spec.claimRef.name", ref.get("name")),
            _text(obj, "spec.claimRef.uid", ref.get("uid")),
        )
    status = map_field(obj, "status", raw.get("status"))
    capacity = map_field(obj, "spec.capacity", spec.get("capacity"))
    labels = string_map(obj, "metadata.labels", meta.get("labels"))
    return PersistentVolume(
        name=name,
        labels=tuple(sorted(labels.items())),
        node_affinity=terms,
        storage_class=_storage_class(obj, meta, spec),
        capacity=_storage(obj, "spec.capacity", capacity),
        access_modes=frozenset(strings(obj, "spec.accessModes", spec.get("accessModes"))),
        volume_mode=_volume_mode(obj, spec),
        claim_ref=claim_ref,
        phase=_text(obj, "status.phase", status.get("phase")),
        deleting=meta.get("deletionTimestamp") is not None,
        resource_version=_text(obj, "metadata.resourceVersion", meta.get("resourceVersion")),
        attach=_attachable(obj, spec, labels),
    )


def _attachable(obj: str, spec: Mapping[str, Any], labels: dict[str, str]) -> Attachable | None:
    """The volume's CSI driver and handle, or those of the CSI driver its in-tree plugin
    migrates to (upstream's getCSIDriverInfo and its translation)."""
    if (csi := spec.get("csi")) is not None:
        csi = map_field(obj, "spec.csi", csi)
        driver = _text(obj, "spec.csi.driver", csi.get("driver"))
        handle = _text(obj, "spec.csi.volumeHandle", csi.get("volumeHandle"))
        return csi_volume(driver, handle) if driver and handle else None
    for source, (plugin, disk) in _IN_TREE_SOURCES.items():
        if (found := spec.get(source)) is not None:
            path = f"spec.{source}.{disk}"
            handle = _text(obj, path, map_field(obj, f"spec.{source}", found).get(disk))
            return in_tree_volume(plugin, handle, labels) if handle else None
    return None


def csi_node_from_manifest(raw: Mapping[str, Any]) -> CSINode:
    name, _, _ = metadata(raw, "CSINode")
    obj = f"CSINode {name}"
    spec = map_field(obj, "spec", raw.get("spec"))
    limits = []
    for i, driver in enumerate(list_field(obj, "spec.drivers", spec.get("drivers"))):
        driver = map_field(obj, f"spec.drivers[{i}]", driver)
        allocatable = map_field(obj, f"spec.drivers[{i}].allocatable", driver.get("allocatable"))
        if (count := allocatable.get("count")) is not None:
            if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                path = f"spec.drivers[{i}].allocatable.count"
                raise InvalidObject(obj, path, count, "must be a whole number >= 0")
            limits.append((_text(obj, f"spec.drivers[{i}].name", driver.get("name")), count))
    return CSINode(name, tuple(limits))


def storage_class_from_manifest(raw: Mapping[str, Any]) -> StorageClass:
    name, _, _ = metadata(raw, "StorageClass")
    mode = raw.get("volumeBindingMode")
    if mode is not None and mode not in BINDING_MODES:
        raise InvalidObject(
            f"StorageClass {name}", "volumeBindingMode", mode, f"must be one of {BINDING_MODES}"
        )
    obj = f"StorageClass {name}"
    path = "allowedTopologies"
    topologies = list_field(obj, path, raw.get(path))
    return StorageClass(
        name=name,
        binding_mode=mode,
        provisioner=_text(obj, "provisioner", raw.get("provisioner")),
        allowed_topologies=tuple(
            _topology_term(obj, f"{path}[{i}]", t) for i, t in enumerate(topologies)
        )
        or None,
    )


def _topology_term(obj: str, path: str, raw: object) -> NodeSelectorTerm:
    """A TopologySelectorTerm: label keys each In its values, ANDed, as a node selector
    term (none of them: it selects no node, as upstream's)."""
    raw = map_field(obj, path, raw)
    exprs = list_field(obj, f"{path}.matchLabelExpressions", raw.get("matchLabelExpressions"))
    requirements = []
    for i, expr in enumerate(exprs):
        where = f"{path}.matchLabelExpressions[{i}]"
        expr = map_field(obj, where, expr)
        key = _text(obj, f"{where}.key", expr.get("key"))
        values = strings(obj, f"{where}.values", expr.get("values"))
        if not key or not values:
            raise InvalidObject(obj, where, dict(expr), "needs a key and at least one value")
        requirements.append(Requirement(key, "In", values))
    return NodeSelectorTerm(tuple(requirements))


def pod_volumes(obj: str, pod_name: str, spec: Mapping[str, Any]) -> tuple[PodVolume, ...]:
    """The volumes of a pod that name a claim: persistentVolumeClaim ones, and generic
    ephemeral ones, whose claim is named `<pod>-<volume>` (upstream's ephemeral.VolumeClaimName)."""
    out = []
    for i, raw in enumerate(list_field(obj, "spec.volumes", spec.get("volumes"))):
        volume = map_field(obj, f"spec.volumes[{i}]", raw)
        name = _text(obj, f"spec.volumes[{i}].name", volume.get("name"))
        if (source := volume.get("persistentVolumeClaim")) is not None:
            path = f"spec.volumes[{i}].persistentVolumeClaim"
            claim = map_field(obj, path, source).get("claimName")
            out.append(PodVolume(name, _text(obj, f"{path}.claimName", claim)))
        elif volume.get("ephemeral") is not None:
            out.append(PodVolume(name, f"{pod_name}-{name}", ephemeral=True))
    return tuple(out)


def ephemeral_named(volumes: tuple[PodVolume, ...], pod_name: str) -> tuple[PodVolume, ...]:
    """A pod's volumes as another pod of the same spec named `pod_name` has them: its
    ephemeral claims are named for it."""
    if not any(v.ephemeral for v in volumes):
        return volumes
    return tuple(
        PodVolume(v.name, f"{pod_name}-{v.name}", True) if v.ephemeral else v for v in volumes
    )
