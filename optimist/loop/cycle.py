"""The scheduling cycle: feed the shards, settle their answers, commit, bind.

One turn (`SchedulingLoop.step`): take in what changed in the cluster (`ingest`),
top up every shard's pipeline from the active queue, then wait for the first
answer: a shard's placements go, less its reservations, to a binder
(`commits`); units that fit nowhere go to preemption (`eviction`); what the binder
bound goes back to the dispatcher and out to the hooks. Store failures anywhere
are survived in `recovery`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import ray

from binder.binder import Binder
from binder.preemption import PreemptionPlanner, reclaiming
from binder.preemption_args import DefaultPreemptionArgs
from cluster.cluster_adapter import ClusterAdapter
from cluster.disruption import DisruptionBudgets
from cluster.inventory import BoundPods
from cluster.messages import ShardResult, UnitOutcome
from cluster.objects import Pod
from cluster.quota import QuotaTree
from cluster.volumes.index import VolumeIndex
from cluster.volumes.resolve import VolumeResolver
from dispatcher.answers import Reading
from dispatcher.dispatcher import Dispatcher
from dispatcher.queue import Backoff
from optimist.explain import Explainer
from optimist.loop.commits import Commits
from optimist.loop.eviction import Eviction
from optimist.loop.faults import Faults
from optimist.loop.ingest import Ingest
from optimist.loop.pipelines import Sent, ShardPipelines
from optimist.loop.recovery import StoreRecovery
from optimist.loop.reservation_desk import ReservationDesk
from optimist.loop.stages import StageHook
from optimist.loop.volume_picks import VolumePicks
from optimist.metrics.recorder import LoopMetrics
from optimist.profiling import Profiler
from optimist.runtime import Platform
from optimist.settings import Settings


def preemption_args(settings: Settings) -> dict[str, DefaultPreemptionArgs]:
    """Per profile that preempts, its DefaultPreemption args."""
    return {
        p.scheduler_name: DefaultPreemptionArgs.from_wire(p.args["DefaultPreemption"])
        for p in settings.profiles
        if "DefaultPreemption" in p.args
    }


class SchedulingLoop:
    """The control loop: ingest pods, feed the shards, commit and bind what they decide."""

    def __init__(
        self,
        platform: Platform,
        cluster: ClusterAdapter,
        on_bound: Callable[[list[str]], None] = lambda pods: None,
        on_stage: StageHook | None = None,
        metrics: LoopMetrics | None = None,
        profiler: Profiler | None = None,
        explainer: Explainer | None = None,
    ) -> None:
        s = self.settings = platform.settings
        self.cluster = cluster
        self.store = platform.store
        self.on_bound = on_bound
        self.on_stage = on_stage
        self.metrics = metrics
        if metrics:
            metrics.expect(s.scheduler_names, len(platform.shards))
        self.profiler = profiler
        if profiler:
            profiler.attach(platform.shards)
        self.explainer = explainer
        if explainer:
            explainer.attach(platform.shards)
        self.faults = Faults()
        bound_pods = self.bound_pods = BoundPods()  # what preemption may evict
        budgets = DisruptionBudgets(bound_pods)
        preempting = preemption_args(s)
        self.volumes = VolumeIndex()
        resolver = VolumeResolver(
            self.volumes,
            {p.scheduler_name: frozenset(p.filters) for p in s.profiles},
            bound_pods.using,
        )
        self.dispatcher = Dispatcher(
            Backoff(s.backoff_initial_s, s.backoff_max_s),
            send_manifests=bool(s.extenders),
            max_conflicts=s.max_conflicts,
            node_partitions=s.node_partition_count,
            quotas=QuotaTree(s.quotas) if s.quotas else None,
            lowest_bound_priority=bound_pods.lowest_priority,
            preemptive_profiles=frozenset(preempting),
            resolve=resolver.resolved,
        )
        self.binder = Binder(
            self.store, cluster, s.profiles, s.conflict_mode, bool(platform.binders)
        )
        self.recovery = StoreRecovery(
            self.store,
            cluster,
            self.binder,
            self.dispatcher,
            self.faults,
            self.volumes,
            platform.revive_redis,
        )
        self.reservations = ReservationDesk(self.store, self.dispatcher, self.recovery)
        self.intake = Ingest(
            cluster,
            self.store,
            self.dispatcher,
            bound_pods,
            budgets,
            self.reservations,
            on_stage,
            self.volumes,
        )
        planner = PreemptionPlanner(
            self.store,
            bound_pods,
            np.random.default_rng(s.seed),
            budgets.violating,
            reclaiming(lambda: self.dispatcher.quotas),
            preempting,
        )
        self.eviction = Eviction(
            planner,
            self.store,
            self.dispatcher,
            cluster,
            bound_pods,
            self.recovery,
            s.hold_ttl_s,
            metrics,
        )
        self.pipelines = ShardPipelines(
            platform.shards, s.batches_in_flight, s.shard_timeout_s, self.faults
        )
        picks = VolumePicks(
            self.volumes,
            self.store,
            self._unit_pods,
            self.intake.labels,
            frozenset(s.volume_bind_timeouts()),
        )
        self.commits = Commits(
            self.binder, platform.binders, self.store, self.recovery, self.faults, picks
        )

    def run_until_settled(self, tick: Callable[[], None] = lambda: None) -> None:
        """Schedule until every pod is bound or waits on a verdict that still holds."""
        while True:
            self.step(timeout_s=0.05)
            tick()
            if self.busy() or not self.dispatcher.idle():
                continue
            self.ingest()
            if not self.dispatcher.idle():
                continue
            if not self.dispatcher.skip_backoff():
                return

    def step(self, timeout_s: float) -> None:
        """One turn: take in new pods, feed shards, complete whatever answers arrived."""
        with self.recovery.surviving():
            self.ingest()
            self.feed()
            if self.metrics:
                self.metrics.maybe_sample(self.dispatcher)
            if self.profiler:
                self.profiler.poll()
            if self.explainer:
                self.explainer.poll(self.dispatcher, self.bound_pods, self.pipelines.in_flight)
            if not self.busy():
                return
            self.pipelines.restart_overdue()
            waiting = [*self.pipelines.out, *self.commits.out]
            ready, _ = ray.wait(waiting, num_returns=1, timeout=timeout_s)
            for ref in ready:
                if ref in self.commits.out:
                    job, outcomes = self.commits.take(ref)
                    self._apply_outcomes(job.batch_id, outcomes, job.decided)
                else:
                    self._answered(*self.pipelines.take(ref))

    def ingest(self) -> None:
        """Take in what changed in the cluster: nodes first, so that new pods can use them.
        A store failure meanwhile may have lost some of it: the store is built again."""
        with self.recovery.surviving(rebuild=True):
            self.intake.take()

    def feed(self) -> None:
        """Top up every shard's pipeline with batches from the active queue."""
        for shard in range(len(self.pipelines.shards)):
            while self.pipelines.has_room(shard):
                batch = self.dispatcher.next_batch(shard, self.settings.pods_per_batch)
                if batch is None:
                    break
                if self.on_stage:
                    sent = [key for unit in batch.units for key, _ in unit.pods]
                    self.on_stage("sent", sent, time.perf_counter())
                if self.metrics:
                    self.metrics.sent(batch.batch_id, sum(len(u.pods) for u in batch.units))
                self.pipelines.send(shard, batch)

    def busy(self) -> bool:
        """A shard or a binder actor has work out."""
        return bool(self.pipelines.out or self.commits.out)

    def add_running(self, pods: list[Pod]) -> None:
        """Pods the cluster already runs, committed to the store by the caller."""
        self.intake.add_running(pods)

    def _unit_pods(self, key: str) -> list[Pod]:
        """A unit's pods, as the dispatcher holds them."""
        unit = self.dispatcher.units.get(key)
        return unit.pods if unit is not None else []

    def round_trips(self) -> int:
        """Calls made to Redis so far: the driver's, the shards' (as their results say)
        and the binder actors' (one script call per batch)."""
        actors = sum(self.commits.by_binder[1:])
        return self.store.round_trips + self.dispatcher.stats.shard_round_trips + actors

    def _answered(self, sent: Sent, result: ShardResult | None) -> None:
        """A shard's answer: its placements committed, the rest back to the queue."""
        lost = result is None
        if result is None:  # no decision came back: the batch's units go back to the queue
            result = ShardResult(sent.shard, sent.batch_id, 0, [])
            self.recovery.notice_lost_store()
        reading = self._judged(result)
        if lost:
            self.faults.fault_retries += sum(len(u.pods) for u in reading.dropped)
        asks = self.dispatcher.take_preemption_asks()
        if asks:
            with self.recovery.surviving():  # the batch's placed units are settled below
                self.eviction.run(asks)
        if not reading.placed:
            return
        decided = time.perf_counter()
        placed, held = self.reservations.take_placed(reading.placed)
        outcomes = self.commits.route(
            sent.batch_id, reading.classes, placed, result.epoch, decided, held
        )
        if outcomes is not None:
            self._apply_outcomes(sent.batch_id, outcomes, decided)

    def _judged(self, result: ShardResult) -> Reading:
        """The dispatcher's reading of an answer; the units it now counts as failed once
        more (not a late answer it ignored) are reported with the reason it kept."""
        reading = self.dispatcher.on_result(result)
        if reading.failed:
            self.cluster.report_unschedulable(
                [
                    (p.key, "Unschedulable", unit.reason)
                    for unit in reading.failed
                    for p in unit.pods
                ]
            )
        if self.metrics:
            self.metrics.answered(result, reading.no_node, settled=not reading.placed)
        return reading

    def _apply_outcomes(self, batch_id: int, outcomes: list[UnitOutcome], decided: float) -> None:
        placed = self.reservations.without_reservations(
            self.dispatcher.on_outcomes(batch_id, outcomes)
        )
        for b in placed:
            self.bound_pods.add(b.pod, b.node)
        if self.metrics:
            binder = self.binder
            self.metrics.batch_finished(
                batch_id, outcomes, placed, decided, binder.committed_at, binder.bind_s
            )
        bound = [b.pod.key for b in placed]
        if self.on_stage and bound:
            self.on_stage("decided", bound, decided)
            self.on_stage("committed", bound, self.binder.committed_at)
        self.on_bound(bound)
