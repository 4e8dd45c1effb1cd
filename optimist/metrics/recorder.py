"""What the control loop tells the metrics, as work goes by (`LoopMetrics`).

Shards' timings travel back inside their results, so nothing lives in a shard
process that a restart could lose. What describes the queue now (pending pods,
the age of those still waiting, quota use) is sampled from the dispatcher's own
books by the loop, at most once a second, and served from that sample, so a
scrape never reads the books while the loop changes them.
"""

from __future__ import annotations

import bisect
import re
import time
from collections.abc import Iterable, Sequence

from cluster.lifecycle import PodState
from cluster.messages import Conflict, ShardResult, Status, UnitOutcome
from cluster.node_partitions import node_partition
from dispatcher.answers import Bound
from dispatcher.dispatcher import Dispatcher
from optimist.metrics.definitions import AGE_BUCKETS, QueueSample, SchedulerMetrics


class Ticker:
    """When the loop should sample the books again: at most once per `every_s`, and never
    more than `share` of the time (a sample of a huge queue waits longer)."""

    def __init__(self, every_s: float = 1.0, share: float = 0.05) -> None:
        self.every_s, self.share = every_s, share
        self._next = 0.0

    def due(self) -> bool:
        return time.monotonic() >= self._next

    def took(self, started: float) -> None:
        """A sample begun at `started` (time.monotonic()) is done."""
        now = time.monotonic()
        self._next = now + max(self.every_s, (now - started) / self.share)


class LoopMetrics:
    """What the control loop tells the metrics, step by step (`SchedulingLoop.metrics`).

    `partitions`: the node partitions the shards look at first (0: none), by which
    conflicts are counted."""

    def __init__(
        self, metrics: SchedulerMetrics, sample_every_s: float = 1.0, node_partitions: int = 0
    ) -> None:
        self.metrics = metrics
        self.node_partitions = node_partitions
        self._sent: dict[int, float] = {}  # batch id -> time.monotonic() when sent
        self._ticker = Ticker(sample_every_s)

    def expect(self, profiles: Iterable[str], shards: int) -> None:
        """Serve 0 for the label sets known in advance, before their first event: a rate
        or an alert over a series that is not there yet reads nothing, not 0 (as
        kube-scheduler does for its attempts' results)."""
        m = self.metrics
        for profile in profiles:
            for result in ("scheduled", "unschedulable"):
                m.attempts.labels(result, profile)
        where = [str(p) for p in range(self.node_partitions)] if self.node_partitions else ["all"]
        for kind in Conflict:
            for partition in where:
                m.conflicts.labels(kind, partition)
        for shard in map(str, range(shards)):
            m.shard_pods.labels(shard)
            for source in ("commit_log", "nodes"):
                m.syncs.labels(shard, source)

    def sent(self, batch_id: int, pods: int) -> None:
        self._sent[batch_id] = time.monotonic()
        self.metrics.batch_pods.observe(pods)

    def answered(self, result: ShardResult, profiles: dict[str, str], settled: bool) -> None:
        """A shard's answer: its timings, and the attempts that ended without a node
        (`profiles`: unit -> profile, for those). `settled`: nothing of the batch waits
        for a commit."""
        m, shard = self.metrics, str(result.shard)
        m.shard_busy.labels(shard, "sync").observe(result.sync_s)
        m.shard_busy.labels(shard, "decide").observe(result.decide_s)
        m.versions_behind.labels(shard).observe(result.versions_behind)
        m.syncs.labels(shard, "commit_log" if result.synced_from_log else "nodes").inc()
        m.shard_pods.labels(shard).inc(sum(len(d.placements) or 1 for d in result.decisions))
        for distribution, observed in zip(
            (m.extension_points, m.plugin_duration), result.observed, strict=True
        ):
            for labels, counts, total in observed:
                distribution.merge(labels, counts, total)
        sent = self._sent.pop(result.batch_id, None) if settled else self._sent.get(result.batch_id)
        took = time.monotonic() - sent if sent is not None else 0.0
        failed: dict[str, int] = {}  # profile -> attempts that found no node
        for decision in result.decisions:
            profile = profiles.get(decision.unit)
            if profile is not None and not decision.placed:
                failed[profile] = failed.get(profile, 0) + 1
        for profile, count in failed.items():
            m.attempts.labels("unschedulable", profile).inc(count)
            m.attempt_duration.observe(("unschedulable", profile), took, count)

    def batch_finished(
        self,
        batch_id: int,
        outcomes: Sequence[UnitOutcome],
        bound: Sequence[Bound],
        decided: float,
        committed: float,
        bind_s: float,
    ) -> None:
        """A batch's outcomes: attempts that ended bound or in error, conflicts, the stages
        of every pod bound (`decided` and `committed` as time.perf_counter() read them), and
        the Bind extension point (`bind_s`: the call that bound the batch's pods)."""
        m = self.metrics
        now, perf_now = time.monotonic(), time.perf_counter()
        sent = self._sent.pop(batch_id, now)
        for outcome in outcomes:
            if outcome.conflict is not None:
                where = _partition(outcome.detail, self.node_partitions)
                m.conflicts.labels(outcome.conflict, where).inc()
            elif outcome.status in (Status.BIND_FAILED, Status.PARTLY_BOUND):
                m.bind_errors.inc(len(outcome.unbound) or len(outcome.nodes) or 1)
        pods_committed = sum(len(o.nodes) for o in outcomes if o.status.bound)
        if pods_committed:
            m.commit_pods.observe(pods_committed)
            m.commit_duration.observe(max(perf_now - decided, 0.0))
        if not bound:
            return
        # what the batch's pods share, observed once for all of them
        count = len(bound)
        m.stages.observe(("sent_to_decided",), max(now - sent - (perf_now - decided), 0.0), count)
        m.stages.observe(("decided_to_committed",), max(committed - decided, 0.0), count)
        m.stages.observe(("committed_to_bound",), max(perf_now - committed, 0.0), count)
        profiles: dict[str, int] = {}
        gangs: dict[str, float] = {}  # gang -> when it was complete
        for b in bound:
            if b.gang:
                gangs[b.gang] = b.queued_at
            profile = b.pod.spec.profile
            profiles[profile] = profiles.get(profile, 0) + 1
            m.sli_duration.observe((str(b.attempts),), now - b.queued_at)
            m.pod_attempts.observe((), b.attempts)
            m.stages.observe(("queued_to_sent",), max(sent - b.queued_at, 0.0))
        share = bind_s / max(pods_committed, 1)  # failed bindings: optimist_bind_errors
        for profile, pods in profiles.items():
            m.attempts.labels("scheduled", profile).inc(pods)
            m.attempt_duration.observe(("scheduled", profile), now - sent, pods)
            m.extension_points.observe(("Bind", "Success", profile), share, pods)
        for complete in gangs.values():
            m.gang_bound.observe(now - complete)

    def preempted(self, victims: int) -> None:
        self.metrics.preemption_attempts.inc()
        self.metrics.preemption_victims.observe(victims)

    def post_filter(self, seconds: float, tried: Sequence[tuple[str, int, bool]]) -> None:
        """The PostFilter extension point (preemption's dry runs): `seconds` spent for
        `tried`, (profile, pods, victims found) per unit, shared out among their pods."""
        pods = sum(count for _, count, _ in tried)
        if not pods:
            return
        share = seconds / pods
        for profile, count, found in tried:
            status = "Success" if found else "Unschedulable"
            self.metrics.extension_points.observe(("PostFilter", status, profile), share, count)

    def maybe_sample(self, dispatcher: Dispatcher, *, now: bool = False) -> None:
        """Read the dispatcher's books, at most once per `sample_every_s` (or `now`: at
        the end of a run, for the values a last scrape should find)."""
        if self._ticker.due() or now:
            started = time.monotonic()
            self.metrics.sample(queue_sample(dispatcher))
            self._ticker.took(started)


