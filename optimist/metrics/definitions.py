"""What the platform serves as metrics: every family's name, help, labels and buckets.

kube-scheduler's under their own names (its `pkg/scheduler/metrics/metrics.go`),
optimist's own beside them, in one registry (`SchedulerMetrics`). Names, labels
and buckets follow kube-scheduler v1.30 where it has the metric. Where optimist
differs: a conflict (a placement the store refused) is not a scheduling
attempt's end, the unit is tried again at once, so it is counted in
`optimist_conflicts_total`, not as an attempt. What feeds them is
`optimist.metrics.recorder`; what serves them, `optimist.metrics.server`.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeHistogramMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from cluster.histogram import EXTENSION_POINT_BUCKETS, PLUGIN_BUCKETS, Histograms, exponential

ATTEMPT_BUCKETS = exponential(0.001, 2, 15)  # scheduling_attempt_duration_seconds
SLI_BUCKETS = exponential(0.01, 2, 20)  # pod_scheduling_sli_duration_seconds
ATTEMPTS_BUCKETS = exponential(1, 2, 5)  # pod_scheduling_attempts
VICTIMS_BUCKETS = exponential(1, 2, 7)  # preemption_victims
STAGE_BUCKETS = exponential(0.001, 2, 18)  # optimist_pod_stage_duration_seconds
BATCH_BUCKETS = exponential(1, 2, 12)  # pods per batch
AGE_BUCKETS = exponential(0.01, 2, 20)  # optimist_pending_pod_age_seconds

QUEUES = ("active", "backoff", "unschedulable", "gated")
# A pod's way to bound, stage by stage: entered the queue, sent to a shard (its last
# attempt), placement decided, committed in the store, bound in the cluster.
STAGES = ("queued_to_sent", "sent_to_decided", "decided_to_committed", "committed_to_bound")


@dataclass(slots=True)
class QueueSample:
    """What the dispatcher's books say now, as the loop last read them."""

    pending: dict[str, int] = field(default_factory=lambda: dict.fromkeys(QUEUES, 0))
    # per queue: how many pods still waiting there are at most each AGE_BUCKETS bound
    # old (not cumulative), and, last, how many are older than all of them
    ages: dict[str, list[int]] = field(default_factory=dict)
    age_sums: dict[str, float] = field(default_factory=dict)  # per queue: their ages together
    # quota -> resource -> (used, runtime quota)
    quotas: dict[str, dict[str, tuple[int, int]]] = field(default_factory=dict)
    # (queue, event) -> pods put there so far (the dispatcher counts them)
    incoming: dict[tuple[str, str], int] = field(default_factory=dict)
    # where ("shard", "commit") -> units placed in part and undone there so far
    rollbacks: dict[str, int] = field(default_factory=dict)
    # (plugin, profile) -> pods whose last attempt that filter rejected nodes in
    unschedulable: dict[tuple[str, str], int] = field(default_factory=dict)


@dataclass(slots=True)
class ApiSample:
    """What the Kubernetes adapter counts, read at each scrape (`optimist run` only)."""

    retries: int = 0  # requests retried after a 429, a 5xx or a broken connection
    reports_dropped: int = 0  # events and status writes dropped: the API could not keep up
    relists: dict[str, int] = field(default_factory=dict)  # resource -> lists after a 410
    # (profile, reason) -> pods of ours a kubelet turned away after their binding
    kubelet_rejections: dict[tuple[str, str], int] = field(default_factory=dict)
    left_out: dict[str, int] = field(default_factory=dict)  # kind -> objects left out now
    leading: bool = False


