"""A claim waiting for its first consumer, matched to what could serve it on a node, as
upstream's VolumeBinding does it (FindMatchingVolume, then checkVolumeProvisions).

What holds of a volume and a claim wherever the pod goes is decided here, once per
attempt: a volume promised to the claim (its claimRef names it), else the free volumes
of its class that fit it, else provisioning where its class provisions. What depends on
the node is left for last: the shard judges the resulting node terms over its node
table (`VolumeNeeds.unbound`), and the control process picks the volume on each
candidate node before the commit (`pick`, through `cluster.volumes.picks`).
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from cluster.selectors import NodeSelectorTerm, Requirement
from cluster.volumes.needs import SharedVolumes
from cluster.volumes.storage_objects import (
    AVAILABLE,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)

Terms = tuple[NodeSelectorTerm, ...]
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Matches:
    """The volumes that could serve a claim, on some node."""

    # a volume promised to the claim: upstream takes it or, where its node affinity
    # does not hold, no static volume at all
    promised: PersistentVolume | None
    free: tuple[PersistentVolume, ...]  # smallest first, as upstream prefers them


def fits(claim: PersistentVolumeClaim, volume: PersistentVolume) -> bool:
    """What FindMatchingVolume checks of a volume that is not the claim's already,
    leaving out its node affinity and the volumes chosen for the pod's other claims."""
    selector = claim.selector
    return (
        volume.claim_ref is None
        and volume.capacity >= claim.request
        and volume.volume_mode == claim.volume_mode
        and not volume.deleting
        and volume.phase == AVAILABLE
        and (selector is None or selector.matches(dict(volume.labels)))
        and volume.storage_class == claim.storage_class
        and claim.access_modes <= volume.access_modes
    )


def matches(claim: PersistentVolumeClaim, volumes: Iterable[PersistentVolume]) -> Matches:
    """`volumes`: those of the claim's class."""
    free = []
    for volume in volumes:
        if volume.claim_ref is not None and volume.claim_ref.names(claim):
            promised = (
                volume.capacity >= claim.request
                and volume.volume_mode == claim.volume_mode
                and not volume.deleting
            )
            if promised:
                return Matches(volume, ())
        elif fits(claim, volume):
            free.append(volume)
    free.sort(key=lambda v: v.capacity)
    return Matches(None, tuple(free))


def node_terms(found: Matches, storage_class: StorageClass | None) -> Terms | None:
    """The nodes where a volume found, or provisioning, can serve the claim (where the
    promised volume cannot, upstream provisions too, as for a claim matched to none), as node
    terms judged on the node's labels alone (as upstream judges a volume's node
    affinity); None: every node. Terms that each ask for one label among some values
    are merged into one, so that a thousand local volumes cost one requirement."""
    volumes = [found.promised] if found.promised is not None else list(found.free)
    terms: list[NodeSelectorTerm] = []
    for volume in volumes:
        reach = _reach(volume)
        if reach is None:
            return None
        terms.extend(reach)
    if storage_class is not None:
        provisioned = provision_terms(storage_class)
        if provisioned is None:
            return None
        terms.extend(provisioned)
    return _merged(terms)


def shared_volumes(
    claims: list[tuple[PersistentVolumeClaim, Matches]], storage_class: StorageClass
) -> SharedVolumes:
    """Claims of one class that may take the same free volume, for the shard to match
    together on each node as upstream's findMatchingVolumes does: smallest request first
    (the order `ordered` gives PreBind too), each its candidates, smallest first."""
    index: dict[str, int] = {}
    reach: list[Terms | None] = []
    candidates = []
    for _, found in ordered(claims, lambda c: c[0]):
        for volume in found.free:
            if volume.name not in index:
                index[volume.name] = len(reach)
                reach.append(_reach(volume))
        candidates.append(tuple(index[v.name] for v in found.free))
    return SharedVolumes(tuple(reach), tuple(candidates), provision_terms(storage_class))


def ordered(items: Iterable[T], claim_of: Callable[[T], PersistentVolumeClaim]) -> list[T]:
    """Claims in the order upstream matches them to volumes: smallest request first."""
    return sorted(items, key=lambda item: claim_of(item).request)


def _reach(volume: PersistentVolume) -> Terms | None:
    """A volume's node affinity as node terms judged on labels alone (None: every node)."""
    if volume.node_affinity is None:
        return None
    terms = []
    for term in volume.node_affinity:
        if term.match_fields and not term.match_expressions:
            return None  # judged without the node's name, it holds on every node
        terms.append(NodeSelectorTerm(term.match_expressions))
    return tuple(terms)


def provision_terms(storage_class: StorageClass) -> Terms | None:
    """Where the class can provision a volume (its allowedTopologies); None: every node,
    no term: none (a class of static volumes alone)."""
    if not storage_class.provisions:
        return ()
    return storage_class.allowed_topologies


def _merged(terms: list[NodeSelectorTerm]) -> Terms:
    values: dict[str, list[str]] = {}
    rest: list[NodeSelectorTerm] = []
    for term in terms:
        [req, *more] = term.match_expressions or (None,)
        if req is not None and not more and req.operator == "In":
            values.setdefault(req.key, []).extend(req.values)
        elif term not in rest:
            rest.append(term)
    one_key = [
        NodeSelectorTerm((Requirement(key, "In", tuple(sorted(set(vals)))),))
        for key, vals in values.items()
    ]
    return (*one_key, *rest)


def pick(
    claim: PersistentVolumeClaim,
    found: Matches,
    labels: Mapping[str, str],
    taken: Container[str] = (),
) -> PersistentVolume | None:
    """The volume the claim is given on a node with these labels: the promised one, else
    the smallest free one not `taken` (by the pod's other claims, or by other pods'
    claims); None: provision it, if its class can."""
    if found.promised is not None:
        return found.promised if reaches(found.promised, labels) else None
    return next(
        (v for v in found.free if v.name not in taken and reaches(v, labels)),
        None,
    )


def reaches(volume: PersistentVolume, labels: Mapping[str, str]) -> bool:
    """Upstream's CheckNodeAffinity, on a node made of the labels alone."""
    if volume.node_affinity is None:
        return True
    return any(
        (term.match_expressions or term.match_fields)
        and all(r.matches(labels) for r in term.match_expressions)
        for term in volume.node_affinity
    )
