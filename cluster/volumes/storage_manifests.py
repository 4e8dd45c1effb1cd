"""Claims, volumes and classes from their manifests, decoded to what the volume plugins
read; a value optimist cannot read is an `InvalidObject` naming the object, the field
and the value, and only the pods that use that object are held back by it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cluster.errors import InvalidObject
from cluster.manifest_fields import (
    list_field,
    map_field,
    metadata,
    node_selector_term,
    string_map,
)
from cluster.volumes.storage_objects import (
    BETA_CLASS,
    BIND_COMPLETED,
    PersistentVolume,
    PersistentVolumeClaim,
    PodVolume,
    StorageClass,
)

BINDING_MODES = ("Immediate", "WaitForFirstConsumer")


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
    return PersistentVolumeClaim(
        namespace=namespace,
        name=name,
        storage_class=_storage_class(obj, meta, spec),
        volume_name=_text(obj, "spec.volumeName", spec.get("volumeName")),
        bind_completed=BIND_COMPLETED in annotations,
        lost=status.get("phase") == "Lost",
        deleting=meta.get("deletionTimestamp") is not None,
        controller_uid=owner,
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
    return PersistentVolume(
        name=name,
        labels=tuple(sorted(string_map(obj, "metadata.labels", meta.get("labels")).items())),
        node_affinity=terms,
    )


def storage_class_from_manifest(raw: Mapping[str, Any]) -> StorageClass:
    name, _, _ = metadata(raw, "StorageClass")
    mode = raw.get("volumeBindingMode")
    if mode is not None and mode not in BINDING_MODES:
        raise InvalidObject(
            f"StorageClass {name}", "volumeBindingMode", mode, f"must be one of {BINDING_MODES}"
        )
    return StorageClass(name=name, binding_mode=mode)


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
