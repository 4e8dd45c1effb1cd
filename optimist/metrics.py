"""The platform's metrics: kube-scheduler's under their own names, and optimist's own.

One registry serves the whole platform. The control loop feeds it as work
goes by (shards' timings travel back inside their results, so nothing lives
in a shard process that a restart could lose); what describes the queue now
(pending pods, the age of those still waiting, quota use) is sampled from
the dispatcher's own books by the loop, at most once a second, and served
from that sample, so a scrape never reads the books while the loop changes
them.

Names, labels and buckets follow kube-scheduler v1.30 where it has the
metric. Where optimist differs: a conflict (a placement the store refused)
is not a scheduling attempt's end, the unit is tried again at once, so it is
counted in `optimist_conflicts_total`, not as an attempt.
"""

from __future__ import annotations

import bisect
import ipaddress
import json
import math
import re
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, TypeVar
from wsgiref.simple_server import WSGIRequestHandler, make_server

import yaml
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeHistogramMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from cluster.histogram import EXTENSION_POINT_BUCKETS, PLUGIN_BUCKETS, Histograms, exponential
from cluster.lifecycle import PodState
from cluster.messages import Conflict, ShardResult, Status, UnitOutcome
from cluster.partitions import partition_of
from dispatcher.dispatcher import Bound, Dispatcher
from optimist.explain import Explainer, ExplainError
from optimist.profiling import Profiler, ProfilingError

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
    leading: bool = False


