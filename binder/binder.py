"""The binder decides whether: commit in the store, then bind in the cluster.

Commits go to the store in one Lua call per batch; each unit is accepted
whole or not at all. A pod whose binding the cluster refuses is released
again, so that no reservation outlives its pod; pods of the same unit that
did bind stay bound (a binding cannot be undone), and the dispatcher decides
what becomes of the rest.

This binder runs in the driver, beside the cluster adapter. Binder actors
(actor.py) may commit batches for it that need no cross-pod re-check; it
then binds what they committed (`bind`), and fences.py keeps the re-check
of the batches it commits itself exact.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from binder.crosspod_guard import CrossPodGuard
from cluster.cluster_adapter import Binding, ClusterAdapter
from cluster.messages import CommitReply, CommitRequest, Conflict, Decision, Status, UnitOutcome
from cluster.objects import SchedulingSpec
from cluster.profile_config import ProfileConfig
from cluster.store import STORE_ERRORS, Fences, Store

log = logging.getLogger(__name__)


class Binder:
    def __init__(
        self,
        store: Store,
        cluster: ClusterAdapter,
        profiles: Sequence[ProfileConfig],
        conflict_mode: str = "fine",
        fenced: bool = False,
    ) -> None:
        self.store = store
        self.conflict_mode = conflict_mode
        self.cluster = cluster
        self.guard = CrossPodGuard(store, profiles, fenced)
        self.commits = 0  # Lua commit calls
        self.committed_pods = 0  # pods those calls committed: over `commits`, the batch size
        self.committed_at = 0.0  # time.perf_counter() when the last commit returned
        self.bind_s = 0.0  # how long the last call to bind in the cluster took

    def process(
        self,
        classes: Sequence[SchedulingSpec],
        decisions: Sequence[Decision],
        epoch: str | None = None,
    ) -> list[UnitOutcome]:
        """Commit and bind the placed units of one shard batch, placed in the store's
        `epoch` (by default the binder's own): EpochChanged, nothing committed, if the
        store is in another."""
        admitted, refused, fences = self.guard.screen(classes, decisions)
        if not admitted:
            return refused
        fenced = Fences(units=fences) if self.guard.fenced else None
        committed = self.store.commit(classes, admitted, self.conflict_mode, fenced, epoch)
        self.guard.saw_keep_away(committed.keep_away)
        return self.bind(classes, admitted, committed.outcomes) + refused

    def request_for_actor(
        self,
        classes: Sequence[SchedulingSpec],
        decisions: Sequence[Decision],
        epoch: str | None = None,
    ) -> CommitRequest | None:
        """The batch as a binder actor commits it, or None if it needs the cross-pod
        re-check and must be committed here."""
        if self.guard.needs_check(classes, decisions):
            return None
        return CommitRequest(
            self.guard.keep_away,
            list(classes),
            list(decisions),
            epoch or self.store.working_epoch(),
        )

    def take_reply(
        self,
        classes: Sequence[SchedulingSpec],
        decisions: Sequence[Decision],
        reply: CommitReply | None,
        lost: tuple[Conflict, str] = (Conflict.BINDER_FAILED, "its binder actor failed"),
    ) -> list[UnitOutcome]:
        """Bind what an actor committed. Without a reply (the actor died, or the store
        was away: `lost` says which) the store tells which units were committed; the
        others were not."""
        if reply is None:
            return self.bind(classes, decisions, self._recover(decisions, lost))
        self.guard.saw_keep_away(reply.keep_away)
        return self.bind(classes, decisions, reply.outcomes)

    def _recover(
        self, decisions: Sequence[Decision], lost: tuple[Conflict, str]
    ) -> list[UnitOutcome]:
        committed = self.store.committed_placements([d.unit for d in decisions])
        outcomes = []
        for d in decisions:
            placed = committed.get(d.unit, {})
            if placed and all(p.pod in placed for p in d.placements):
                where = [placed[p.pod] for p in d.placements]
                outcomes.append(
                    UnitOutcome(
                        d.unit,
                        Status.COMMITTED,
                        nodes=[node for node, _ in where],
                        gpus=[gpus for _, gpus in where],
                    )
                )
                continue
            if placed:  # some pod was deleted meanwhile: give back the rest too
                self.store.release([d.unit])
            outcomes.append(UnitOutcome.refused(d.unit, *lost))
        return outcomes

    def bind(
        self,
        classes: Sequence[SchedulingSpec],
        decisions: Sequence[Decision],
        outcomes: list[UnitOutcome],
    ) -> list[UnitOutcome]:
        """Bind the committed units of a batch, and release the pods the cluster refused."""
        self.committed_at = time.perf_counter()
        self.commits += 1
        bindings: list[Binding] = []
        owners: list[UnitOutcome] = []  # the unit of each binding
        for decision, outcome in zip(decisions, outcomes, strict=True):
            if outcome.committed:
                gpus = outcome.gpus or [[]] * len(outcome.nodes)
                for placement, node, indices in zip(
                    decision.placements, outcome.nodes, gpus, strict=True
                ):
                    volumes = placement.picked(node)
                    bindings.append(Binding(placement.pod, node, tuple(indices), volumes))
                    owners.append(outcome)
                    self.guard.note_committed(classes[placement.cls])
        self.committed_pods += len(bindings)
        errors = self.cluster.bind(bindings) if bindings else []
        self.bind_s = time.perf_counter() - self.committed_at
        failed: dict[str, dict[str, str]] = {}  # unit -> pod -> why its binding failed
        for binding, owner, error in zip(bindings, owners, errors, strict=True):
            if error is not None:
                failed.setdefault(owner.unit, {})[binding.pod] = error
        whole: list[str] = []  # units none of whose pods bound
        partial: list[str] = []  # pods that did not bind, of units some of whose pods did
        for outcome in outcomes:
            if not outcome.committed:
                continue
            errs = failed.get(outcome.unit)
            if not errs:
                outcome.status = Status.BOUND
                continue
            outcome.detail = next(iter(errs.values()))
            if len(errs) == len(outcome.nodes):
                outcome.status = Status.BIND_FAILED
                whole.append(outcome.unit)
            else:
                # Bound pods cannot be unbound: keep them, give back the rest.
                outcome.status, outcome.unbound = Status.PARTLY_BOUND, list(errs)
                partial.extend(errs)
        if whole or partial:
            try:
                self.store.release(whole, partial)
            except STORE_ERRORS as err:
                # bound pods stay counted; these hold room until the store is built
                # again or reconciled (never released twice: that would over-commit)
                log.error(
                    "binder: cannot give back %d refused units and %d pods: %s",
                    len(whole),
                    len(partial),
                    err,
                )
        return outcomes
