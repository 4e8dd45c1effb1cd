"""The dispatcher: owns every pod not yet bound, decides when and by whom a unit is tried.

It never decides where a unit goes. It groups pods into units, keeps them in
the queues, hands them to shards in batches, and moves each unit through
the states of `cluster.lifecycle` as decisions and outcomes come back.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from cluster.lifecycle import PodState
from cluster.messages import Decision, ShardBatch, ShardResult, UnitOutcome, UnitRequest
from cluster.objects import Pod, PodGroup, SchedulingSpec
from dispatcher.gangs import Gangs
from dispatcher.queue import Backoff, QueuedUnit, SchedulingQueue


@dataclass(slots=True)
class InFlightBatch:
    shard: int
    classes: list[SchedulingSpec]
    units: list[str]


@dataclass(slots=True)
class DispatchStats:
    attempts: int = 0  # unit attempts sent to shards
    pod_attempts: int = 0
    conflicts: int = 0
    conflict_backoffs: int = 0  # units sent to backoff after max_conflicts conflicts in a row
    bind_failures: int = 0
    bound_pods: int = 0
    extender_errors: int = 0  # ignorable extenders' failed calls, skipped by the shards
    units_by_shard: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    pods_by_shard: dict[int, int] = field(default_factory=lambda: defaultdict(int))


class Dispatcher:
    def __init__(
        self,
        backoff: Backoff | None = None,
        clock: Callable[[], float] = time.monotonic,
        *,
        send_manifests: bool = False,
        max_conflicts: int = 5,
    ) -> None:
        self.max_conflicts = max_conflicts  # conflicts in a row before a unit backs off
        self.send_manifests = send_manifests  # scheduler extenders need whole pods
        self.gangs = Gangs()
        self.queue = SchedulingQueue(backoff or Backoff())
        self.clock = clock
        self.units: dict[str, QueuedUnit] = {}
        self.batches: dict[int, InFlightBatch] = {}
        self.rejected: dict[str, str] = {}  # pod key -> why its manifest cannot be scheduled
        self.stats = DispatchStats()
        self._resolved: dict[int, list[int]] = defaultdict(list)
        self._next_batch = 0
        self._arrivals = 0
        # Counts events that may have freed room (a conflict drops a shard's
        # assumption, a failed bind releases a reservation).
        # A verdict "no node fits" made before the latest event may be stale.
        self._releases = 0

    # --- intake ----------------------------------------------------------------

    def add(self, pod: Pod) -> None:
        if pod.group:
            for pods in self.gangs.offer(pod):
                self._enqueue(pods, pod.group)
        elif pod.key not in self.units:
            self._enqueue([pod])

    def add_group(self, group: PodGroup) -> None:
        for pods in self.gangs.add_group(group):
            self._enqueue(pods, group.key)

    def _enqueue(self, pods: list[Pod], group: str = "") -> None:
        """A unit for these pods: a gang (all of a PodGroup's pods at hand) or one pod."""
        self._arrivals += 1
        key = f"{group}#{self._arrivals}" if group and len(pods) > 1 else pods[0].key
        priority = max(p.priority for p in pods)
        group_of = self.gangs.groups.get(group)
        min_member = group_of.min_member if group_of and len(pods) > 1 else len(pods)
        unit = QueuedUnit(
            key,
            pods,
            priority,
            self._arrivals,
            group=group,
            since=self.clock(),
            min_member=min_member,
        )
        self.units[unit.key] = unit
        self.queue.push_active(unit)

    def reject(self, pod_key: str, reason: str) -> None:
        """A pod whose manifest cannot be scheduled: reported, never retried."""
        self.rejected[pod_key] = reason

    # --- to shards ---------------------------------------------------------------

    def next_batch(self, shard: int, max_pods: int) -> ShardBatch | None:
        """Up to `max_pods` pods of the highest-priority active units, for one shard."""
        self.queue.flush_expired(self.clock())
        classes: dict[SchedulingSpec, int] = {}  # equal specs share a class
        specs: list[SchedulingSpec] = []
        units: list[UnitRequest] = []
        pods = 0
        while pods < max_pods:
            unit = self.queue.pop_active()
            if unit is None:
                break
            unit.move(PodState.IN_FLIGHT)
            unit.sent_mark = self._releases
            members = []
            for pod in unit.pods:
                index = classes.get(pod.spec)
                if index is None:
                    index = classes[pod.spec] = len(specs)
                    specs.append(pod.spec)
                members.append((pod.key, index))
            manifests = [dict(p.manifest or {}) for p in unit.pods] if self.send_manifests else []
            units.append(UnitRequest(unit.key, members, unit.min_member, manifests))
            pods += len(unit.pods)
        resolved = self._resolved.pop(shard, [])
        if not units and not resolved:
            return None
        self._next_batch += 1
        batch = ShardBatch(self._next_batch, specs, units, resolved)
        self.batches[batch.batch_id] = InFlightBatch(shard, specs, [u.key for u in units])
        self.stats.attempts += len(units)
        self.stats.pod_attempts += pods
        return batch

    # --- from shards and the binder ----------------------------------------------

    def on_result(self, result: ShardResult) -> tuple[list[SchedulingSpec], list[Decision]]:
        """Take a shard's decisions; returns the classes and the placed decisions for the binder."""
        batch = self.batches[result.batch_id]
        self.stats.extender_errors += result.extender_errors
        answered = set()
        placed = []
        for decision in result.decisions:
            unit = self.units.get(decision.unit)
            if (
                unit is None
                or unit.state is not PodState.IN_FLIGHT
                or decision.unit not in batch.units
            ):
                continue  # not ours to act on: a late or forged answer
            answered.add(decision.unit)
            if decision.placed:
                unit.move(PodState.AWAITING_COMMIT)
                unit.placed = {p.pod for p in decision.placements}
                placed.append(decision)
            else:
                self._back_off(unit, decision.summary(), unit.sent_mark)
        for key in batch.units:
            unit = self.units.get(key)
            if key not in answered and unit is not None and unit.state is PodState.IN_FLIGHT:
                unit.move(PodState.ACTIVE)  # the shard dropped it: try again
                self.queue.push_active(unit)
        if not placed:
            del self.batches[result.batch_id]  # the shard assumed nothing: nothing to resolve
        return batch.classes, placed

    def on_outcomes(self, batch_id: int, outcomes: list[UnitOutcome]) -> list[str]:
        """Apply the binder's outcomes for a batch; returns the pod keys now bound."""
        shard = self.batches[batch_id].shard
        bound: list[str] = []
        for outcome in outcomes:
            unit = self.units.get(outcome.unit)
            if unit is None or unit.state is not PodState.AWAITING_COMMIT:
                continue
            if outcome.status == "bound":
                unit.move(PodState.BOUND)
                del self.units[unit.key]
                if unit.group and len(unit.pods) > 1:
                    # the gang runs: its pods that found no node, and those that
                    # waited for it, now go one by one
                    left = [[p] for p in unit.pods if p.key not in unit.placed]
                    for pods in left + self.gangs.gang_bound(unit.group):
                        self._enqueue(pods)
                bound.extend(unit.placed)
                self.stats.bound_pods += len(unit.placed)
                self.stats.units_by_shard[shard] += 1
                self.stats.pods_by_shard[shard] += len(unit.placed)
            elif outcome.status in ("conflict", "bind-failed"):
                self._releases += 1
                if outcome.status == "bind-failed":
                    self.stats.bind_failures += 1
                else:
                    self.stats.conflicts += 1
                    unit.conflicts += 1
                    if unit.conflicts % self.max_conflicts == 0:
                        # a hot spot: back off instead of spinning; retried at once
                        # when nothing else is going on (the mark is always stale)
                        self.stats.conflict_backoffs += 1
                        self._back_off(unit, f"conflict: {outcome.detail}", -1)
                        continue
                unit.move(PodState.ACTIVE)
                self.queue.push_active(unit)
            else:  # duplicate or invalid: the store refused the request itself
                self._back_off(unit, f"{outcome.status}: {outcome.detail}", self._releases)
        self._settle(batch_id)
        return bound

    def _back_off(self, unit: QueuedUnit, reason: str, verdict_mark: int) -> None:
        unit.attempts += 1
        group = self.gangs.groups.get(unit.group)
        if group and len(unit.pods) > 1 and self.clock() - unit.since > group.schedule_timeout_s:
            reason = (
                f"PodGroup {group.key} not scheduled within {group.schedule_timeout_s}s: {reason}"
            )
        unit.reason = reason
        unit.verdict_mark = verdict_mark
        unit.move(PodState.BACKOFF)
        self.queue.push_backoff(unit, self.clock())

    def _settle(self, batch_id: int) -> None:
        batch = self.batches.pop(batch_id)
        self._resolved[batch.shard].append(batch_id)

    # --- progress ---------------------------------------------------------------

    def requeue_stale(self) -> int:
        """Retry at once every unit whose "no node fits" predates an event that freed room."""
        stale = [u for u in self.queue.backoff_units.values() if u.verdict_mark < self._releases]
        for unit in stale:
            self.queue.release_from_backoff(unit)
        return len(stale)

    def has_stale(self) -> bool:
        return any(u.verdict_mark < self._releases for u in self.queue.backoff_units.values())

    def idle(self) -> bool:
        """Nothing queued to send and nothing out with a shard or the binder."""
        return self.queue.active_count == 0 and not self.batches

    def settled(self) -> bool:
        """Every pod is bound, rejected, or waits on a verdict that still holds."""
        return self.idle() and not self.has_stale()

    def unschedulable(self) -> dict[str, str]:
        """Pod key -> reason, for every pod reported unschedulable and not since bound."""
        out = dict(self.rejected)
        out.update(self.gangs.waiting_reasons())
        for unit in self.queue.backoff_units.values():
            for pod in unit.pods:
                out[pod.key] = unit.reason
        return out