class _Api:
    """The adapter's counters, read from it at each scrape (cheap: a few integers)."""

    def __init__(self) -> None:
        self.read: Callable[[], ApiSample] | None = None

    def describe(self) -> Iterator[Metric]:
        """Its families' names, for a scrape that asks for some by name (`name[]`)."""
        return self._families(ApiSample())

    def collect(self) -> Iterator[Metric]:
        if self.read is None:
            return iter(())
        return self._families(self.read())

    @staticmethod
    def _families(sample: ApiSample) -> Iterator[Metric]:
        yield CounterMetricFamily(
            "optimist_api_retries",
            "API requests retried after a 429, a 5xx or a broken connection.",
            value=sample.retries,
        )
        yield CounterMetricFamily(
            "optimist_api_reports_dropped",
            "Events and status writes dropped because the API could not keep up.",
            value=sample.reports_dropped,
        )
        yield _family(
            CounterMetricFamily,
            "optimist_api_relists",
            "Fresh lists after 410 Gone (a watch resumed too late), by resource.",
            ["resource"],
            {(resource,): count for resource, count in sample.relists.items()},
        )
        yield _family(
            CounterMetricFamily,
            "optimist_kubelet_rejections",
            "Pods of optimist's that a kubelet turned away after their binding (OutOfcpu...): "
            "another scheduler promised the same room.",
            ["profile", "reason"],
            sample.kubelet_rejections,
        )
        yield _family(
            GaugeMetricFamily,
            "optimist_objects_left_out",
            "Objects the API server holds that optimist cannot read and leaves out of "
            "scheduling (an InvalidObject event on each says why), by kind.",
            ["kind"],
            {(kind,): count for kind, count in sample.left_out.items()},
        )
        yield GaugeMetricFamily(
            "optimist_leader", "1 while this replica holds the lease.", value=int(sample.leading)
        )


class _Sampled:
    """A collector of the latest QueueSample: pending pods, their ages, quota use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sample = QueueSample()

    def set(self, sample: QueueSample) -> None:
        with self._lock:
            self._sample = sample

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            sample = self._sample
        pending = GaugeMetricFamily(
            "scheduler_pending_pods", "Number of pending pods, by the queue type.", labels=["queue"]
        )
        for queue in QUEUES:
            pending.add_metric([queue], sample.pending.get(queue, 0))
        yield pending
        ages = GaugeHistogramMetricFamily(
            "optimist_pending_pod_age_seconds",
            "Age of the pods still waiting, by queue (from the dispatcher's books).",
            labels=["queue"],
        )
        for queue in QUEUES:
            counts = sample.ages.get(queue) or [0] * (len(AGE_BUCKETS) + 1)
            ages.add_metric(
                [queue], _cumulative(counts, AGE_BUCKETS), sample.age_sums.get(queue, 0.0)
            )
        yield ages
        used = GaugeMetricFamily(
            "optimist_quota_used",
            "What a quota's pods use, by resource.",
            labels=["quota", "resource"],
        )
        runtime = GaugeMetricFamily(
            "optimist_quota_runtime",
            "What a quota may use now (min, plus its share of what others lend).",
            labels=["quota", "resource"],
        )
        for quota, resources in sample.quotas.items():
            for resource, (in_use, allowed) in resources.items():
                used.add_metric([quota, resource], in_use)
                runtime.add_metric([quota, resource], allowed)
        yield used
        yield runtime
        yield _family(
            CounterMetricFamily,
            "scheduler_queue_incoming_pods",
            "Number of pods added to scheduling queues by event and queue type.",
            ["queue", "event"],
            sample.incoming,
        )
        yield _family(
            CounterMetricFamily,
            "optimist_unit_rollbacks",
            "Units placed in part and undone: in a shard's table, or by the store at commit.",
            ["where"],
            {(where,): units for where, units in sample.rollbacks.items()},
        )
        yield _family(
            GaugeMetricFamily,
            "scheduler_unschedulable_pods",
            "Unschedulable pods by the filters that rejected nodes for them (a pod counts "
            "for each).",
            ["plugin", "profile"],
            sample.unschedulable,
        )


_Labels = TypeVar("_Labels", bound=tuple[str, ...])  # one series' label values


def _family(
    kind: type[CounterMetricFamily] | type[GaugeMetricFamily],
    name: str,
    doc: str,
    labels: list[str],
    values: Mapping[_Labels, float],
) -> Metric:
    """A counter or gauge family with a series per key of `values`, in key order."""
    family = kind(name, doc, labels=labels)
    for key, value in sorted(values.items()):
        family.add_metric(list(key), value)
    return family


def _cumulative(counts: Sequence[int], bounds: Sequence[float]) -> list[tuple[str, float]]:
    """Counts per bucket as a histogram exposes them: cumulative per upper bound, +Inf last."""
    out, total = [], 0
    for bound, count in zip([*map(float, bounds), math.inf], counts, strict=True):
        total += count
        out.append(("+Inf" if bound == math.inf else repr(bound), float(total)))
    return out


class Distribution:
    """A histogram that takes many equal observations at once (`observe(value, count)`):
    a batch's pods share most of their stage times, so the loop observes those once per
    batch. Exposed as an ordinary Prometheus histogram."""

    def __init__(
        self, name: str, doc: str, labels: Sequence[str], buckets: Sequence[float]
    ) -> None:
        self.name, self.doc, self.labels = name, doc, list(labels)
        self._lock = threading.Lock()  # held while a series is added, and by a scrape
        self._histograms = Histograms(buckets)

    @property
    def buckets(self) -> list[float]:
        return self._histograms.buckets

    def observe(self, labels: tuple[str, ...], value: float, count: int = 1) -> None:
        """From the loop's thread only. A scrape in between may see a bucket's count a
        step ahead of the sum: one observation's skew, gone at the next scrape."""
        if labels in self._histograms.series:
            self._histograms.observe(labels, value, count)
            return
        with self._lock:
            self._histograms.observe(labels, value, count)

    def merge(self, labels: Sequence[str], counts: Sequence[int], total: float) -> None:
        """Observations a shard made (`cluster.histogram`), from the loop's thread only."""
        key = tuple(labels)
        if len(key) != len(self.labels):
            raise ValueError(f"{self.name}: labels {key} for {self.labels}")
        if key in self._histograms.series:
            self._histograms.merge(key, counts, total)
            return
        with self._lock:
            self._histograms.merge(key, counts, total)

    def collect(self) -> Iterator[Metric]:
        family = HistogramMetricFamily(self.name, self.doc, labels=self.labels)
        with self._lock:
            series = [(k, list(c), t) for k, c, t in self._histograms]
        for labels, counts, total in series:
            family.add_metric(list(labels), _cumulative(counts, self.buckets), total)
        yield family


