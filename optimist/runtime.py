"""The runtime: starts Redis and Ray, places the shard actors, and runs the control loop.

The control process hosts the dispatcher and the binder; shards are Ray
actors, and so are the binder actors when there are several binders. The
loop keeps every shard's pipeline full (several batches in flight each, to
hide the round trip), and as each answer arrives hands the placed units to
a binder (the driver's, or an actor, batch by batch) and the outcomes back
to the dispatcher.
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from functools import partial

import numpy as np
import ray
from ray._private import ray_constants
from ray.exceptions import ActorUnavailableError, RayError

from binder.actor import BinderActor
from binder.binder import Binder
from binder.preemption import Plan, PreemptionPlanner, Preemptor, reclaiming
from cluster import collector
from cluster.adapter import ClusterAdapter
from cluster.disruption import DisruptionBudgets
from cluster.errors import InvalidObject
from cluster.events import ASSIGNED_POD_DELETE, NODE_ADD, NODE_DELETE
from cluster.inventory import BoundPods
from cluster.messages import CommitReply, Decision, MalformedMessage, ShardResult, UnitOutcome
from cluster.objects import Pod, SchedulingSpec
from cluster.quota import QuotaTree
from cluster.redis_server import EmbeddedRedis
from cluster.reservations import Reservations, is_reservation
from cluster.store import STORE_ERRORS, EpochChanged, Hold, Keys, Preempted, open_store
from dispatcher.dispatcher import Dispatcher, PreemptionAsk
from dispatcher.queue import Backoff
from optimist.config import Settings
from optimist.lean_ray import SYSTEM_CONFIG, lean_start
from optimist.logs import unit_key
from optimist.metrics import LoopMetrics
from optimist.profiling import Profiler
from shards.actor import ShardActor

log = logging.getLogger(__name__)

_OBJECT_STORE_BYTES = 256 * 1024 * 1024  # batches are small; Ray's default takes 30% of RAM


class RayStartError(RuntimeError):
    """Ray could not be started or joined; the message says what to do."""


def init_ray(address: str | None) -> bool:
    """Join `address`, or start a local Ray bound to loopback; True if we started it."""
    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        if address:
            # a Ray this machine started on loopback is joined as it was started
            with _single_node() if _loopback(address) else nullcontext():
                ray.init(address=address, logging_level=logging.WARNING)
        else:
            with _single_node():
                _start_local()
    except Exception as e:
        ray.shutdown()
        what = f"could not join Ray at {address}" if address else "could not start a local Ray"
        hint = (
            "check that the address is a running Ray's (ray status)"
            if address
            else "check free memory and /tmp/ray, or join a running one with --ray-address"
        )
        reason = " ".join(str(e).split()) or type(e).__name__
        raise RayStartError(f"{what} ({reason}); {hint}") from e
    return True


def _start_local() -> None:
    """A local Ray, started lean (`optimist.lean_ray`: 0.6 s against 4.7); plainly if
    that fails, as it may with a Ray whose internals moved. Always a new one
    (`address="local"`): without it Ray joins whatever /tmp/ray/ray_current_cluster
    or a running GCS names, a cluster that may be dead or another program's."""
    options = dict(
        address="local",
        _node_ip_address="127.0.0.1",
        include_dashboard=False,
        object_store_memory=_OBJECT_STORE_BYTES,
        logging_level=logging.WARNING,
    )
    try:
        with lean_start():
            ray.init(**options, _system_config=dict(SYSTEM_CONFIG))  # type: ignore[arg-type]
        return
    except Exception as e:  # whatever broke it, a plain start may not have
        log.warning("a lean start of Ray failed (%s); starting it as it is", e)
        ray.shutdown()
    ray.init(**options)  # type: ignore[arg-type]


def _loopback(address: str) -> bool:
    """The addresses Ray would turn into the machine's own, as `_single_node` says."""
    host = address.split("://")[-1].rsplit(":", 1)[0].strip("[]")
    return host in ("127.0.0.1", "localhost", "::1")