_NODE = re.compile(r"\bnode (\S+?)(?::|\s|$)")


def _partition(detail: str, node_partitions: int) -> str:
    """The partition of the node a conflict's reason names: where shards collide."""
    found = _NODE.search(detail)
    if found is None:
        return ""
    return str(node_partition(found.group(1), node_partitions)) if node_partitions else "all"


# The dispatcher's states, as kube-scheduler names its queues; in flight or awaiting
# commit, a pod is in no queue.
_QUEUE_OF = {
    PodState.ACTIVE: "active",
    PodState.BACKOFF: "backoff",
    PodState.UNSCHEDULABLE: "unschedulable",
    PodState.PREEMPTING: "unschedulable",
    PodState.QUOTA_WAIT: "gated",  # held back before any attempt, as a gate does
}


def queue_sample(dispatcher: Dispatcher) -> QueueSample:
    """Pending pods and their ages by queue, and quota use, from the dispatcher's books."""
    sample = QueueSample()
    now = dispatcher.clock()
    for unit in dispatcher.held_units():
        queue = _QUEUE_OF.get(unit.state)
        if queue is None:
            continue
        sample.pending[queue] += len(unit.pods)
        if queue in ("unschedulable", "backoff"):
            profile = unit.pods[0].spec.profile
            for plugin in unit.plugins:
                key = (plugin, profile)
                sample.unschedulable[key] = sample.unschedulable.get(key, 0) + len(unit.pods)
        age, pods = now - unit.since, len(unit.pods)
        counts = sample.ages.setdefault(queue, [0] * (len(AGE_BUCKETS) + 1))
        counts[bisect.bisect_left(AGE_BUCKETS, age)] += pods
        sample.age_sums[queue] = sample.age_sums.get(queue, 0.0) + age * pods
    sample.pending["gated"] += dispatcher.gated_pods
    stats = dispatcher.stats
    sample.incoming = dict(stats.incoming)
    sample.rollbacks = {"shard": stats.shard_rollbacks, "commit": stats.commit_rollbacks}
    quotas = dispatcher.quotas
    if quotas is not None:
        runtime = quotas.runtime()
        for name, node in quotas.nodes.items():
            sample.quotas[name] = {
                r: (int(node.used[r]), int(allowed)) for r, allowed in runtime[name].items()
            }
    return sample