class SchedulerMetrics:
    """Every metric the platform serves, in one registry."""

    def __init__(self) -> None:
        # kube-scheduler serves no `_created` series
        disable_created_metrics()  # type: ignore[no-untyped-call]  # prometheus_client leaves it unannotated (checked only under --strict)
        # the collectors of our own make tell their names by collecting once (a scrape may
        # ask for some by name, `name[]`)
        self.registry = r = CollectorRegistry(auto_describe=True)
        self.attempts, self.attempt_duration, self.sli_duration, self.pod_attempts = (
            _attempt_families(r)
        )
        self.preemption_attempts, self.preemption_victims = _preemption_families(r)
        self.shard_pods, self.shard_busy, self.versions_behind, self.syncs, self.batch_pods = (
            _shard_families(r)
        )
        binder = _binder_families(r)
        self.conflicts, self.commit_duration, self.commit_pods, self.bind_errors = binder
        self.gang_bound, self.stages = _pod_stage_families(r)
        self.extension_points, self.plugin_duration = _framework_families()
        for collector in (
            self.attempt_duration,
            self.sli_duration,
            self.pod_attempts,
            self.stages,
            self.extension_points,
            self.plugin_duration,
        ):
            r.register(collector)
        self._sampled = _Sampled()
        r.register(self._sampled)
        self._api = _Api()
        r.register(self._api)

    def watch_api(self, read: Callable[[], ApiSample] | None) -> None:
        """Serve the Kubernetes adapter's counters, as `read` gives them (None: stop)."""
        self._api.read = read

    def sample(self, sample: QueueSample) -> None:
        self._sampled.set(sample)


# Each area's families: the counters and histograms registered in `r` as they are made;
# the Distributions returned for SchedulerMetrics to register after them, in its order.


def _attempt_families(
    r: CollectorRegistry,
) -> tuple[Counter, Distribution, Distribution, Distribution]:
    """kube-scheduler's attempts: their results and latency, and a pod's way to bound."""
    attempts = Counter(
        "scheduler_schedule_attempts",
        "Number of attempts to schedule pods, by the result.",
        ["result", "profile"],
        registry=r,
    )
    attempt_duration = Distribution(
        "scheduler_scheduling_attempt_duration_seconds",
        "Scheduling attempt latency in seconds (scheduling algorithm + binding).",
        ["result", "profile"],
        ATTEMPT_BUCKETS,
    )
    sli_duration = Distribution(
        "scheduler_pod_scheduling_sli_duration_seconds",
        "E2e latency for a pod being scheduled, from the time it enters the queue.",
        ["attempts"],
        SLI_BUCKETS,
    )
    pod_attempts = Distribution(
        "scheduler_pod_scheduling_attempts",
        "Number of attempts to successfully schedule a pod.",
        [],
        ATTEMPTS_BUCKETS,
    )
    return attempts, attempt_duration, sli_duration, pod_attempts


