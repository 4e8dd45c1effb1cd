"""Reservations in the loop: a reserved room is held in the store, never bound.

A Reservation object is queued and placed like a pod; its placement becomes a
hold in the store for its owner, who is then tried on that node first. When
the owner binds, the hold is consumed, and room it held beyond the pod's
requests is free again.
"""

from __future__ import annotations

import time

from cluster.events import ASSIGNED_POD_DELETE
from cluster.messages import Conflict, Decision, Status, UnitOutcome
from cluster.objects import Pod
from cluster.reservations import Reservation, Reservations, is_reservation
from cluster.store import STORE_ERRORS, Hold, Store
from dispatcher.answers import Bound
from dispatcher.dispatcher import Dispatcher
from optimist.loop.recovery import StoreRecovery


class ReservationDesk:
    def __init__(self, store: Store, dispatcher: Dispatcher, recovery: StoreRecovery) -> None:
        self.store = store
        self.dispatcher = dispatcher
        self.recovery = recovery
        self.book = Reservations()
        # pod -> node where a leader before this one held room for it (a preemptor whose
        # victims it evicted), read from the store at the first new pods
        self._inherited: dict[str, str] | None = None

    def add(self, reservation: Reservation) -> None:
        self.book.add(reservation)
        self.dispatcher.add(reservation.pod)

    def claim(self, pods: list[Pod]) -> None:
        """New pods that a placed reservation is for, or that a leader before this one
        held room for: each is tried on its node first (not left until the hold lapses)."""
        if self._inherited is None:
            self._inherited = {key: hold.node for key, hold in self.store.holds().items()}
        for pod in pods:
            if (node := self._inherited.pop(pod.key, None)) is not None:
                self.dispatcher.nominate_waiting(pod.key, node)
        if not self.book.has_placed:
            return
        for pod in pods:
            found = self.book.owned_by(pod, time.time())
            if found is None:
                continue
            reservation, node = found
            # picked by a selector: the room is held under its key from now on
            selected = not reservation.owner_pod
            if selected and self.store.claim_hold(reservation.key, pod.key) != "claimed":
                continue
            self.book.claimed(reservation, pod.key)
            self.dispatcher.nominate_waiting(pod.key, node)

    def take_placed(self, placed: list[Decision]) -> tuple[list[Decision], list[UnitOutcome]]:
        """A shard's placements less the reservations', and those reservations held."""
        if not self.book.pending:
            return placed, []
        ours = [d for d in placed if d.unit in self.book.pending]
        others = [d for d in placed if d.unit not in self.book.pending]
        return others, [self._hold(d) for d in ours]  # holding takes them out of `pending`

    def without_reservations(self, placed: list[Bound]) -> list[Bound]:
        """The pods bound, less the reservations among them; the holds they consume are
        given up."""
        if not self.book.has_placed and not any(is_reservation(b.pod.key) for b in placed):
            return placed
        placed = [b for b in placed if not is_reservation(b.pod.key)]
        if any([self.book.consumed(b.pod) for b in placed]):
            # a reservation held more than its pod took: the rest is free again
            self.dispatcher.on_event(ASSIGNED_POD_DELETE)
        return placed

    def _hold(self, decision: Decision) -> UnitOutcome:
        """A reservation's placement: its room held in the store for its owner, on the
        first candidate where it still fits; then its owner, if queued, is told."""
        reservation = self.book.pending[decision.unit]
        why, kind = "no candidate", Conflict.RESOURCES
        for node in decision.placements[0].nodes:
            hold = Hold(
                reservation.hold_key, node, reservation.pod.spec.requests, reservation.expires_at
            )
            try:
                verdict = self.store.preempt([], [hold])
            except STORE_ERRORS as err:
                self.recovery.recover(err)
                return UnitOutcome.refused(
                    decision.unit, Conflict.STORE_FAILED, f"node store failed: {err}"
                )
            if verdict.reserved:
                self.book.placed(reservation.key, node)
                if reservation.owner_pod and self.dispatcher.nominate_waiting(
                    reservation.owner_pod, node
                ):
                    self.book.claimed(reservation, reservation.owner_pod)
                return UnitOutcome(decision.unit, Status.BOUND, [node])
            why, kind = verdict.detail, verdict.conflict or kind
        return UnitOutcome.refused(decision.unit, kind, why)
