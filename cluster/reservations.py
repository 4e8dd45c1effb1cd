"""Reservations (as Koordinator's): room placed on a node ahead of the pod it is for.

A Reservation is scheduled like a pod (its template says what room, and
where it may go); once placed, the store holds that room (`Hold`) for its
owner: one named pod, or the first pod a label selector picks. The owner is
then tried on that node first and consumes the room when it commits, on
whichever node; everybody else sees it as used. A reservation is used once
(allocateOnce) and given back when its time is up.
"""

from __future__ import annotations

from dataclasses import dataclass

from cluster.objects import Pod
from cluster.selectors import LabelSelector

# The namespace of a reservation's own unit: no Kubernetes namespace can be named so.
RESERVATION_NAMESPACE = "~reservation"


def is_reservation(key: str) -> bool:
    return key.startswith(RESERVATION_NAMESPACE + "/")


@dataclass(frozen=True, slots=True)
class Reservation:
    name: str
    pod: Pod  # the room it asks for and where it may go, as the shards place it
    expires_at: float  # unix seconds
    owner_pod: str = ""  # the key of the one pod it is for, or ""
    owner_selector: LabelSelector | None = None  # or the pods it may be for
    owner_namespace: str = ""  # where those pods are; "": anywhere

    @property
    def key(self) -> str:
        return self.pod.key

    @property
    def hold_key(self) -> str:
        """The key its room is held under in the store: its owner's, once known."""
        return self.owner_pod or self.key

    def owns(self, pod: Pod) -> bool:
        if self.owner_pod:
            return pod.key == self.owner_pod
        if self.owner_selector is None:
            return False
        if self.owner_namespace and pod.namespace != self.owner_namespace:
            return False
        return self.owner_selector.matches(dict(pod.spec.labels))


class Reservations:
    """The reservations optimist knows: waiting to be placed, or placed and unclaimed."""

    def __init__(self) -> None:
        self.pending: dict[str, Reservation] = {}  # by key: not placed yet
        self._placed: dict[str, tuple[Reservation, str]] = {}  # by key: and its node
        self._claimed: dict[str, Reservation] = {}  # by the pod that has it, until bound

    @property
    def has_placed(self) -> bool:
        """Some reservation is placed and waits for its pod, or its pod is not bound yet."""
        return bool(self._placed or self._claimed)

    def add(self, reservation: Reservation) -> None:
        self.pending[reservation.key] = reservation

    def placed(self, key: str, node: str) -> Reservation:
        reservation = self.pending.pop(key)
        self._placed[key] = (reservation, node)
        return reservation

    def owned_by(self, pod: Pod, now: float) -> tuple[Reservation, str] | None:
        """The placed reservation this pod may consume, and its node (a named one first);
        expired ones are forgotten on the way."""
        match = None
        for key, (reservation, node) in list(self._placed.items()):
            if reservation.expires_at <= now:
                del self._placed[key]
            elif reservation.owns(pod) and (match is None or reservation.owner_pod):
                match = (reservation, node)
        return match

    def claimed(self, reservation: Reservation, pod: str) -> None:
        """`pod` has it: no other pod may."""
        self._placed.pop(reservation.key, None)
        self._claimed[pod] = reservation

    def consumed(self, pod: Pod) -> bool:
        """The pod is bound, its reservation used up: whether that gave room back (the
        reservation held more than the pod asked for)."""
        reservation = self._claimed.pop(pod.key, None)
        if reservation is None:
            return False
        asked = dict(pod.spec.requests)
        return any(amount > asked.get(name, 0) for name, amount in reservation.pod.spec.requests)
