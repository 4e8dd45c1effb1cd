"""optimist against a live cluster: lead, reconcile, then schedule until stopped.

The dispatcher and the binder run in this one control process, so one
leader at a time (a Lease) keeps two from committing the same pods; standbys
wait in `LeaderElector.acquire`, warm where all they run is their own (their
informers, Ray, shards and store follow the cluster, nothing is placed or said
about pods), so that taking the Lease costs no list and no start. Shards are
stateless Ray actors and may be restarted at will. What the store holds may be
older than the cluster (a previous leader died between commit and bind, nodes
went while nobody watched): `reconcile` makes it agree before the first batch
goes out.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from dataclasses import dataclass, field

from cluster.store import Store
from optimist.explain import Explainer
from optimist.kube.adapter import KubernetesAdapter
from optimist.kube.client import KubeClient
from optimist.kube.lease import LeaderElector, LeaseConfig
from optimist.loop import SchedulingLoop
from optimist.metrics.definitions import ApiSample, SchedulerMetrics
from optimist.metrics.recorder import LoopMetrics
from optimist.profiling import Profiler
from optimist.runtime import Platform
from optimist.settings import Settings

log = logging.getLogger(__name__)

ELECTION_QPS, ELECTION_BURST = 5.0, 10  # a renewal every retryPeriod needs far less
# how long an idle loop sleeps when no watch event wakes it: what comes with time alone
# (a backoff ended, a hold expired, an explain or profile asked for, the stop) waits
# that long at most; upstream flushes its backoff queue once a second
IDLE_WAIT_S = 0.1


@dataclass(frozen=True, slots=True)
class Reconciled:
    released_pods: list[str]  # committed in the store, not bound there in the cluster
    removed_nodes: list[str]  # in the store, gone from the cluster


def reconcile(store: Store, adapter: KubernetesAdapter) -> Reconciled:
    """Make the store agree with the cluster after a restart: a pod committed but not
    bound to that node is released (the watch hands it over as pending again, if it
    still is); a node the cluster no longer has leaves the store."""
    bound = adapter.bound_pods()
    stale = sorted(p for p, node in store.committed_pods().items() if bound.get(p) != node)
    if stale:
        store.release(pods=stale)
    gone = sorted(store.node_names() - adapter.node_names())
    if gone:
        store.remove_nodes(gone)
    return Reconciled(stale, gone)


def _keep_warm(
    loop: SchedulingLoop, adapter: KubernetesAdapter, stop: threading.Event, seconds: float
) -> None:
    """A standby's wait between tries for the Lease: what the cluster reports is taken
    in as it comes (into the replica's own store and queue), nothing is placed, and
    nothing is said about pods."""
    deadline = time.monotonic() + seconds
    while not stop.is_set() and (left := deadline - time.monotonic()) > 0:
        loop.ingest()
        adapter.wait_for_events(min(left, IDLE_WAIT_S))


def api_sample(adapter: KubernetesAdapter, lost: threading.Event) -> ApiSample:
    return ApiSample(
        retries=adapter.retries,
        reports_dropped=adapter.reports_dropped,
        relists={n: max(i.lists - 1, 0) for n, i in adapter.informers.items()},
        kubelet_rejections=adapter.kubelet_rejections(),
        left_out=adapter.left_out.by_kind(),
        leading=not lost.is_set(),
    )


@dataclass
class Service:
    settings: Settings
    client: KubeClient
    identity: str
    lease: LeaseConfig | None = None  # None: no leader election (one replica only)
    metrics: SchedulerMetrics | None = None
    profiler: Profiler | None = None
    explainer: Explainer | None = None
    ready: threading.Event = field(default_factory=threading.Event)  # scheduling now
    loop: SchedulingLoop | None = None
    reconciled: Reconciled | None = None

    @property
    def warm_standby(self) -> bool:
        """Whether a standby keeps warm: its informers, Ray, shards and a store of its own
        follow the cluster while it waits for the Lease, so that taking it costs no list
        and no start. Only where all of that is this replica's alone: a given Redis is
        the leader's to write, and shards on a given Ray cluster take the leader's room."""
        return self.settings.private_redis and self.settings.ray_address is None

    def run(self, stop: threading.Event) -> None:
        """Until `stop` is set, or leadership is lost. A warm standby (`warm_standby`)
        follows the cluster while it waits for the Lease; a cold one starts on taking it."""
        elector = None
        if self.lease is not None:
            # a rate limit of its own: a flood of bindings must not make a renewal late
            own = self.client.sibling(ELECTION_QPS, ELECTION_BURST)
            elector = LeaderElector(own, self.identity, self.lease)
        warm = elector is not None and self.warm_standby
        if elector is not None and not warm and not elector.acquire(stop):
            return
        adapter = KubernetesAdapter(
            self.client,
            self.settings.scheduler_names,
            explain_hint=self.settings.explain_hint,
            volume_bind_timeouts=self.settings.volume_bind_timeouts(),
        )
        adapter.reports.quiet = warm
        started = time.monotonic()
        adapter.start()
        listed = time.monotonic()
        log.info("the cluster listed in %.1f s", listed - started)
        try:
            with Platform(self.settings) as platform:
                log.info("Redis, Ray and the shards up in %.1f s", time.monotonic() - listed)
                loop = self._loop(platform, adapter)
                if elector is not None and warm:
                    keep_warm = functools.partial(_keep_warm, loop, adapter, stop)
                    if not elector.acquire(stop, keep_warm):
                        return
                    adapter.reports.quiet = False
                lost = elector.lost if elector is not None else threading.Event()
                self._schedule(platform, adapter, loop, stop, lost)
        finally:
            self.ready.clear()
            if self.metrics is not None:
                self.metrics.watch_api(None)
            if self.profiler is not None:
                self.profiler.detach()
            if self.explainer is not None:
                self.explainer.detach()
            adapter.stop()
            if elector is not None:
                elector.release()

    def _loop(self, platform: Platform, adapter: KubernetesAdapter) -> SchedulingLoop:
        metrics = (
            LoopMetrics(self.metrics, node_partitions=self.settings.node_partition_count)
            if self.metrics
            else None
        )
        return SchedulingLoop(
            platform, adapter, metrics=metrics, profiler=self.profiler, explainer=self.explainer
        )

    def _schedule(
        self,
        platform: Platform,
        adapter: KubernetesAdapter,
        loop: SchedulingLoop,
        stop: threading.Event,
        lost: threading.Event,
    ) -> None:
        """As the leader: make the store agree with the cluster, then schedule until
        stopped or the Lease is lost."""
        if self.metrics is not None:
            self.metrics.watch_api(lambda: api_sample(adapter, lost))
        self.reconciled = reconcile(platform.store, adapter)
        if self.reconciled.released_pods or self.reconciled.removed_nodes:
            log.info(
                "reconciled: %d pods released, %d nodes removed",
                len(self.reconciled.released_pods),
                len(self.reconciled.removed_nodes),
            )
        self.loop = loop
        self.ready.set()
        while not stop.is_set() and not lost.is_set():
            loop.step(timeout_s=0.05)
            if not loop.busy() and loop.dispatcher.idle():
                adapter.wait_for_events(IDLE_WAIT_S)
        # pods whose claims were still being bound were never bound: their room goes
        # back now (a crash leaves it to the next start's reconciling)
        if abandoned := adapter.abandon_prebinds():
            platform.store.release(pods=abandoned)