@contextmanager
def _single_node() -> Iterator[None]:
    """Ray, believing a cluster may grow, turns 127.0.0.1 into the machine's address, and
    its GCS, raylet and workers then listen on every interface. It keeps to loopback
    when told that this is a single-node Ray (`RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`):
    a constant read when `ray` is imported, and the variable for the processes it
    starts. Both only while the local Ray starts, so that this process may still
    join a cluster later. A process joining such a Ray (at 127.0.0.1) must say so too,
    or it looks for it at the machine's address. tests/optimist/test_ray_loopback.py
    checks the sockets."""
    variable = ray_constants.ENABLE_RAY_CLUSTERS_ENV_VAR
    was, before = os.environ.get(variable), ray_constants.ENABLE_RAY_CLUSTER
    os.environ[variable], ray_constants.ENABLE_RAY_CLUSTER = "0", False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = before
        if was is None:
            del os.environ[variable]
        else:
            os.environ[variable] = was


class Platform:
    """Redis (private or given), Ray, and the shard actors, for as long as the context lasts."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.embedded_redis: EmbeddedRedis | None = None  # the private one, if started
        self.embedded_servers: list[EmbeddedRedis] = []  # each partition's, if split
        self._own_ray = False
        self.shards: list[ray.actor.ActorHandle] = []
        self.binders: list[ray.actor.ActorHandle] = []  # beside the driver's own binder
        self.shard_info: list[dict[str, object]] = []

    def __enter__(self) -> Platform:
        self._thresholds = collector.settle()  # the driver's, for as long as it runs the roles
        try:
            self._start()
        except BaseException:
            self.__exit__()  # what did start stops: no Redis or actor is left behind
            raise
        return self

    def _start(self) -> None:
        s = self.settings
        if s.private_redis:
            for _ in range(s.redis_partitions):
                self.embedded_servers.append(EmbeddedRedis().start())
            self.embedded_redis = self.embedded_servers[0]
        given = [s.redis_url] if s.redis_url else list(s.redis_urls)
        self.redis_urls = given or [e.url for e in self.embedded_servers]
        self.redis_url = self.redis_urls[0]
        self.store = open_store(self.redis_urls, Keys(s.key_prefix))
        self.store.open()
        self._own_ray = init_ray(s.ray_address)
        profiles = [p.to_wire() for p in s.profiles]
        at_shards = _spread(s.shard_resources, s.shards, "shardResources")
        at_binders = _spread(s.binder_resources, s.binders - 1, "binderResources")
        self.shards = [
            ShardActor.options(**at_shards).remote(
                i,
                self.redis_urls,
                s.key_prefix,
                profiles,
                list(s.extenders),
                s.candidates,
                s.seed * 1000 + i,
                s.partitions,
                s.shards,
            )
            for i in range(s.shards)
        ]
        self.binders = [
            BinderActor.options(**at_binders).remote(self.redis_url, s.key_prefix, s.conflict_mode)
            for _ in range(s.binders - 1)
        ]
        self.shard_info = ray.get([shard.info.remote() for shard in self.shards])
        for info in self.shard_info:
            info["ray_nodes"] = [_node(info)]

    def locate_shards(self, timeout_s: float = 10.0) -> None:
        """Where each shard runs now, noted in its info: Ray starts a shard whose node was
        lost on another node, and its `ray_nodes` then names both. A shard whose node was
        lost so lately that Ray has not started it again yet is asked again; one that
        does not answer in time keeps what was known."""
        deadline = time.monotonic() + timeout_s
        waiting = set(range(len(self.shards)))
        while waiting and time.monotonic() < deadline:
            asked = {self.shards[i].info.remote(): i for i in sorted(waiting)}
            left = max(deadline - time.monotonic(), 0.0)
            answered, _ = ray.wait(list(asked), num_returns=len(asked), timeout=left)
            for ref in answered:
                try:
                    now = ray.get(ref)
                except ActorUnavailableError:
                    continue  # its node is going: Ray starts it again elsewhere
                except RayError:
                    now = None  # gone for good: what was known stays
                waiting.discard(asked[ref])
                if now is None:
                    continue
                info = self.shard_info[asked[ref]]
                seen: list[dict[str, object]] = info["ray_nodes"]  # type: ignore[assignment]
                if seen[-1] != _node(now):
                    seen.append(_node(now))
                info.update(now, ray_nodes=seen)
            if waiting:
                time.sleep(0.1)

    def __exit__(self, *exc: object) -> None:
        for actor in self.shards + self.binders:
            ray.kill(actor)
        if self._own_ray:
            ray.shutdown()
        if hasattr(self, "store"):
            self.store.close()
        for server in self.embedded_servers:
            server.stop()
        collector.restore(self._thresholds)


def _node(info: dict[str, object]) -> dict[str, object]:
    return {"id": info["ray_node_id"], "ip": info["ray_node_ip"]}


class PlacementError(RuntimeError):
    """The Ray cluster offers too little of a resource the actors ask for."""


def _spread(resources: dict[str, float], count: int, setting: str) -> dict[str, object]:
    """Options that spread `count` actors over the Ray nodes offering `resources`. A
    resource no node offers is refused now, not left for the actors to wait on; too
    little of one is waited for, as an autoscaler adds the nodes that offer it."""
    offered = ray.cluster_resources()
    for name, amount in resources.items():
        if not count or offered.get(name, 0.0) >= amount * count:
            continue
        have = f"{count} actors asking for {name}={amount:g} each; the Ray cluster offers"
        if not offered.get(name):
            raise PlacementError(
                f"{setting}: {have} none of it (ray start --resources "
                f"'{{\"{name}\": N}}' on the nodes for them)"
            )
        log.warning("%s: %s %g of it: the rest wait for nodes", setting, have, offered[name])
    return {"scheduling_strategy": "SPREAD", "resources": dict(resources)}


@dataclass(frozen=True, slots=True)
class _Committing:
    """A batch out with a binder actor."""

    batch_id: int
    classes: list[SchedulingSpec]
    decisions: list[Decision]
    decided: float  # time.perf_counter() when its shard's answer arrived
    held: list[UnitOutcome]  # the batch's reservations, placed already
    epoch: str  # the node store's epoch it is committed in


_BOUND = ("bound", "partly-bound")  # the outcomes whose pods (but `unbound`) are bound


@dataclass(frozen=True, slots=True)
class _Sent:
    """A batch out with a shard."""

    shard: int
    batch_id: int
    at: float  # time.monotonic() when it was sent


# A pod's stages as the loop sees them, for latency breakdowns: called with the
# stage ("queued", "sent", "decided", "committed"), the pod keys and the
# time.perf_counter() when they reached it; "sent" again on every attempt.
# Bound pods are reported to `on_bound`.
StageHook = Callable[[str, list[str], float], None]


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
    ) -> None:
        s = platform.settings
        self.metrics = metrics
        if metrics:
            metrics.expect(s.scheduler_names, len(platform.shards))
        self.profiler = profiler
        if profiler:
            profiler.attach(platform.shards)
        self.settings = s
        self.shards = platform.shards
        self.cluster = cluster
        self.reservations = Reservations()
        self.bound_pods = BoundPods()  # what preemption may evict
        self.budgets = DisruptionBudgets(self.bound_pods)
        self.preemption = PreemptionPlanner(
            platform.store,
            self.bound_pods,
            np.random.default_rng(s.seed),
            self.budgets.violating,
            reclaiming(lambda: self.dispatcher.quotas),
            {
                p.scheduler_name: (
                    p.args["DefaultPreemption"]["minCandidateNodesPercentage"],
                    p.args["DefaultPreemption"]["minCandidateNodesAbsolute"],
                )
                for p in s.profiles
                if "DefaultPreemption" in p.args
            },
        )
        self._holds_checked = 0.0  # time.time() when expired holds were last freed
        self.dispatcher = Dispatcher(
            Backoff(s.backoff_initial_s, s.backoff_max_s),
            send_manifests=bool(s.extenders),
            max_conflicts=s.max_conflicts,
            partitions=s.partitions,
            quotas=QuotaTree(s.quotas) if s.quotas else None,
            lowest_bound_priority=self.bound_pods.lowest_priority,
            preemptive_profiles=frozenset(self.preemption.candidate_nodes),
        )
        self._allocatable: dict[str, dict[str, int]] = {}  # node -> allocatable, for quotas
        self.store = platform.store
        self.binders = platform.binders
        fenced = bool(self.binders)
        self.binder = Binder(platform.store, cluster, s.profiles, s.conflict_mode, fenced)
        self.on_bound = on_bound
        self.on_stage = on_stage
        self._inflight: dict[ray.ObjectRef, _Sent] = {}  # oldest first
        self._committing: dict[ray.ObjectRef, _Committing] = {}  # at binder actors
        self._per_shard = [0] * len(self.shards)
        self.shard_failures = 0
        self.shard_restarts = 0  # shards killed for answering too late, for Ray to restart
        self.store_outages = 0  # times Redis was away or had lost the store
        self.store_rebuilds: list[float] = []  # seconds each rebuild of the store took
        self._restarting: set[int] = set()  # those shards, until their batches came back
        self.binder_failures = 0
        # pods tried again because a fault voided their attempt (a shard's or a binder's
        # batch lost, a commit in a store lost since) or a store built again woke them
        self.fault_retries = 0
        self.commits_by_binder = [0] * (len(self.binders) + 1)  # batches; 0 is the driver's

    def ingest(self) -> None:
        """Take in what changed in the cluster: nodes first, so that new pods can use them."""
        with self._surviving_the_store(rebuild=True):
            self._ingest()

    def _ingest(self) -> None:
        made, gone = self.cluster.take_node_events()
        if made:
            self.store.put_nodes(made)
            self.dispatcher.on_event(NODE_ADD)
        if gone:
            self.store.remove_nodes(gone)
            self.dispatcher.on_event(NODE_DELETE)
        if made or gone:
            self._allocatable.update((n.name, n.allocatable) for n in made)
            for name in gone:
                self._allocatable.pop(name, None)
            if self.dispatcher.quotas is not None:
                self.dispatcher.set_capacity(self._capacity())
        labelled, unnamed = self.cluster.take_namespace_events()
        if labelled or unnamed:
            self.store.put_namespaces(labelled, unnamed)
        for quota in self.cluster.take_new_quotas():
            try:
                self.dispatcher.add_quota(quota, self._capacity(), self.bound_pods)
            except InvalidObject as err:  # the tree stays as it was; the rest goes on
                log.warning("quota %s left out: %s", quota.name, err)
        running = self.cluster.take_running_pods()
        if running:
            self._count_running(running)
        deleted = self.cluster.take_deleted_pods()
        if deleted:
            self.bound_pods.remove(deleted)
            self.dispatcher.forget(deleted)
            if self.store.release(pods=deleted).pods:
                self.dispatcher.on_event(ASSIGNED_POD_DELETE)
        now = time.time()
        if now - self._holds_checked >= 1.0:
            self._holds_checked = now
            if self.store.expire_holds(now):
                self.dispatcher.on_event(ASSIGNED_POD_DELETE)  # held room is free again
        groups = self.cluster.take_new_groups()
        for group in groups:
            self.dispatcher.add_group(group)
        self.budgets.put(self.cluster.take_new_budgets())
        pods, errors = self.cluster.take_new_pods()
        if self.on_stage and pods:
            self.on_stage("queued", [p.key for p in pods], time.perf_counter())
        for pod in pods:
            self.dispatcher.add(pod)
        touched = {g.key for g in groups} | {p.group for p in pods if p.group}
        if touched and (waits := self.dispatcher.gang_waits(touched)):
            self.cluster.report_unschedulable([(k, "Unschedulable", w) for k, w in waits.items()])
        if self.reservations.has_placed:  # queued first: a failing store loses no pod
            for pod in pods:
                self._claim(pod)
        gated = [
            (p.key, "SchedulingGated", f"scheduling gates are not empty: {', '.join(p.gates)}")
            for p in pods
            if p.gates
        ]
        if gated:
            self.cluster.report_unschedulable(gated)
        for reservation in self.cluster.take_new_reservations():
            self.reservations.add(reservation)
            self.dispatcher.add(reservation.pod)
        for key, error in errors:
            log.warning("pod %s cannot be scheduled: %s", key, error, extra=unit_key(key))
            self.dispatcher.reject(key, str(error))
        if errors:
            self.cluster.report_unschedulable([(k, "SchedulerError", str(e)) for k, e in errors])

    def _count_running(self, pods: list[Pod]) -> None:
        """Pods bound by anybody else: their room is used in the store, whether it fits or
        not; preemption may evict them; and they are no longer the queue's to place."""
        counted = []
        for pod, outcome in zip(pods, self.store.observe(pods), strict=True):
            if outcome.committed:
                counted.append(pod)
            elif outcome.status != "duplicate":
                log.warning("running pod %s not counted: %s", pod.key, outcome.detail)
        self.add_running(counted)
        self.dispatcher.forget([p.key for p in pods])

    def _capacity(self) -> dict[str, int]:
        """The cluster's allocatable, which the quotas at the top of the tree share."""
        total: Counter[str] = Counter()
        for allocatable in self._allocatable.values():
            total.update(allocatable)
        return dict(total)

    def feed(self) -> None:
        """Top up every shard's pipeline with batches from the active queue."""
        for shard, actor in enumerate(self.shards):
            if shard in self._restarting:
                continue
            while self._per_shard[shard] < self.settings.batches_in_flight:
                batch = self.dispatcher.next_batch(shard, self.settings.pods_per_batch)
                if batch is None:
                    break
                if self.on_stage:
                    sent = [key for unit in batch.units for key, _ in unit.pods]
                    self.on_stage("sent", sent, time.perf_counter())
                if self.metrics:
                    self.metrics.sent(batch.batch_id, sum(len(u.pods) for u in batch.units))
                ref = actor.schedule.remote(batch.encode())
                self._inflight[ref] = _Sent(shard, batch.batch_id, time.monotonic())
                self._per_shard[shard] += 1

    def step(self, timeout_s: float) -> None:
        """One turn: take in new pods, feed shards, complete whatever answers arrived."""
        with self._surviving_the_store():
            self._step(timeout_s)

    @contextmanager
    def _surviving_the_store(self, rebuild: bool = False) -> Iterator[None]:
        """Go on when Redis fails (what it held of a batch being committed is settled
        where the commit is, `_guarded`). With `rebuild`, changes taken from the cluster
        may not have reached the store: it is built again from the cluster in any case."""
        try:
            yield
        except STORE_ERRORS as err:
            self._recover_store(err, rebuild)

    def _recover_store(self, err: Exception, rebuild: bool = False) -> None:
        """Redis is away, or lost the store: wait for it, backing off, and build the store
        again from the cluster's truth if it is not the one the driver knew (or if
        `rebuild`). Every reader starts over then (the epoch changed), and nothing
        placed before is committed. A store this driver never had (the start, or a new
        case's) is only built: that is no outage, and no error for an operator."""
        first = isinstance(err, EpochChanged) and err.known is None and not err.current
        if first:
            log.info("node store: empty; building it from the cluster")
        else:
            self.store_outages += 1
            log.error("node store: %s", err)
        failures = 0
        while True:
            building = False
            try:
                current = self.store.current_epoch()
                if current == self.store.epoch and not rebuild:
                    return  # the same store: Redis was only out of reach
                building = True
                self._rebuild(logged_at=logging.INFO if first else logging.WARNING)
                return
            except STORE_ERRORS as again:
                rebuild = rebuild or building  # a rebuild cut short is done again
                failures += 1
                wait = min(0.05 * 2**failures, 2.0)
                log.warning("node store away (%s): trying again in %.2f s", again, wait)
                time.sleep(wait)

    def _rebuild(self, logged_at: int) -> None:
        started = time.perf_counter()
        truth = self.cluster.snapshot()
        rebuilt = self.store.rebuild(truth.nodes, truth.namespaces, truth.pods)
        for outcome in rebuilt:
            if not outcome.committed:
                log.warning("bound pod %s not counted: %s", outcome.unit, outcome.detail)
        self.binder.guard.reset()
        incoming = self.dispatcher.stats.incoming
        waiting = sum(incoming.values())
        self.dispatcher.on_event(NODE_ADD)  # anything waiting may fit in the new store
        self.fault_retries += sum(incoming.values()) - waiting
        self.store_rebuilds.append(time.perf_counter() - started)
        log.log(
            logged_at,
            "node store built from the cluster: %d nodes, %d bound pods, in %.2f s",
            len(truth.nodes),
            len(truth.pods),
            self.store_rebuilds[-1],
        )

    def _notice_lost_store(self) -> None:
        """A shard failed: if Redis lost the store, build it now, not at the driver's next
        call to it (until then every shard fails every batch)."""
        with self._surviving_the_store():
            current = self.store.current_epoch()
            if current != self.store.epoch:
                self._recover_store(EpochChanged(self.store.epoch, current))

    def _step(self, timeout_s: float) -> None:
        self.ingest()
        self.feed()
        if self.metrics:
            self.metrics.maybe_sample(self.dispatcher)
        if self.profiler:
            self.profiler.poll()
        if not self.busy():
            return
        self._restart_overdue()
        waiting = [*self._inflight, *self._committing]
        ready, _ = ray.wait(waiting, num_returns=1, timeout=timeout_s)
        for ref in ready:
            if ref in self._committing:
                self._complete_commit(ref)
            else:
                self._complete(ref)

    def round_trips(self) -> int:
        """Calls made to Redis so far: the driver's, the shards' (as their results say)
        and the binder actors' (one script call per batch)."""
        actors = sum(self.commits_by_binder[1:])
        return self.store.round_trips + self.dispatcher.stats.shard_round_trips + actors

    def busy(self) -> bool:
        """A shard or a binder actor has work out."""
        return bool(self._inflight or self._committing)

    def _restart_overdue(self) -> None:
        """A shard that holds a batch past `shard_timeout_s` is stuck (or cut off): kill it
        for Ray to start again. Its batches then fail, and their units are tried again."""
        if not self._inflight:
            return
        oldest = next(iter(self._inflight.values()))
        if time.monotonic() - oldest.at < self.settings.shard_timeout_s:
            return
        late = [
            ref
            for ref, s in self._inflight.items()
            if time.monotonic() - s.at >= self.settings.shard_timeout_s
            and s.shard not in self._restarting
        ]
        if not late:
            return
        # an answer that came while the driver itself was slow is not the shard's fault
        answered, _ = ray.wait(late, num_returns=len(late), timeout=0)
        overdue = {self._inflight[ref].shard for ref in late} - {
            self._inflight[ref].shard for ref in answered
        }
        for shard in sorted(overdue):
            log.error(
                "shard %d has not answered in %.0f s: restarting it",
                shard,
                self.settings.shard_timeout_s,
            )
            ray.kill(self.shards[shard], no_restart=False)
            self.shard_restarts += 1
            self._restarting.add(shard)

    def _complete(self, ref: ray.ObjectRef) -> None:
        sent = self._inflight.pop(ref)
        shard, batch_id = sent.shard, sent.batch_id
        self._per_shard[shard] -= 1
        if not self._per_shard[shard]:
            self._restarting.discard(shard)
        try:
            result = ShardResult.decode(ray.get(ref))
        except (RayError, MalformedMessage) as err:
            # No decision came back: the batch's units go back to the queue.
            log.error("shard %d failed on batch %d: %s", shard, batch_id, err)
            self.shard_failures += 1
            result = ShardResult(shard, batch_id, 0, [])
            self._notice_lost_store()
            lost = self.dispatcher.batches.get(batch_id)
            for key in lost.units if lost else ():
                unit = self.dispatcher.units.get(key)
                self.fault_retries += len(unit.pods) if unit else 0
        units = self.dispatcher.units
        unplaced = {  # unit key -> (unit, its attempts so far), of the units that found no node
            d.unit: (units[d.unit], units[d.unit].attempts)
            for d in result.decisions
            if not d.placed and d.unit in units
        }
        classes, placed = self.dispatcher.on_result(result)
        # the attempts the dispatcher counted as failed (not a late answer it ignored),
        # with the reason it kept for each
        failed = [unit for unit, attempts in unplaced.values() if unit.attempts > attempts]
        if failed:
            self.cluster.report_unschedulable(
                [(p.key, "Unschedulable", unit.reason) for unit in failed for p in unit.pods]
            )
        if self.metrics:
            profiles = {key: unit.pods[0].spec.profile for key, (unit, _) in unplaced.items()}
            self.metrics.answered(result, profiles, settled=not placed)
        asks = self.dispatcher.take_preemption_asks()
        if asks:
            with self._surviving_the_store():  # the batch's placed units are settled below
                self._preempt(asks)
        if not placed:
            return
        decided = time.perf_counter()
        held = []  # reservations placed: their room is held, nothing is bound
        if self.reservations.pending:
            ours = [d for d in placed if d.unit in self.reservations.pending]
            placed = [d for d in placed if d.unit not in self.reservations.pending]
            held = [self._hold(d) for d in ours]
        slot = batch_id % (len(self.binders) + 1)  # batches take turns; 0 is the driver's
        actor = self.binders[slot - 1] if slot else None
        try:
            request = (
                self.binder.request_for_actor(classes, placed, result.epoch)
                if actor and placed
                else None
            )
        except STORE_ERRORS as err:  # routing reads the store too; the batch is settled here
            self._recover_store(err)
            request = None
        if actor is None or request is None:  # this batch is the driver's to commit
            self.commits_by_binder[0] += bool(placed)
            outcomes = (
                self._guarded(
                    lambda: self.binder.process(classes, placed, result.epoch), classes, placed
                )
                if placed
                else []
            )
            self._settle(batch_id, outcomes + held, decided)
            return
        self.commits_by_binder[slot] += 1
        ref = actor.commit.remote(request.encode())
        self._committing[ref] = _Committing(batch_id, classes, placed, decided, held, request.epoch)

    def _guarded(
        self,
        commit: Callable[[], list[UnitOutcome]],
        classes: list[SchedulingSpec],
        decisions: list[Decision],
        voided: bool = False,
    ) -> list[UnitOutcome]:
        """Commit (or take a binder actor's commit) and bind. If the store fails
        meanwhile, what it holds of the batch once it is back is what was committed:
        nothing, if it was lost, or if the batch was placed against a store since lost.
        The pods of a commit so `voided` (or lost here) that are not bound are counted
        as tried again for a fault."""
        while True:
            try:
                outcomes = commit()
                break
            except STORE_ERRORS as err:
                self._recover_store(err)
                voided = True
                lost = f"the node store failed during the commit: {err}"
                commit = partial(self.binder.take_reply, classes, decisions, None, lost)
        if voided:
            settled = {o.unit: len(o.unbound) for o in outcomes if o.status in _BOUND}
            self.fault_retries += sum(settled.get(d.unit, len(d.placements)) for d in decisions)
        return outcomes

    def _hold(self, decision: Decision) -> UnitOutcome:
        """A reservation's placement: its room held in the store for its owner, on the
        first candidate where it still fits; then its owner, if queued, is told."""
        reservation = self.reservations.pending[decision.unit]
        why = "no candidate"
        for node in decision.placements[0].nodes:
            hold = Hold(
                reservation.hold_key, node, reservation.pod.spec.requests, reservation.expires_at
            )
            try:
                verdict = self.store.preempt([], [hold])
            except STORE_ERRORS as err:
                self._recover_store(err)
                return UnitOutcome(decision.unit, "conflict", detail=f"node store failed: {err}")
            if verdict.reserved:
                self.reservations.placed(reservation.key, node)
                if reservation.owner_pod and self.dispatcher.nominate_waiting(
                    reservation.owner_pod, node
                ):
                    self.reservations.claimed(reservation, reservation.owner_pod)
                return UnitOutcome(decision.unit, "bound", [node])
            why = verdict.detail
        return UnitOutcome(decision.unit, "conflict", detail=why)

    def _claim(self, pod: Pod) -> None:
        """A new pod that a placed reservation is for: it is tried on that node first."""
        found = self.reservations.owned_by(pod, time.time())
        if found is None:
            return
        reservation, node = found
        # picked by a selector: the room is held under its key from now on
        selected = not reservation.owner_pod
        if selected and self.store.claim_hold(reservation.key, pod.key) != "claimed":
            return
        self.reservations.claimed(reservation, pod.key)
        self.dispatcher.nominate_waiting(pod.key, node)

    def add_running(self, pods: list[Pod]) -> None:
        """Pods the cluster already runs (committed to the store by the caller): they count
        for preemption like the pods optimist binds."""
        for pod in pods:
            self.bound_pods.add(pod, pod.node_name)

    def _preempt(self, asks: list[PreemptionAsk]) -> None:
        """Find victims for units that fit nowhere: single pods alike share one dry run
        (`PreemptionPlanner.plan_alike`), other units are planned one by one."""
        started = time.perf_counter()
        tried: list[tuple[str, int, bool]] = []  # (profile, pods, victims found) per unit
        quotas = self.dispatcher.quotas
        alike: dict[tuple[object, ...], list[tuple[PreemptionAsk, Preemptor]]] = {}
        for ask in asks:
            preemptors = [
                Preemptor(
                    p.key,
                    p.priority,
                    p.spec.requests,
                    nodes,
                    quotas.leaf_of(p) if quotas is not None else None,
                    p.spec.profile,
                )
                for p, nodes in ask.pods
            ]
            if len(preemptors) == 1:
                p = preemptors[0]
                key = (p.requests, p.priority, p.quota, tuple(p.nodes))
                alike.setdefault(key, []).append((ask, p))
            else:
                found = self._carry_out(ask, preemptors, self.preemption.plan(preemptors))
                tried.append((preemptors[0].profile, len(preemptors), found))
        for group in alike.values():
            plans = self.preemption.plan_alike([p for _, p in group])
            for (ask, p), plan in zip(group, plans, strict=True):
                tried.append((p.profile, 1, self._carry_out(ask, [p], plan)))
        if self.metrics:
            self.metrics.post_filter(time.perf_counter() - started, tried)

    def _carry_out(self, ask: PreemptionAsk, pods: list[Preemptor], plan: Plan | None) -> bool:
        """Evict the plan's victims and reserve their room for the unit in one step in the
        store, then delete them in the cluster. False if there is no plan, or the store
        refused it."""
        if plan is None:
            self.dispatcher.no_victims(ask.unit)
            return False
        expires_at = time.time() + self.settings.hold_ttl_s
        holds = [Hold(p.key, plan.nominated[p.key], p.requests, expires_at) for p in pods]
        victims = [v.key for v in plan.victims]
        verdict = self._preempt_guarded(victims, holds)
        if verdict is None:  # the store failed before it took the step: tried again
            self.dispatcher.retry_preemption(ask.unit)
            return False
        if not verdict.reserved:  # the plan met a changed store: tried again as usual
            log.info(
                "preemption for %s refused by the store: %s",
                ask.unit,
                verdict.detail,
                extra=unit_key(ask.unit),
            )
            self.dispatcher.no_victims(ask.unit)
            return False
        self.bound_pods.remove(victims)  # no longer in the store: nobody else's victims
        self.dispatcher.nominate(ask.unit, plan.nominated, victims)
        self.cluster.nominate(plan.nominated)
        if self.metrics:
            self.metrics.preempted(len(victims))
        if victims:
            for victim, error in zip(victims, self.cluster.evict(victims), strict=True):
                if error is not None:
                    log.warning(
                        "evicting %s for %s failed: %s",
                        victim,
                        ask.unit,
                        error,
                        extra=unit_key(ask.unit),
                    )
        return True

    def _preempt_guarded(self, victims: list[str], holds: list[Hold]) -> Preempted | None:
        """`store.preempt`; if the store fails meanwhile, what it holds once it is back
        says whether the step was taken: the holds are there (its victims released in the
        store, to be evicted in the cluster as well), or nothing of it is (None)."""
        epoch, failed = self.store.epoch, False
        while True:
            try:
                if not failed:
                    return self.store.preempt(victims, holds)
                held = self.store.holds() if self.store.epoch == epoch else {}
                break
            except STORE_ERRORS as err:
                failed = True
                self._recover_store(err)
        mine = [held.get(h.pod) for h in holds]
        if all(
            m is not None and (m.node, m.expires_at) == (h.node, h.expires_at)
            for m, h in zip(mine, holds, strict=True)
        ):
            return Preempted(0, "reserved", "taken before the node store failed")
        return None

    def _complete_commit(self, ref: ray.ObjectRef) -> None:
        job = self._committing.pop(ref)
        try:
            reply: CommitReply | None = CommitReply.decode(ray.get(ref))
        except (RayError, MalformedMessage) as err:
            # The store knows what it committed: those units are bound, the rest retried.
            log.error("binder actor failed on batch %d: %s", job.batch_id, err)
            self.binder_failures += 1
            reply = None
        if job.epoch != self.store.epoch:  # committed in a store lost since: void
            reply = None
        outcomes = self._guarded(
            lambda: self.binder.take_reply(job.classes, job.decisions, reply),
            job.classes,
            job.decisions,
            voided=reply is None,
        )
        self._settle(job.batch_id, outcomes + job.held, job.decided)

    def _settle(self, batch_id: int, outcomes: list[UnitOutcome], decided: float) -> None:
        placed = self.dispatcher.on_outcomes(batch_id, outcomes)
        if self.reservations.has_placed or any(is_reservation(b.pod.key) for b in placed):
            placed = [b for b in placed if not is_reservation(b.pod.key)]
            if any([self.reservations.consumed(b.pod) for b in placed]):
                # a reservation held more than its pod took: the rest is free again
                self.dispatcher.on_event(ASSIGNED_POD_DELETE)
        for b in placed:
            self.bound_pods.add(b.pod, b.node)
        if self.metrics:
            binder = self.binder
            self.metrics.settled(
                batch_id, outcomes, placed, decided, binder.committed_at, binder.bind_s
            )
        bound = [b.pod.key for b in placed]
        if self.on_stage and bound:
            self.on_stage("decided", bound, decided)
            self.on_stage("committed", bound, self.binder.committed_at)
        self.on_bound(bound)

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
