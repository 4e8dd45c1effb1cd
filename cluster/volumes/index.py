"""The claims, volumes, classes and CSINodes the control process knows, by the keys the plugins
look them up by: fed from their watches (or the simulated cluster), read by the
resolver (`cluster.volumes.resolve`).

An object that cannot be decoded is kept as its error: a pod that uses it is told what
is wrong with it, and nothing else is held back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Generic, NamedTuple, TypeVar

from cluster import events
from cluster.errors import InvalidObject
from cluster.objects import Node
from cluster.volumes.attach import node_with_limits
from cluster.volumes.storage_manifests import (
    claim_from_manifest,
    csi_node_from_manifest,
    storage_class_from_manifest,
    volume_from_manifest,
)
from cluster.volumes.storage_objects import (
    ClaimRef,
    CSINode,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)

T = TypeVar("T")
CLAIMS, VOLUMES, CLASSES = "persistentvolumeclaims", "persistentvolumes", "storageclasses"
CSI_NODES = "csinodes"


class VolumeChange(NamedTuple):
    """A claim, volume, class or CSINode made, changed or deleted, as its watch told of it."""

    resource: str  # CLAIMS, VOLUMES, CLASSES or CSI_NODES
    manifest: Mapping[str, Any]
    deleted: bool = False


@dataclass(slots=True)
class _Kind(Generic[T]):
    decode: Callable[[Mapping[str, Any]], T]
    added: str  # the cluster event of one made
    updated: str  # and of one changed
    namespaced: bool
    objects: dict[str, T | InvalidObject] = field(default_factory=dict)


@dataclass(slots=True)
class VolumeIndex:
    claims: _Kind[PersistentVolumeClaim] = field(
        default_factory=lambda: _Kind(claim_from_manifest, events.PVC_ADD, events.PVC_UPDATE, True)
    )
    volumes: _Kind[PersistentVolume] = field(
        default_factory=lambda: _Kind(volume_from_manifest, events.PV_ADD, events.PV_UPDATE, False)
    )
    classes: _Kind[StorageClass] = field(
        default_factory=lambda: _Kind(
            storage_class_from_manifest,
            events.STORAGE_CLASS_ADD,
            events.STORAGE_CLASS_UPDATE,
            False,
        )
    )
    csi_nodes: _Kind[CSINode] = field(
        default_factory=lambda: _Kind(
            csi_node_from_manifest, events.CSI_NODE_ADD, events.CSI_NODE_UPDATE, False
        )
    )
    # the readable volumes by storage class, as `volumes` holds them: what a claim is
    # matched against at each attempt, without a pass over every volume
    _by_class: dict[str, dict[str, PersistentVolume]] = field(default_factory=dict)
    # upstream's assume cache: the free volumes committed pods' claims were given
    # ((claim, volume) each, by pod), read as promised to those claims until the pod goes
    _assumed: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    _given: dict[str, str] = field(default_factory=dict)  # volume -> claim key

    def apply(self, resource: str, manifest: Mapping[str, Any], deleted: bool = False) -> str:
        """A watch's object (of `resource`: CLAIMS, VOLUMES, CLASSES or CSI_NODES) made, changed or
        deleted; the cluster event it is, "" for a deletion (which makes no pod fit)."""
        kind = self._kind(resource)
        meta = manifest.get("metadata") or {}
        key = str(meta.get("name", ""))
        if kind.namespaced:
            key = f"{meta.get('namespace') or 'default'}/{key}"
        if kind is self.volumes:
            self._unfile(key)
        if deleted:
            kind.objects.pop(key, None)
            return ""
        known = key in kind.objects
        try:
            kind.objects[key] = found = kind.decode(manifest)
        except InvalidObject as err:
            kind.objects[key] = err
        else:
            if isinstance(found, PersistentVolume):
                self._by_class.setdefault(found.storage_class, {})[key] = found
        return kind.updated if known else kind.added

    def _unfile(self, name: str) -> None:
        old = self.volumes.objects.get(name)
        if isinstance(old, PersistentVolume):
            same_class = self._by_class[old.storage_class]
            del same_class[name]
            if not same_class:
                del self._by_class[old.storage_class]

    def _kind(self, resource: str) -> _Kind[Any]:
        kinds: dict[str, _Kind[Any]] = {
            CLAIMS: self.claims,
            VOLUMES: self.volumes,
            CLASSES: self.classes,
            CSI_NODES: self.csi_nodes,
        }
        return kinds[resource]

    def claim(self, key: str) -> PersistentVolumeClaim | InvalidObject | None:
        return self.claims.objects.get(key)

    def volume(self, name: str) -> PersistentVolume | InvalidObject | None:
        return self.volumes.objects.get(name)

    def storage_class(self, name: str) -> StorageClass | InvalidObject | None:
        return self.classes.objects.get(name)

    def limited(self, node: Node) -> Node:
        """The node with the attach limits of its CSINode, as far as known."""
        return node_with_limits(node, self.csi_node(node.name))

    def csi_node(self, name: str) -> CSINode | None:
        """A node's CSINode; one that cannot be read counts as none (upstream's lister
        error, after which the node has no CSINode limits)."""
        found = self.csi_nodes.objects.get(name)
        return found if isinstance(found, CSINode) else None

    def volumes_of_class(self, name: str) -> list[PersistentVolume]:
        """The readable volumes of a storage class (upstream's ListPVs), those given to a
        claim (`assume`) as promised to it."""
        volumes = list(self._by_class.get(name, {}).values())
        if not self._given:
            return volumes
        return [self._as_given(v) for v in volumes]

    def _as_given(self, volume: PersistentVolume) -> PersistentVolume:
        claim = self._given.get(volume.name)
        if claim is None or volume.claim_ref is not None:
            return volume
        namespace, name = claim.split("/", 1)
        return replace(volume, claim_ref=ClaimRef(namespace, name))

    def assume(self, pod: str, picks: tuple[tuple[str, str], ...]) -> None:
        """A committed pod's claims were given these free volumes ((claim, volume) each):
        no other claim is matched to them while the pod is there."""
        self._assumed[pod] = picks
        self._given.update((volume, claim) for claim, volume in picks)

    def forget(self, pods: Iterable[str]) -> str:
        """Pods gone, or sent back: the volumes their claims were given, where not bound
        since, are free again. The cluster event that is (a volume changed), "" if none."""
        freed = False
        for pod in pods:
            for claim, volume in self._assumed.pop(pod, ()):
                if self._given.get(volume) == claim:
                    del self._given[volume]
                    freed |= self._free(volume)
        return events.PV_UPDATE if freed else ""

    def _free(self, name: str) -> bool:
        """Whether the volume reads as free now (not bound since it was given)."""
        volume = self.volumes.objects.get(name)
        return isinstance(volume, PersistentVolume) and volume.claim_ref is None