def _preemption_families(r: CollectorRegistry) -> tuple[Counter, Histogram]:
    """kube-scheduler's preemption: attempts, and the victims each chose."""
    attempts = Counter("scheduler_preemption_attempts", "Total preemption attempts.", registry=r)
    victims = Histogram(
        "scheduler_preemption_victims",
        "Number of selected preemption victims.",
        buckets=VICTIMS_BUCKETS,
        registry=r,
    )
    return attempts, victims


def _shard_families(
    r: CollectorRegistry,
) -> tuple[Counter, Histogram, Histogram, Counter, Histogram]:
    """The shards: what they decided, their time on a batch, how far behind the store
    they were and how they caught up, and the batches they were sent."""
    shard_pods = Counter(
        "optimist_shard_pods",
        "Pods a shard decided on (placed, or found no node for).",
        ["shard"],
        registry=r,
    )
    shard_busy = Histogram(
        "optimist_shard_batch_duration_seconds",
        "A shard's time on one batch, by phase: syncing its table, deciding.",
        ["shard", "phase"],
        buckets=ATTEMPT_BUCKETS,
        registry=r,
    )
    versions_behind = Histogram(
        "optimist_shard_snapshot_versions_behind",
        "Store versions a shard's copy was behind when a batch came: what its sync caught up.",
        ["shard"],
        buckets=exponential(1, 2, 16),
        registry=r,
    )
    syncs = Counter(
        "optimist_shard_syncs",
        "A shard's syncs before a batch, by what it read: the store's commit log, or "
        "every changed node (something besides commits changed, or it was far behind).",
        ["shard", "source"],
        registry=r,
    )
    batch_pods = Histogram(
        "optimist_batch_pods",
        "Pods per batch sent to a shard.",
        buckets=BATCH_BUCKETS,
        registry=r,
    )
    return shard_pods, shard_busy, versions_behind, syncs, batch_pods


def _binder_families(r: CollectorRegistry) -> tuple[Counter, Histogram, Histogram, Counter]:
    """The binder: placements the store refused, commits' time and size, bindings the
    cluster refused."""
    conflicts = Counter(
        "optimist_conflicts",
        "Placements the store refused (the unit is tried again), by the reason's kind and "
        "the node partition of the node it names ('all' without partitions, '' for none).",
        ["reason", "partition"],
        registry=r,
    )
    commit_duration = Histogram(
        "optimist_binder_commit_duration_seconds",
        "From a shard's answer to its units committed and bound.",
        buckets=ATTEMPT_BUCKETS,
        registry=r,
    )
    commit_pods = Histogram(
        "optimist_binder_commit_pods",
        "Pods per commit to the store.",
        buckets=BATCH_BUCKETS,
        registry=r,
    )
    bind_errors = Counter("optimist_bind_errors", "Bindings the cluster refused.", registry=r)
    return conflicts, commit_duration, commit_pods, bind_errors


def _pod_stage_families(r: CollectorRegistry) -> tuple[Histogram, Distribution]:
    """A bound pod's time in each stage of its way (`STAGES`), and a gang's."""
    gang_bound = Histogram(
        "optimist_gang_bound_duration_seconds",
        "A gang's time from complete (minMember pods there) to bound.",
        buckets=SLI_BUCKETS,
        registry=r,
    )
    stages = Distribution(
        "optimist_pod_stage_duration_seconds",
        "A bound pod's time in each stage on its way: queued, sent, decided, committed, bound.",
        ["stage"],
        STAGE_BUCKETS,
    )
    return gang_bound, stages


def _framework_families() -> tuple[Distribution, Distribution]:
    """kube-scheduler's framework: extension points and plugins, as the shards time them."""
    extension_points = Distribution(
        "scheduler_framework_extension_point_duration_seconds",
        "Latency for running all plugins of a specific extension point (a shard's time on "
        "a unit, shared out among its pods).",
        ["extension_point", "status", "profile"],
        EXTENSION_POINT_BUCKETS,
    )
    plugin_duration = Distribution(
        "scheduler_plugin_execution_duration_seconds",
        "Duration for running a plugin at a specific extension point (one call over a set "
        "of nodes; sampled).",
        ["plugin", "extension_point", "status"],
        PLUGIN_BUCKETS,
    )
    return extension_points, plugin_duration
