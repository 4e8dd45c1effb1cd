"""A pod's volumes resolved against the claims, volumes and classes known: upstream's
volume PreFilters, in the default profile's order (VolumeRestrictions, VolumeBinding,
VolumeZone), with their verdicts and words, in the control process.

What passes becomes `VolumeNeeds`, the node-side rules a shard judges; what fails is a
`Rejection` for the whole pod, as a PreFilter's UnschedulableAndUnresolvable is (or its
Error, for an object optimist cannot read): no node is judged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from cluster.errors import InvalidObject
from cluster.objects import Pod, SchedulingSpec
from cluster.volumes.index import VolumeIndex
from cluster.volumes.needs import ZONE_KEYS, VolumeNeeds
from cluster.volumes.storage_objects import (
    WAIT_FOR_FIRST_CONSUMER,
    PersistentVolume,
    PersistentVolumeClaim,
    PodVolume,
)

VOLUME_RESTRICTIONS = "VolumeRestrictions"
VOLUME_BINDING = "VolumeBinding"
VOLUME_ZONE = "VolumeZone"
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"


@dataclass(frozen=True, slots=True)
class Rejection:
    """No node can take the pod, as `plugin`'s PreFilter says in `message`; `error`: the
    cycle failed (upstream's Error status) rather than found the pod unschedulable."""

    plugin: str
    message: str
    error: bool = False


@dataclass(frozen=True, slots=True)
class PodRef:
    namespace: str
    name: str
    uid: str


class _Rejected(Exception):
    def __init__(self, rejection: Rejection) -> None:
        self.rejection = rejection


def resolve(
    pod: PodRef, volumes: tuple[PodVolume, ...], index: VolumeIndex, plugins: frozenset[str]
) -> VolumeNeeds | Rejection | None:
    """None for a pod with no claim, or where the profile runs none of the plugins."""
    if not volumes or not plugins & {VOLUME_RESTRICTIONS, VOLUME_BINDING, VOLUME_ZONE}:
        return None
    try:
        if VOLUME_RESTRICTIONS in plugins:
            _restrictions(pod, volumes, index)
        needs = VolumeNeeds()
        if VOLUME_BINDING in plugins:
            needs = _binding(pod, volumes, index)
        if VOLUME_ZONE in plugins:
            needs = VolumeNeeds(
                needs.bound_affinity, needs.missing_volume, _zones(pod, volumes, index)
            )
    except _Rejected as rejected:
        return rejected.rejection
    return needs


def _not_found(claim: str) -> str:
    """The claim lister's NotFound, which upstream passes on as it is."""
    return f'persistentvolumeclaim "{claim}" not found'


def _lookup(
    pod: PodRef, plugin: str, index: VolumeIndex, name: str
) -> PersistentVolumeClaim | None:
    found = index.claim(f"{pod.namespace}/{name}")
    if isinstance(found, InvalidObject):
        raise _Rejected(Rejection(plugin, str(found), error=True))
    return found


def _restrictions(pod: PodRef, volumes: tuple[PodVolume, ...], index: VolumeIndex) -> None:
    """VolumeRestrictions' PreFilter: every persistentVolumeClaim volume's claim exists."""
    for volume in volumes:
        if not volume.ephemeral and _lookup(pod, VOLUME_RESTRICTIONS, index, volume.claim) is None:
            raise _Rejected(Rejection(VOLUME_RESTRICTIONS, _not_found(volume.claim)))


def _delayed(claim: PersistentVolumeClaim, index: VolumeIndex) -> bool:
    """Upstream's IsDelayBindingMode: no class, or a class not found, binds at once."""
    if not claim.storage_class:
        return False
    found = index.storage_class(claim.storage_class)
    if found is None:
        return False
    if isinstance(found, InvalidObject):
        raise _Rejected(Rejection(VOLUME_BINDING, str(found), error=True))
    if found.binding_mode is None:
        message = f'VolumeBindingMode not set for StorageClass "{found.name}"'
        raise _Rejected(Rejection(VOLUME_BINDING, message, error=True))
    return found.binding_mode == WAIT_FOR_FIRST_CONSUMER


def _binding(pod: PodRef, volumes: tuple[PodVolume, ...], index: VolumeIndex) -> VolumeNeeds:
    """VolumeBinding's PreFilter: each claim there, usable by this pod, and bound or
    waiting for its first consumer; the bound ones' volumes' node affinity."""
    claims = []
    for volume in volumes:
        claim = _lookup(pod, VOLUME_BINDING, index, volume.claim)
        problem = ""
        if claim is None:
            problem = (
                "waiting for ephemeral volume controller to create the persistentvolumeclaim "
                f'"{volume.claim}"'
                if volume.ephemeral
                else _not_found(volume.claim)
            )
        elif claim.lost:
            problem = (
                f'persistentvolumeclaim "{claim.name}" bound to non-existent persistentvolume '
                f'"{claim.volume_name}"'
            )
        elif claim.deleting:
            problem = f'persistentvolumeclaim "{claim.name}" is being deleted'
        elif volume.ephemeral and claim.controller_uid != pod.uid:
            problem = (
                f"PVC {claim.namespace}/{claim.name} was not created for pod "
                f"{pod.namespace}/{pod.name} (pod is not owner)"
            )
        if problem:
            raise _Rejected(Rejection(VOLUME_BINDING, problem))
        assert claim is not None
        claims.append(claim)
    affinity, missing = [], False
    for claim in claims:
        if claim.bound:
            found = index.volume(claim.volume_name)
            if isinstance(found, InvalidObject):
                raise _Rejected(Rejection(VOLUME_BINDING, str(found), error=True))
            missing |= found is None
            if found is not None and found.node_affinity is not None:
                affinity.append(found.node_affinity)
        elif not (_delayed(claim, index) and not claim.volume_name):
            raise _Rejected(Rejection(VOLUME_BINDING, UNBOUND_IMMEDIATE))
    return VolumeNeeds(tuple(affinity), missing)


def _zones(
    pod: PodRef, volumes: tuple[PodVolume, ...], index: VolumeIndex
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """VolumeZone's PreFilter: the zone and region labels of the volumes of the pod's
    persistentVolumeClaim volumes (not its ephemeral ones), each split on `__`."""
    zones = []
    for volume in volumes:
        pv = None if volume.ephemeral else _zoned_volume(pod, volume, index)
        labels = dict(pv.labels) if pv is not None else {}
        for key in ZONE_KEYS:
            if key in labels:
                values = tuple(v.strip() for v in labels[key].split("__"))
                if all(values):  # upstream logs an empty one and leaves the label out
                    zones.append((key, tuple(sorted(set(values)))))
    return tuple(zones)


def _zoned_volume(pod: PodRef, volume: PodVolume, index: VolumeIndex) -> PersistentVolume | None:
    """The volume a claim names; None where it waits for its first consumer."""
    if not volume.claim:
        raise _Rejected(Rejection(VOLUME_ZONE, "PersistentVolumeClaim had no name"))
    claim = _lookup(pod, VOLUME_ZONE, index, volume.claim)
    if claim is None:
        raise _Rejected(Rejection(VOLUME_ZONE, _not_found(volume.claim)))
    if not claim.volume_name:
        if not claim.storage_class:
            message = "PersistentVolumeClaim had no pv name and storageClass name"
            raise _Rejected(Rejection(VOLUME_ZONE, message))
        found = index.storage_class(claim.storage_class)
        if found is None:
            message = f'storageclass.storage.k8s.io "{claim.storage_class}" not found'
            raise _Rejected(Rejection(VOLUME_ZONE, message))
        if isinstance(found, InvalidObject):
            raise _Rejected(Rejection(VOLUME_ZONE, str(found), error=True))
        if found.binding_mode is None:
            message = f'VolumeBindingMode not set for StorageClass "{found.name}"'
            raise _Rejected(Rejection(VOLUME_ZONE, message))
        if found.binding_mode == WAIT_FOR_FIRST_CONSUMER:
            return None
        raise _Rejected(Rejection(VOLUME_ZONE, "PersistentVolume had no name"))
    pv = index.volume(claim.volume_name)
    if pv is None:
        message = f'persistentvolume "{claim.volume_name}" not found'
        raise _Rejected(Rejection(VOLUME_ZONE, message))
    if isinstance(pv, InvalidObject):
        raise _Rejected(Rejection(VOLUME_ZONE, str(pv), error=True))
    return pv


@dataclass(slots=True)
class VolumeResolver:
    """Each pod's spec with its volumes resolved afresh, as the dispatcher hands it to a
    shard: upstream runs its PreFilters on every attempt, against the claims as they are."""

    index: VolumeIndex
    plugins: Mapping[str, frozenset[str]]  # profile -> the filter plugins it runs

    def spec_of(self, pod: Pod) -> SchedulingSpec:
        if not pod.volumes:
            return pod.spec
        plugins = self.plugins.get(pod.spec.profile, frozenset())
        ref = PodRef(pod.namespace, pod.name, pod.uid)
        needs = resolve(ref, pod.volumes, self.index, plugins)
        if isinstance(needs, Rejection):
            needs = VolumeNeeds(rejected_by=needs.plugin, rejection=needs.message)
        return replace(pod.spec, volumes=needs)
