"""Commit routing: each batch's placements go to the driver's binder or a binder actor.

Batches take turns (batch id modulo the binders; 0 is the driver's). A commit
survives the store failing under it: what the store holds of the batch once it
is back is what was committed, and the rest of the batch is tried again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import ray
from ray.actor import ActorHandle
from ray.exceptions import RayError

from binder.binder import Binder
from cluster.messages import CommitReply, Conflict, Decision, UnitOutcome
from cluster.objects import SchedulingSpec
from cluster.store import STORE_ERRORS, Store
from cluster.wire import MalformedMessage
from optimist.loop.faults import Faults
from optimist.loop.recovery import StoreRecovery
from optimist.loop.volume_picks import VolumePicks

if TYPE_CHECKING:
    from binder.binder_actor import BinderActor

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Committing:
    """A batch out with a binder actor."""

    batch_id: int
    classes: list[SchedulingSpec]
    decisions: list[Decision]
    decided: float  # time.perf_counter() when its shard's answer arrived
    held: list[UnitOutcome]  # the batch's reservations, placed already
    epoch: str  # the node store's epoch it is committed in


class Commits:
    def __init__(
        self,
        binder: Binder,
        actors: list[ActorHandle[BinderActor]],
        store: Store,
        recovery: StoreRecovery,
        faults: Faults,
        volumes: VolumePicks,
    ) -> None:
        self.binder = binder
        self.actors = actors
        self.store = store
        self.recovery = recovery
        self.faults = faults
        self.volumes = volumes
        self.out: dict[ray.ObjectRef[bytes], Committing] = {}  # at binder actors
        self.by_binder = [0] * (len(actors) + 1)  # batches committed; 0 is the driver's

    def route(
        self,
        batch_id: int,
        classes: list[SchedulingSpec],
        placed: list[Decision],
        epoch: str,
        decided: float,
        held: list[UnitOutcome],
    ) -> list[UnitOutcome] | None:
        """Commit a batch here and give back its outcomes (with `held`), or send it to a
        binder actor: None, and its outcomes come with `take`. Either way the free volumes
        its pods' claims take are picked first."""
        slot = batch_id % (len(self.actors) + 1)
        actor = self.actors[slot - 1] if slot else None
        try:
            self.volumes.pick(placed)
            request = (
                self.binder.request_for_actor(classes, placed, epoch) if actor and placed else None
            )
        except STORE_ERRORS as err:  # routing reads the store too; the batch is settled here
            self.recovery.recover(err)
            request = None
        if actor is None or request is None:  # this batch is the driver's to commit
            self.by_binder[0] += bool(placed)
            if not placed:
                return held
            outcomes = self.guarded(
                lambda: self.binder.process(classes, placed, epoch), classes, placed
            )
            return outcomes + held
        self.by_binder[slot] += 1
        ref: ray.ObjectRef[bytes] = actor.commit.remote(request.encode())
        self.out[ref] = Committing(batch_id, classes, placed, decided, held, request.epoch)
        return None

    def take(self, ref: ray.ObjectRef[bytes]) -> tuple[Committing, list[UnitOutcome]]:
        """A binder actor's batch back, with its outcomes: the store knows what it
        committed, so whatever happened to the actor those units are bound and the
        rest tried again."""
        job = self.out.pop(ref)
        try:
            reply: CommitReply | None = CommitReply.decode(ray.get(ref))
        except (RayError, MalformedMessage) as err:
            log.error("binder actor failed on batch %d: %s", job.batch_id, err)
            self.faults.binder_failures += 1
            reply = None
        if job.epoch != self.store.epoch:  # committed in a store lost since: void
            reply = None
        outcomes = self.guarded(
            lambda: self.binder.take_reply(job.classes, job.decisions, reply),
            job.classes,
            job.decisions,
            voided=reply is None,
        )
        return job, outcomes + job.held

    def guarded(
        self,
        commit: Callable[[], list[UnitOutcome]],
        classes: list[SchedulingSpec],
        decisions: list[Decision],
        voided: bool = False,
    ) -> list[UnitOutcome]:
        """Commit (or take a binder actor's commit) and bind, and note the volumes given
        to the pods bound. If the store fails meanwhile, what it holds of the batch once
        it is back is what was committed: nothing, if it was lost, or if the batch was
        placed against a store since lost. The pods of a commit so `voided` (or lost
        here) that are not bound are counted as tried again for a fault."""
        while True:
            try:
                outcomes = commit()
                break
            except STORE_ERRORS as err:
                self.recovery.recover(err)
                voided = True
                lost = (Conflict.STORE_FAILED, f"the node store failed during the commit: {err}")
                commit = partial(self.binder.take_reply, classes, decisions, None, lost)
        self.volumes.committed(decisions, outcomes)
        if voided:
            settled = {o.unit: len(o.unbound) for o in outcomes if o.status.bound}
            self.faults.fault_retries += sum(
                settled.get(d.unit, len(d.placements)) for d in decisions
            )
        return outcomes