class _Api:
    """The adapter's counters, read from it at each scrape (cheap: a few integers)."""

    def __init__(self) -> None:
        self.read: Callable[[], ApiSample] | None = None

    def collect(self) -> Iterator[Metric]:
        if self.read is None:
            return
        sample = self.read()
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
        disable_created_metrics()  # kube-scheduler serves no `_created` series
        self.registry = CollectorRegistry()
        r = self.registry
        self.attempts = Counter(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result.",
            ["result", "profile"],
            registry=r,
        )
        self.attempt_duration = Distribution(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding).",
            ["result", "profile"],
            ATTEMPT_BUCKETS,
        )
        self.sli_duration = Distribution(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time it enters the queue.",
            ["attempts"],
            SLI_BUCKETS,
        )
        self.pod_attempts = Distribution(
            "scheduler_pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            [],
            ATTEMPTS_BUCKETS,
        )
        self.preemption_attempts = Counter(
            "scheduler_preemption_attempts", "Total preemption attempts.", registry=r
        )
        self.preemption_victims = Histogram(
            "scheduler_preemption_victims",
            "Number of selected preemption victims.",
            buckets=VICTIMS_BUCKETS,
            registry=r,
        )
        self.shard_pods = Counter(
            "optimist_shard_pods",
            "Pods a shard decided on (placed, or found no node for).",
            ["shard"],
            registry=r,
        )
        self.shard_busy = Histogram(
            "optimist_shard_batch_duration_seconds",
            "A shard's time on one batch, by phase: syncing its table, deciding.",
            ["shard", "phase"],
            buckets=ATTEMPT_BUCKETS,
            registry=r,
        )
        self.versions_behind = Histogram(
            "optimist_shard_snapshot_versions_behind",
            "Store versions a shard's copy was behind when a batch came: what its sync caught up.",
            ["shard"],
            buckets=exponential(1, 2, 16),
            registry=r,
        )
        self.syncs = Counter(
            "optimist_shard_syncs",
            "A shard's syncs before a batch, by what it read: the store's commit log, or "
            "every changed node (something besides commits changed, or it was far behind).",
            ["shard", "source"],
            registry=r,
        )
        self.batch_pods = Histogram(
            "optimist_batch_pods",
            "Pods per batch sent to a shard.",
            buckets=BATCH_BUCKETS,
            registry=r,
        )
        self.conflicts = Counter(
            "optimist_conflicts",
            "Placements the store refused (the unit is tried again), by the reason's kind and "
            "the node partition of the node it names ('all' without partitions, '' for none).",
            ["reason", "partition"],
            registry=r,
        )
        self.commit_duration = Histogram(
            "optimist_binder_commit_duration_seconds",
            "From a shard's answer to its units committed and bound.",
            buckets=ATTEMPT_BUCKETS,
            registry=r,
        )
        self.commit_pods = Histogram(
            "optimist_binder_commit_pods",
            "Pods per commit to the store.",
            buckets=BATCH_BUCKETS,
            registry=r,
        )
        self.bind_errors = Counter(
            "optimist_bind_errors", "Bindings the cluster refused.", registry=r
        )
        self.gang_bound = Histogram(
            "optimist_gang_bound_duration_seconds",
            "A gang's time from complete (minMember pods there) to bound.",
            buckets=SLI_BUCKETS,
            registry=r,
        )
        self.stages = Distribution(
            "optimist_pod_stage_duration_seconds",
            "A bound pod's time in each stage on its way: queued, sent, decided, committed, bound.",
            ["stage"],
            STAGE_BUCKETS,
        )
        self.extension_points = Distribution(
            "scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point (a shard's time on "
            "a unit, shared out among its pods).",
            ["extension_point", "status", "profile"],
            EXTENSION_POINT_BUCKETS,
        )
        self.plugin_duration = Distribution(
            "scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point (one call over a set "
            "of nodes; sampled).",
            ["plugin", "extension_point", "status"],
            PLUGIN_BUCKETS,
        )
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
        self, metrics: SchedulerMetrics, sample_every_s: float = 1.0, partitions: int = 0
    ) -> None:
        self.metrics = metrics
        self.partitions = partitions
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
        where = [str(p) for p in range(self.partitions)] if self.partitions else ["all"]
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

    def settled(
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
                where = _partition(outcome.detail, self.partitions)
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


def _partition(detail: str, partitions: int) -> str:
    """The partition of the node a conflict's reason names: where shards collide."""
    found = _NODE.search(detail)
    if found is None:
        return ""
    return str(partition_of(found.group(1), partitions)) if partitions else "all"


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
    for unit in dispatcher.units.values():
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
    sample.pending["gated"] += len(dispatcher.gated)
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


class MetricsServer:
    """`/metrics`, `/healthz` and `/readyz` over HTTP, in a thread of the control process.

    `/healthz` answers while the process serves at all; `/readyz` only while `ready()`
    holds (the platform is up and scheduling). With a `profiler`, `/debug/profile` too,
    to clients on loopback only (`optimist.profiling`).
    """

    def __init__(
        self,
        metrics: SchedulerMetrics,
        address: str,
        ready: Callable[[], bool] = lambda: True,
        profiler: Profiler | None = None,
        explainer: Explainer | None = None,
    ) -> None:
        host, _, port = address.rpartition(":")
        self.metrics, self.ready, self.profiler = metrics, ready, profiler
        self.explainer = explainer
        self._server = make_server(
            host.strip("[]") or "127.0.0.1", int(port), self._app, handler_class=_QuietHandler
        )
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def address(self) -> str:
        host, port = self._server.server_address[:2]
        # the bound socket's own address (getsockname): its host is a str, though the
        # stubs allow the bytes an address may be given as
        assert isinstance(host, str)
        return f"{host}:{port}"

    def __enter__(self) -> MetricsServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _app(self, environ: dict[str, Any], start: Callable[..., Any]) -> list[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/debug/profile" and self.profiler is not None:
            status, kind, body = self._profile(environ, self.profiler)
        elif path == "/debug/explain" and self.explainer is not None:
            status, kind, body = self._explain(environ, self.explainer)
        elif path == "/metrics":
            body, kind = generate_latest(self.metrics.registry), CONTENT_TYPE_LATEST
            status = "200 OK"
        elif path == "/healthz":
            body, kind, status = b"ok", "text/plain", "200 OK"
        elif path == "/readyz":
            ok = self.ready()
            body, kind = (b"ok" if ok else b"not ready"), "text/plain"
            status = "200 OK" if ok else "503 Service Unavailable"
        else:
            body, kind, status = b"not found", "text/plain", "404 Not Found"
        start(status, [("Content-Type", kind), ("Content-Length", str(len(body)))])
        return [body]

    @staticmethod
    def _explain(environ: dict[str, Any], explainer: Explainer) -> tuple[str, str, bytes]:
        """`GET ?pod=NAMESPACE/NAME&top=N`: the pod explained (`optimist.explain`), as JSON;
        `POST` a pod manifest (JSON or YAML) for a what-if."""
        if not _loopback(environ):
            return "403 Forbidden", "text/plain", b"explanations are for clients on loopback only"
        query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""))
        given = query.get("top", ["0"])[0]
        if not given.isdigit():
            return "400 Bad Request", "text/plain", f"top: {given!r} is not a count".encode()
        try:
            manifest = None
            if environ.get("REQUEST_METHOD") == "POST":
                manifest = _manifest(environ)
            found = explainer.explain(query.get("pod", [""])[0], manifest, int(given))
        except ExplainError as err:
            return f"{err.status} {HTTPStatus(err.status).phrase}", "text/plain", str(err).encode()
        return "200 OK", "application/json", json.dumps(found.to_json()).encode()

    @staticmethod
    def _profile(environ: dict[str, Any], profiler: Profiler) -> tuple[str, str, bytes]:
        """A pstats file of `?target=` (control, or shard-N) over `?seconds=` (10)."""
        if not _loopback(environ):
            return "403 Forbidden", "text/plain", b"profiles are for clients on loopback only"
        query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""))
        target = query.get("target", ["control"])[0]
        given = query.get("seconds", ["10"])[0]
        try:
            seconds = float(given)
        except ValueError:
            return "400 Bad Request", "text/plain", f"seconds: {given!r} is not a number".encode()
        try:
            stats = profiler.profile(target, seconds)
        except ProfilingError as err:
            return f"{err.status} {HTTPStatus(err.status).phrase}", "text/plain", str(err).encode()
        return "200 OK", "application/octet-stream", stats


def _loopback(environ: dict[str, Any]) -> bool:
    return ipaddress.ip_address(environ.get("REMOTE_ADDR") or "0.0.0.0").is_loopback


_MAX_MANIFEST = 1 << 20


def _manifest(environ: dict[str, Any]) -> Any:
    """A request's body, a pod manifest in JSON or YAML (a 400 if it is neither)."""
    try:
        size = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        size = -1
    if not 0 < size <= _MAX_MANIFEST:
        raise ExplainError(
            400, f"the body must hold a pod manifest of at most {_MAX_MANIFEST} bytes"
        )
    try:
        return yaml.safe_load(environ["wsgi.input"].read(size))
    except yaml.YAMLError as err:
        raise ExplainError(400, f"the body is neither JSON nor YAML: {err}") from None


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes are not logged: one a second would drown everything else."""
