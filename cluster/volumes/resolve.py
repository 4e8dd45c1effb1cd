"""A pod's volumes resolved against the claims, volumes and classes known: upstream's
volume PreFilters, in the default profile's order (VolumeRestrictions, VolumeBinding,
then VolumeZone), with their verdicts and words, in the control process; and the
volumes NodeVolumeLimits counts against a node's attach limits, which its Filter
looks up.

What passes becomes `VolumeNeeds`, the node-side rules a shard judges; what fails is a
`Rejection` for the whole pod, as a PreFilter's UnschedulableAndUnresolvable is: no node
is judged.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from typing import NamedTuple, TypeVar

from cluster.errors import InvalidObject
from cluster.objects import Pod, SchedulingSpec
from cluster.volumes.attach import unbound_volume
from cluster.volumes.index import VolumeIndex
from cluster.volumes.matching import (
    Matches,
    Terms,
    matches,
    node_terms,
    provision_terms,
    shared_volumes,
)
from cluster.volumes.needs import (
    ZONE_KEYS,
    Attachable,
    SharedVolumes,
    VolumeNeeds,
    attach_counts,
)
from cluster.volumes.storage_objects import (
    WAIT_FOR_FIRST_CONSUMER,
    PersistentVolume,
    PersistentVolumeClaim,
    PodVolume,
    StorageClass,
)

T = TypeVar("T")
VOLUME_BINDING = "VolumeBinding"
VOLUME_ZONE = "VolumeZone"
NODE_VOLUME_LIMITS = "NodeVolumeLimits"
VOLUME_RESTRICTIONS = "VolumeRestrictions"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
_PLUGINS = frozenset({VOLUME_RESTRICTIONS, VOLUME_BINDING, VOLUME_ZONE, NODE_VOLUME_LIMITS})
# who uses a claim (namespace/name): the keys of the pods bound, or committed, with it
ClaimUsers = Callable[[str], Collection[str]]
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"


@dataclass(frozen=True, slots=True)
class Rejection:
    """No node can take the pod, as `plugin`'s PreFilter says in `message` (upstream's
    UnschedulableAndUnresolvable; where upstream fails the cycle with an error, over an
    object it cannot use, the pod waits as unschedulable until that object changes)."""

    plugin: str
    message: str


@dataclass(frozen=True, slots=True)
class PodRef:
    namespace: str
    name: str
    uid: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class _Rejected(Exception):
    def __init__(self, rejection: Rejection) -> None:
        self.rejection = rejection


def resolve(
    pod: PodRef,
    volumes: tuple[PodVolume, ...],
    index: VolumeIndex,
    plugins: frozenset[str],
    users: ClaimUsers = lambda claim: (),
) -> VolumeNeeds | Rejection | None:
    """None for a pod with no claim, or where the profile runs none of the plugins."""
    return _resolved(pod, volumes, index, plugins, users).needs


@dataclass(frozen=True, slots=True)
class _Resolved:
    needs: VolumeNeeds | Rejection | None
    attached: tuple[Attachable, ...] = ()  # the volumes it attaches (NodeVolumeLimits)
    exclusive: tuple[str, ...] = ()  # its ReadWriteOncePod claims (VolumeRestrictions)


def _resolved(
    pod: PodRef,
    volumes: tuple[PodVolume, ...],
    index: VolumeIndex,
    plugins: frozenset[str],
    users: ClaimUsers,
) -> _Resolved:
    if not volumes or not plugins & _PLUGINS:
        return _Resolved(None)
    # what the pod holds once placed is read as upstream reads a pod already on a node,
    # whatever refuses it as a new one: claims that cannot be read are not counted
    attached: tuple[Attachable, ...] = ()
    exclusive: tuple[str, ...] = ()
    limits_problem = restrictions_problem = None
    if NODE_VOLUME_LIMITS in plugins:
        attached, limits_problem = _attachable(pod, volumes, index)
    if VOLUME_RESTRICTIONS in plugins:
        exclusive, restrictions_problem = _exclusive(pod, volumes, index)
    try:
        _refuse(restrictions_problem)
        in_use = any(set(users(claim)) - {pod.key} for claim in exclusive)
        binding = _binding(pod, volumes, index) if VOLUME_BINDING in plugins else _Binding()
        zones = _zones(pod, volumes, index) if VOLUME_ZONE in plugins else ()
        _refuse(limits_problem)
    except _Rejected as rejected:
        return _Resolved(rejected.rejection, attached, exclusive)
    needs = VolumeNeeds(
        bound_affinity=binding.affinity,
        missing_volume=binding.missing,
        zones=zones,
        unbound=binding.unbound,
        shared=binding.shared,
        selected_node=binding.selected_node,
        attach=attach_counts(attached),
        claim_in_use=in_use,
    )
    return _Resolved(needs, attached, exclusive)


def _refuse(problem: Rejection | None) -> None:
    if problem is not None:
        raise _Rejected(problem)


def _exclusive(
    pod: PodRef, volumes: tuple[PodVolume, ...], index: VolumeIndex
) -> tuple[tuple[str, ...], Rejection | None]:
    """VolumeRestrictions' PreFilter: each persistentVolumeClaim volume's claim there (not
    an ephemeral one's); those of them ReadWriteOncePod, and the first problem found."""
    exclusive, problem = [], None
    for volume in volumes:
        if volume.ephemeral:
            continue
        claim = index.claim(f"{pod.namespace}/{volume.claim}")
        if not isinstance(claim, PersistentVolumeClaim):
            message = _not_found(volume.claim) if claim is None else str(claim)
            problem = problem or Rejection(VOLUME_RESTRICTIONS, message)
        elif READ_WRITE_ONCE_POD in claim.access_modes:
            exclusive.append(claim.key)
    return tuple(dict.fromkeys(exclusive)), problem


def _not_found(claim: str) -> str:
    """The claim lister's NotFound, which upstream passes on as it is."""
    return f'persistentvolumeclaim "{claim}" not found'


def _not_owner(pod: PodRef, claim: PersistentVolumeClaim) -> str:
    """Upstream's words for an ephemeral volume's claim that another pod made."""
    return (
        f"PVC {claim.namespace}/{claim.name} was not created for pod "
        f"{pod.namespace}/{pod.name} (pod is not owner)"
    )


def _lookup(
    pod: PodRef, plugin: str, index: VolumeIndex, name: str
) -> PersistentVolumeClaim | None:
    found = index.claim(f"{pod.namespace}/{name}")
    if isinstance(found, InvalidObject):
        raise _Rejected(Rejection(plugin, str(found)))
    return found


def _delayed(claim: PersistentVolumeClaim, index: VolumeIndex) -> bool:
    """Upstream's IsDelayBindingMode: no class, or a class not found, binds at once."""
    if not claim.storage_class:
        return False
    found = index.storage_class(claim.storage_class)
    if found is None:
        return False
    if isinstance(found, InvalidObject):
        raise _Rejected(Rejection(VOLUME_BINDING, str(found)))
    if found.binding_mode is None:
        message = f'VolumeBindingMode not set for StorageClass "{found.name}"'
        raise _Rejected(Rejection(VOLUME_BINDING, message))
    return found.binding_mode == WAIT_FOR_FIRST_CONSUMER


class _Binding(NamedTuple):
    """What VolumeBinding's PreFilter leaves a node to judge (`VolumeNeeds`' fields)."""

    affinity: tuple[Terms, ...] = ()
    missing: bool = False
    unbound: tuple[Terms, ...] = ()
    shared: tuple[SharedVolumes, ...] = ()
    selected_node: str = ""


def _binding(pod: PodRef, volumes: tuple[PodVolume, ...], index: VolumeIndex) -> _Binding:
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
            problem = _not_owner(pod, claim)
        if problem:
            raise _Rejected(Rejection(VOLUME_BINDING, problem))
        assert claim is not None
        claims.append(claim)
    affinity, missing, delayed = [], False, []
    for claim in claims:
        if claim.bound:
            found = index.volume(claim.volume_name)
            if isinstance(found, InvalidObject):
                raise _Rejected(Rejection(VOLUME_BINDING, str(found)))
            # upstream checks bound claims in order up to the first whose volume is gone
            missing |= found is None
            if not missing and found is not None and found.node_affinity is not None:
                affinity.append(found.node_affinity)
        elif _delayed(claim, index) and not claim.volume_name:
            delayed.append(claim)
        else:
            raise _Rejected(Rejection(VOLUME_BINDING, _immediate(claim, index)))
    return _Binding(tuple(affinity), missing, *_unbound(delayed, index))


def _immediate(claim: PersistentVolumeClaim, index: VolumeIndex) -> str:
    """Upstream's words for a claim that binds at once and is not bound; where that is
    for want of the class it names (which only making the class will change), which
    claim names which class too."""
    if claim.storage_class and index.storage_class(claim.storage_class) is None:
        return (
            f"{UNBOUND_IMMEDIATE} (PersistentVolumeClaim {claim.key}: "
            f"spec.storageClassName='{claim.storage_class}': no such StorageClass)"
        )
    return UNBOUND_IMMEDIATE


def _unbound(
    claims: list[PersistentVolumeClaim], index: VolumeIndex
) -> tuple[tuple[Terms, ...], tuple[SharedVolumes, ...], str]:
    """The node terms of the claims that wait for their first consumer, those that every
    node can serve left out; the claims of one class that may take the same free volume,
    matched together; and the node chosen for them by an earlier attempt, if any (two
    chosen nodes: no node serves them both, which an empty term says)."""
    unbound: list[Terms] = []
    waiting: dict[str, list[tuple[PersistentVolumeClaim, Matches]]] = {}  # class -> claims
    selected = {c.selected_node for c in claims if c.selected_node}
    for claim in claims:
        storage_class = index.storage_class(claim.storage_class)
        assert isinstance(storage_class, StorageClass)  # `_delayed` found it readable
        if claim.selected_node:
            terms = provision_terms(storage_class)
        else:
            found = matches(claim, index.volumes_of_class(claim.storage_class))
            if found.promised is None and found.free:
                waiting.setdefault(claim.storage_class, []).append((claim, found))
                continue
            terms = node_terms(found, storage_class)
        if terms is not None:
            unbound.append(terms)
    shared = []
    for name, group in waiting.items():
        storage_class = index.storage_class(name)
        assert isinstance(storage_class, StorageClass)
        if _compete(group):
            shared.append(shared_volumes(group, storage_class))
            continue
        for _, found in group:
            if (terms := node_terms(found, storage_class)) is not None:
                unbound.append(terms)
    if len(selected) > 1:
        unbound.append(())
    return tuple(unbound), tuple(shared), min(selected, default="")


def _compete(group: list[tuple[PersistentVolumeClaim, Matches]]) -> bool:
    """Whether two of these claims could be given the same free volume."""
    seen: set[str] = set()
    for _, found in group:
        names = {v.name for v in found.free}
        if seen & names:
            return True
        seen |= names
    return False


def _attachable(
    pod: PodRef, volumes: tuple[PodVolume, ...], index: VolumeIndex
) -> tuple[tuple[Attachable, ...], Rejection | None]:
    """NodeVolumeLimits' volumes of the pod (upstream's filterAttachableVolumes): each
    claim's volume's CSI names, or its class's provisioner's while it has no volume; and
    the first problem that refuses it as a new pod (a pod on a node skips those claims)."""
    found: dict[str, Attachable] = {}
    problem = None
    for volume in volumes:
        claim = index.claim(f"{pod.namespace}/{volume.claim}") if volume.claim else None
        message = ""
        if not volume.claim:
            message = "PersistentVolumeClaim had no name"
        elif claim is None:
            message = f"looking up PVC {pod.namespace}/{volume.claim}: {_not_found(volume.claim)}"
        elif isinstance(claim, InvalidObject):
            message = str(claim)
        elif volume.ephemeral and claim.controller_uid != pod.uid:
            message = _not_owner(pod, claim)
        if message or not isinstance(claim, PersistentVolumeClaim):
            problem = problem or Rejection(NODE_VOLUME_LIMITS, message)
            continue
        pv = index.volume(claim.volume_name) if claim.volume_name else None
        if isinstance(pv, PersistentVolume):
            counted = pv.attach
        else:  # no volume yet, or one not found: counted by its class, if it has one
            storage_class = index.storage_class(claim.storage_class)
            counted = (
                unbound_volume(claim, storage_class)
                if isinstance(storage_class, StorageClass)
                else None
            )
        if counted is not None:
            found.setdefault(counted.volume, counted)
    return tuple(found.values()), problem


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
        missing = f'storageclass.storage.k8s.io "{claim.storage_class}" not found'
        found = _known(VOLUME_ZONE, index.storage_class(claim.storage_class), missing)
        if found.binding_mode is None:
            message = f'VolumeBindingMode not set for StorageClass "{found.name}"'
            raise _Rejected(Rejection(VOLUME_ZONE, message))
        if found.binding_mode == WAIT_FOR_FIRST_CONSUMER:
            return None
        raise _Rejected(Rejection(VOLUME_ZONE, "PersistentVolume had no name"))
    missing = f'persistentvolume "{claim.volume_name}" not found'
    return _known(VOLUME_ZONE, index.volume(claim.volume_name), missing)


def _known(plugin: str, found: T | InvalidObject | None, missing: str) -> T:
    """An object looked up: not there, upstream's NotFound in `missing`; not readable,
    an error naming its field."""
    if found is None:
        raise _Rejected(Rejection(plugin, missing))
    if isinstance(found, InvalidObject):
        raise _Rejected(Rejection(plugin, str(found)))
    return found


@dataclass(slots=True)
class VolumeResolver:
    """Each pod with its volumes resolved afresh, as the dispatcher hands it to a shard:
    upstream runs its PreFilters on every attempt, against the claims as they are."""

    index: VolumeIndex
    plugins: Mapping[str, frozenset[str]]  # profile -> the filter plugins it runs
    users: ClaimUsers = lambda claim: ()
    # the last spec made, from which spec and needs: pods of one template that ask the
    # same of a node (a volume each of one kind) share it, made once
    _last: tuple[SchedulingSpec, VolumeNeeds | None, SchedulingSpec] | None = None

    def resolved(self, pod: Pod) -> Pod:
        """The pod with what its volumes ask of a node in its spec, and what its own
        volumes hold once it is placed (`Pod.attached`, `Pod.exclusive`)."""
        if not pod.volumes:
            return pod
        plugins = self.plugins.get(pod.spec.profile, frozenset())
        ref = PodRef(pod.namespace, pod.name, pod.uid)
        found = _resolved(ref, pod.volumes, self.index, plugins, self.users)
        needs = found.needs
        if isinstance(needs, Rejection):
            needs = VolumeNeeds(rejected_by=needs.plugin, rejection=needs.message)
        spec = self._spec(pod.spec, needs)
        return replace(pod, spec=spec, attached=found.attached, exclusive=found.exclusive)

    def _spec(self, spec: SchedulingSpec, needs: VolumeNeeds | None) -> SchedulingSpec:
        last = self._last
        if last is not None and last[0] is spec and last[1] == needs:
            return last[2]
        made = replace(spec, volumes=needs)
        self._last = (spec, needs, made)
        return made
