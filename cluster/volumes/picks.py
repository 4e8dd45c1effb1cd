"""The free volumes a placed pod's claims are given on a node: chosen in the control
process before the commit, checked by the commit against the volumes given to other
pods (a free volume is a shared, countable thing, like a host port), and bound by
PreBind (`optimist.kube.volume_prebind`).

Only claims that wait for their first consumer are given a volume: unbound, of a
WaitForFirstConsumer class. Each is given the volume promised to it, else the smallest
free one of its class that the node reaches and that is not `taken`; a claim left
without one is provisioned where its class provisions, and where it does not, the node
has no volume left for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from cluster.volumes.index import VolumeIndex
from cluster.volumes.matching import Matches, matches, ordered, pick
from cluster.volumes.storage_objects import (
    WAIT_FOR_FIRST_CONSUMER,
    PersistentVolumeClaim,
    PodVolume,
    StorageClass,
)

NONE_LEFT = ""  # the volume of a claim no volume is left for, on a node


@dataclass(frozen=True, slots=True)
class WaitingClaim:
    """A claim of a pod that waits for its first consumer, with what could serve it."""

    claim: PersistentVolumeClaim
    storage_class: StorageClass
    # None: not matched (being provisioned already, its selected node set; or not asked)
    found: Matches | None


def waiting_claims(
    index: VolumeIndex, namespace: str, volumes: Iterable[PodVolume], match: bool = True
) -> list[WaitingClaim]:
    """A pod's claims that wait for their first consumer, in the order the Filter matched
    them (smallest request first), each with its matches unless not to `match` (a pass
    over its class's volumes: PreBind, given its volumes, needs none); claims bound,
    gone or of a class not there are left to the pod's binding, which says so if it
    matters."""
    waiting = []
    for volume in volumes:
        claim = index.claim(f"{namespace}/{volume.claim}")
        if not isinstance(claim, PersistentVolumeClaim) or claim.volume_name:
            continue
        storage_class = index.storage_class(claim.storage_class)
        if not isinstance(storage_class, StorageClass):
            continue
        if storage_class.binding_mode == WAIT_FOR_FIRST_CONSUMER:
            found = None
            if match and not claim.selected_node:
                found = matches(claim, index.volumes_of_class(claim.storage_class))
            waiting.append(WaitingClaim(claim, storage_class, found))
    return ordered(waiting, lambda w: w.claim)


def picks_on(
    waiting: Iterable[WaitingClaim], labels: Mapping[str, str], given: Mapping[str, str] = {}
) -> tuple[tuple[str, str], ...]:
    """On a node with these labels: (claim key, volume) per claim given a static volume,
    (claim key, NONE_LEFT) per claim with none left that its class cannot provision;
    claims to provision are not named. `given`: volume -> the claim it is given to
    already, which no other claim takes (pods of one claim share its volume)."""
    mine: dict[str, str] = {}  # the volumes given here to the pod's claims
    picks = []
    for w in waiting:
        volume = None
        if w.found is not None:
            taken = _GivenElsewhere((mine, given), w.claim.key)
            volume = pick(w.claim, w.found, labels, taken)
        if volume is not None:
            mine[volume.name] = w.claim.key
            picks.append((w.claim.key, volume.name))
        elif not w.storage_class.provisions:
            picks.append((w.claim.key, NONE_LEFT))
    return tuple(picks)


@dataclass(frozen=True, slots=True)
class _GivenElsewhere:
    """The volumes given to a claim other than `claim`, looked up where asked (a batch
    gives thousands: no set of them is made for each claim)."""

    given: tuple[Mapping[str, str], ...]  # volume -> claim, each
    claim: str

    def __contains__(self, volume: object) -> bool:
        for given in self.given:
            to = given.get(volume) if isinstance(volume, str) else None
            if to is not None:
                return to != self.claim
        return False
