"""Runs one workload of a case on a started platform: its ops in order, churn and paced
deletions in the background, and the record of its measured phase.

The runner stands where scheduler_perf's test driver and the API server
stand: it makes the objects in the simulated cluster and waits as the ops
say. A wait ends when every pod it waits for is bound, or when the loop has
settled (what is left waits on a "no node fits" that still holds), since
optimist reports such pods rather than waiting for them forever. Pods made
by churn are background load and are never measured.
"""

from __future__ import annotations

import itertools
import random
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import ray

from benchmarks.cases import workload_objects
from benchmarks.cases.case_fields import Manifest
from benchmarks.cases.case_file import CaseWorkload
from benchmarks.cases.case_ops import (
    VOLUME_KINDS,
    WORKLOAD_KINDS,
    CreateAny,
    CreatePodGroups,
    DeletePods,
)
from benchmarks.cases.go_template import TextTemplate
from benchmarks.cases.op_walker import (
    NO_CONTROLLERS,
    CaseError,
    ChurnTask,
    DeleteTask,
    OpWalker,
    phase_takes,
)
from benchmarks.chaos import Chaos, ChaosPlan
from benchmarks.report.instruments import CpuClock, PeakMemory, RedisServers
from benchmarks.simulated.platform_faults import PlatformFaults
from cluster.manifests import copy_manifest, pod_from_manifest, scheduler_name
from cluster.volumes.index import CLAIMS, CSI_NODES, VOLUMES
from optimist.explain import Explainer
from optimist.loop import SchedulingLoop
from optimist.metrics.recorder import LoopMetrics
from optimist.offline.replay import run_in_place
from optimist.offline.simulator import SimulatedCluster
from optimist.profiling import Profiler
from optimist.runtime import Platform

STEP_S = 0.05  # longest wait for a shard's answer in one turn of the loop
# pods created between two turns of the loop while an op creates many: the scheduler
# works while they arrive, as it would beside an API server (scheduler_perf's does)
CREATE_CHUNK = 256


@dataclass(frozen=True, slots=True)
class Counters:
    """The loop's cumulative counters at one moment, so a phase's figures are differences."""

    pod_attempts: int = 0
    conflicts: int = 0
    committed_units: int = 0
    committed_pods: int = 0
    store_commits: int = 0
    shard_rollbacks: int = 0
    commit_rollbacks: int = 0
    redis_commands: int = 0
    redis_round_trips: int = 0
    busy_s: dict[int, float] = field(default_factory=dict)  # shard -> seconds busy
    decided: dict[int, int] = field(default_factory=dict)  # shard -> pods it decided on
    cpu_s: dict[str, float] = field(default_factory=dict)  # role -> CPU seconds (CpuClock)

    @classmethod
    def of(cls, loop: SchedulingLoop, harness: RedisServers, cpu: CpuClock) -> Counters:
        """`harness` is the bench's own Redis client, so that its readings count nowhere."""
        stats = loop.dispatcher.stats
        return cls(
            stats.pod_attempts,
            stats.conflicts,
            sum(stats.units_by_shard.values()),
            stats.bound_pods,
            loop.binder.commits,
            stats.shard_rollbacks,
            stats.commit_rollbacks,
            harness.commands(),
            loop.round_trips(),
            dict(stats.busy_s_by_shard),
            dict(stats.decided_by_shard),
            cpu.read(),
        )

    def __sub__(self, other: Counters) -> Counters:
        return Counters(
            *(_minus(getattr(self, f), getattr(other, f)) for f in self.__dataclass_fields__)
        )


def _minus(a: Any, b: Any) -> Any:
    if isinstance(a, dict):
        return {k: v - b.get(k, 0) for k, v in a.items()}
    return a - b


@dataclass(slots=True)
class Window:
    """A measured phase: from a collecting op's start to the end of its wait (or the stop)."""

    start: float
    before: Counters
    namespaces: tuple[str, ...] = ()
    selector: dict[str, str] | None = None
    pods: list[str] = field(default_factory=list)
    end: float = 0.0
    counters: Counters = field(default_factory=Counters)

    def takes(self, namespace: str, labels: Any) -> bool:
        return phase_takes(self.namespaces, self.selector, namespace, labels)


@dataclass(slots=True)
class Tally:
    """Pods of one op or one namespace: how many were made, how many are done with."""

    made: int = 0
    done: int = 0  # bound, or deleted before it was bound


@dataclass
class CaseOutcome:
    """What a run of one workload leaves for the report."""

    run: CaseWorkload
    cluster: SimulatedCluster
    loop: SchedulingLoop
    windows: list[Window]
    created_at: dict[str, float]
    bound_at: dict[str, float]
    unschedulable: dict[str, str]
    stages: dict[str, dict[str, float]]
    memory: dict[str, int]
    made: int  # pods of our profiles made, churn's included
    deleted: int
    notes: list[str]
    error: str | None = None
    failure: CaseError | None = None  # the op that stopped the case, if one did
    chaos: dict[str, Any] | None = None  # the faults injected and the recoveries, if any


class CaseRunner(OpWalker[Window]):
    def __init__(
        self,
        run: CaseWorkload,
        platform: Platform,
        *,
        seed: int,
        timeout_s: float,
        progress: Callable[[int, int], None] = lambda done, total: None,
        metrics: LoopMetrics | None = None,
        profiler: Profiler | None = None,
        chaos: ChaosPlan | None = None,
        explainer: Explainer | None = None,
    ) -> None:
        self.started = time.perf_counter()
        self.run = run
        self.platform = platform
        self.cluster = SimulatedCluster(platform.settings.scheduler_names, seed=seed)
        self.rng = random.Random(seed)
        self.unique = itertools.count()
        self.loop = SchedulingLoop(
            platform,
            self.cluster,
            on_bound=self._bound,
            on_stage=self._stage,
            metrics=metrics,
            profiler=profiler,
            explainer=explainer,
        )
        here = ray.get_runtime_context().get_node_id()
        # the bench's readings, apart from the loop's, of every server of the store
        self.harness = RedisServers(platform.redis_urls)
        local = [int(i["pid"]) for i in platform.shard_info if i["ray_node_id"] == here]
        self.memory = PeakMemory(local, self.harness)
        self.cpu = CpuClock(local, self.harness)
        self.progress = progress
        self.deadline = time.perf_counter() + timeout_s
        self.timeout_s = timeout_s
        self.created_at: dict[str, float] = {}
        self.pod_keys: list[str] = []  # in creation order: read from other threads as it grows
        self.bound_at: dict[str, float] = {}
        # stage -> pod -> when it last reached it ("sent" again on every attempt)
        self.stages: dict[str, dict[str, float]] = {
            s: {} for s in ("queued", "sent", "decided", "committed")
        }
        self.tags: dict[str, tuple[int, str]] = {}  # pod key -> (op index, namespace)
        self.by_op: dict[int, Tally] = {}
        self.by_namespace: dict[str, Tally] = {}
        self.windows: list[Window] = []
        self.collecting: Window | None = None
        self.namespaces: set[str] = set()
        self.priorities = workload_objects.PriorityClasses()
        self.churn: list[ChurnTask] = []
        self.nodes_made: list[str] = []
        self.bound_next = 0
        self.deleting: list[DeleteTask] = []
        self.deleted = 0
        self.notes: list[str] = []
        self._ours = 0  # pods of our profiles made, for the progress bar
        self._next_sample = 0.0
        self.chaos = (
            Chaos(chaos, PlatformFaults(platform, self.loop), self._settled_share, seed)
            if chaos
            else None
        )

    # --- the whole run ---------------------------------------------------------------

    def execute(self) -> CaseOutcome:
        """Run every op; stop at the first that fails, then let the loop settle either way."""
        failure = self._walk()
        error = str(failure) if failure else None
        self.churn.clear()
        self.deleting.clear()
        settled = self._drive(lambda: False, limit=False)
        if self.loop.metrics:
            self.loop.metrics.maybe_sample(self.loop.dispatcher, now=True)
        self.memory.sample()
        self._report_progress()
        if not settled and error is None:
            error = f"case {self.run.name}: did not settle within {self.timeout_s:.0f}s"
        return CaseOutcome(
            self.run,
            self.cluster,
            self.loop,
            self.windows,
            self.created_at,
            self.bound_at,
            self.loop.dispatcher.unschedulable(),
            self.stages,
            self.memory.peaks(),
            self._ours,
            self.deleted,
            self.notes,
            error,
            failure,
            self.chaos.report(self.started) if self.chaos else None,
        )

    def _create_nodes(self, manifest: Manifest, count: int) -> list[str]:
        return [n.name for n in self.cluster.create_nodes(manifest, count, hostname_label=True)]

    def _create_csi_nodes(self, manifests: list[dict[str, Any]]) -> None:
        for manifest in manifests:
            self.cluster.put_volume_object(CSI_NODES, manifest)

    def _barrier(
        self, namespaces: tuple[str, ...], selector: dict[str, str] | None, attempted: bool
    ) -> None:
        # the loop's settle is exact here (it knows which pods wait on a "no node fits"
        # that still holds), so Attempted and Scheduled wait alike
        if selector is None:
            tallies = [self.by_namespace.get(ns, Tally()) for ns in namespaces]
            self._wait(tallies or list(self.by_namespace.values()))
            return
        manifests = self.cluster.pod_manifests
        keys = [
            key
            for key in self.pod_keys
            if key in manifests
            and phase_takes(
                namespaces, selector, self.tags[key][1], workload_objects.labels_of(manifests[key])
            )
        ]
        # settled: bound or deleted (a pod no node takes ends the wait as `_wait`'s do)
        if not self._drive(lambda: all(k in self.bound_at or k not in manifests for k in keys)):
            raise TimeoutError(f"pods not scheduled within {self.timeout_s:.0f}s")

    def _sleep(self, seconds: float) -> None:
        until = time.perf_counter() + seconds
        self._drive(lambda: time.perf_counter() >= until, settle=False)

    def _restart_scheduler(self, failover: bool) -> None:
        raise ValueError(
            "optimist cannot run it here: the simulated cluster's scheduler runs in the "
            "bench's own process; --cluster apiserver or kwok restarts it"
        )

    # --- creating ----------------------------------------------------------------------

    def _create_pods(
        self,
        index: int,
        namespace: str,
        batches: list[workload_objects.Batch],
        collect: bool,
        skip_wait: bool,
    ) -> None:
        self.namespaces.add(namespace)
        window = self._open((namespace,), None) if collect else self.collecting
        since_turn = 0
        for template, n in batches:
            manifest = self.priorities.admit(template)
            labels = workload_objects.labels_of(manifest)
            while n:
                take = min(n, CREATE_CHUNK - since_turn)
                keys = self.cluster.create_pods(manifest, take, namespace)
                self._made(keys, index, namespace, labels, window)
                n, since_turn = n - take, since_turn + take
                if since_turn == CREATE_CHUNK:
                    self.loop.step(0)
                    since_turn = 0
        if not skip_wait:
            self._wait_scheduled(index)
        if collect and window is not None:
            self._close(window)

    def _wait_scheduled(self, index: int) -> None:
        """Until every pod of the op is bound, as upstream's harness waits; pods that no
        node can take fail the case, naming why, where upstream's would time out."""
        tally = self.by_op.setdefault(index, Tally())
        self._wait([tally])
        if tally.done < tally.made:
            unschedulable = self.loop.dispatcher.unschedulable()
            reasons = Counter(
                reason
                for key, reason in unschedulable.items()
                if self.tags.get(key, (None,))[0] == index
            )
            why = "; ".join(f"{n} {r}" for r, n in reasons.most_common(3)) or "none said"
            raise ValueError(
                f"{tally.made - tally.done} of {tally.made} pods not scheduled, where "
                f"upstream's harness waits for every one (skipWaitToCompletion: false): {why}"
            )

    def _create_groups(self, index: int, op: CreatePodGroups) -> None:
        batches: list[workload_objects.Batch] = []
        for i in range(op.count):
            name = f"{op.name_prefix}-{i}"
            self.cluster.create_pod_group(
                workload_objects.pod_group(name, op.namespace, op.min_member)
            )
            batches += [
                (workload_objects.group_member(op.template, name, j), 1)
                for j in range(op.pods_per_group)
            ]
        self._create_pods(index, op.namespace, batches, op.collect_metrics, op.skip_wait)

    def _create_volumes(self, namespace: str, pairs: list[tuple[Manifest, Manifest]]) -> None:
        for volume, claim in pairs:
            self.cluster.put_volume_object(VOLUMES, volume)
            self.cluster.put_volume_object(CLAIMS, claim)

    def _create_bound_pods(self, namespace: str, batches: list[workload_objects.Batch]) -> None:
        """Committed on their nodes in the store and recorded bound, as a snapshot's
        running pods are (`run_in_place`): none is handed to the scheduler."""
        self.namespaces.add(namespace)
        pods = []
        for template, n in batches:
            manifest = self.priorities.admit(template)
            for node in self._next_nodes(n):
                made = copy_manifest(dict(manifest))
                meta = made.setdefault("metadata", {})
                meta["name"] = f"{meta.pop('generateName', None) or 'pod-'}{next(self.unique)}"
                meta["namespace"] = namespace
                made.setdefault("spec", {})["nodeName"] = node
                pods.append(pod_from_manifest(made))
        errors: list[str] = []
        self.loop.step(0)  # the store built, its nodes those made so far
        run_in_place(self.platform.store, self.cluster, pods, errors)
        if errors:
            raise ValueError(f"boundAtCreation: {errors[0]} ({len(errors)} pods in all)")

    def _create_namespace(self, name: str, labels: Mapping[str, str]) -> None:
        """A namespace with its labels, which namespaceSelector matches."""
        self.namespaces.add(name)
        self.cluster.create_namespace(name, labels)

    def _create_any(self, index: int, op: CreateAny) -> None:
        for i in range(op.count):
            made = op.template
            if isinstance(made, TextTemplate):  # each its own, as upstream renders them
                made = made.render(i, op.count)
            self._create_one(index, op, made)

    def _create_one(self, index: int, op: CreateAny, made: Mapping[str, Any]) -> None:
        """One object of a createAny op, by its kind."""
        kind = made["kind"]
        namespaced = _in_namespace(made, op.namespace)
        if kind == "Namespace":
            meta = made["metadata"]
            self._create_namespace(str(meta["name"]), meta.get("labels") or {})
        elif kind == "PriorityClass":
            self.priorities.add(made)
        elif kind == "PodGroup":
            self.cluster.create_pod_group(namespaced)
        elif kind == "PodDisruptionBudget":
            self.cluster.create_disruption_budget(namespaced)
        elif kind == "ElasticQuota":
            self.cluster.create_elastic_quota(namespaced)
        elif kind == "Reservation":
            self.cluster.create_reservation(made)
        elif kind == "Node":
            self.cluster.create_nodes(made, 1)
        elif kind == "Service":
            self.cluster.create_workload_selector(namespaced)
        elif kind in WORKLOAD_KINDS:
            raise ValueError(f"kind {kind}: {NO_CONTROLLERS}")
        elif kind == "PersistentVolumeClaim":
            self.cluster.put_volume_object(CLAIMS, namespaced)
        elif kind in VOLUME_KINDS:  # cluster-scoped
            self.cluster.put_volume_object(VOLUME_KINDS[kind], made)
        else:  # Pod
            self._create_pods(index, op.namespace, [(dict(made), 1)], False, True)

    def _note(self, note: str) -> None:
        """Once in the report, however often it applies."""
        if note not in self.notes:
            self.notes.append(note)

    def _made(
        self,
        keys: list[str],
        index: int,
        namespace: str,
        labels: Any,
        window: Window | None,
    ) -> None:
        now = time.perf_counter()
        op_tally = self.by_op.setdefault(index, Tally())
        ns_tally = self.by_namespace.setdefault(namespace, Tally())
        ours = keys if self._is_ours(keys) else []
        self.pod_keys.extend(ours)
        for key in ours:
            self.created_at[key] = now
            self.tags[key] = (index, namespace)
        op_tally.made += len(ours)
        ns_tally.made += len(ours)
        self._ours += len(ours)
        if window is not None and window.takes(namespace, labels):
            window.pods.extend(ours)

    def _is_ours(self, keys: list[str]) -> bool:
        """Whether these pods (made from one manifest) go to our profiles: others are left alone."""
        if not keys:
            return False
        return scheduler_name(self.cluster.pod_manifests[keys[0]]) in self.cluster.scheduler_names

    # --- deleting ----------------------------------------------------------------------

    def _delete_pods(self, op: DeletePods) -> None:
        selector = op.label_selector or {}
        keys = [
            key
            for key, manifest in self.cluster.pod_manifests.items()
            if key.startswith(f"{op.namespace}/")
            and all(workload_objects.labels_of(manifest).get(k) == v for k, v in selector.items())
        ]
        task = DeleteTask(keys, op.per_second, time.perf_counter())
        self.deleting.append(task)
        self._pace_deletions()
        if not op.skip_wait:
            self._drive(lambda: task not in self.deleting, settle=False)

    def _pace_deletions(self) -> None:
        now = time.perf_counter()
        for task in list(self.deleting):
            if due := task.due(now):
                self._delete(due)
            if task.done:
                self.deleting.remove(task)

    def _delete(self, keys: list[str]) -> None:
        for key in keys:
            tag = self.tags.get(key)
            if tag is not None and key not in self.bound_at:
                self.by_op[tag[0]].done += 1
                self.by_namespace[tag[1]].done += 1
        self.deleted += len(keys)
        self.cluster.delete_pods(keys)

    # --- churn -------------------------------------------------------------------------

    def _churn(self) -> None:
        now = time.perf_counter()
        for task in self.churn:
            task.turn(now, self._churn_make, self._remove_churned)

    def _churn_make(self, manifest: Manifest, namespace: str) -> list[tuple[str, str]]:
        kind = manifest["kind"]
        if kind == "Node":
            return [("Node", n.name) for n in self.cluster.create_nodes(manifest, 1)]
        if kind == "Pod":
            keys = self.cluster.create_pods(self.priorities.admit(manifest), 1, namespace)
            self._ours += len(keys) if self._is_ours(keys) else 0
            return [("Pod", key) for key in keys]
        made = _in_namespace(manifest, namespace)  # a Service
        return [("Service", self.cluster.create_workload_selector(made))]

    def _remove_churned(self, objects_: list[tuple[str, str]]) -> None:
        nodes = [name for kind, name in objects_ if kind == "Node"]
        pods = [key for kind, key in objects_ if kind == "Pod"]
        for kind, key in objects_:
            if kind == "Service":
                self.cluster.delete_workload_selector(kind, key)
        if nodes:
            self.cluster.delete_nodes(nodes)
        if pods:
            self.deleted += len(pods)
            self.cluster.delete_pods(pods)

    # --- measuring ---------------------------------------------------------------------

    def _open(self, namespaces: tuple[str, ...], selector: dict[str, str] | None) -> Window:
        before = Counters.of(self.loop, self.harness, self.cpu)
        window = Window(time.perf_counter(), before, namespaces, selector)
        self.collecting = window
        return window

    def _close(self, window: Window) -> None:
        window.end = time.perf_counter()
        window.counters = Counters.of(self.loop, self.harness, self.cpu) - window.before
        self.windows.append(window)
        self.collecting = None

    def _stage(self, stage: str, keys: list[str], at: float) -> None:
        times = self.stages[stage]
        for key in keys:
            times[key] = at

    def _bound(self, keys: list[str]) -> None:
        now = time.perf_counter()
        for key in keys:
            self.bound_at[key] = now
            tag = self.tags.get(key)
            if tag is not None:
                self.by_op[tag[0]].done += 1
                self.by_namespace[tag[1]].done += 1

    # --- driving the loop --------------------------------------------------------------

    def _wait(self, tallies: list[Tally]) -> None:
        if not self._drive(lambda: all(t.done >= t.made for t in tallies)):
            raise TimeoutError(f"pods not scheduled within {self.timeout_s:.0f}s")

    def _drive(self, until: Callable[[], bool], *, settle: bool = True, limit: bool = True) -> bool:
        """Schedule until `until()` holds or (with `settle`) the loop has nothing left to try.

        False if the case ran out of time first; the final settling (limit
        False) gets one more timeout's worth, so a stuck case still ends.
        """
        loop = self.loop
        deadline = self.deadline if limit else time.perf_counter() + self.timeout_s
        while not until():
            if time.perf_counter() > deadline:
                return False
            loop.step(STEP_S)
            self._churn()
            self._pace_deletions()
            self._tick()
            if self.chaos:
                self.chaos.tick()
            if loop.dispatcher.idle():
                loop.ingest()
                if loop.dispatcher.idle() and not loop.dispatcher.skip_backoff():
                    if settle and not self.deleting:
                        return True
                    time.sleep(0.005)  # nothing to try: do not spin while a sleep or pacing runs
        return True

    def _tick(self) -> None:
        """Once a second: sample memory and move the progress bar."""
        now = time.perf_counter()
        if now >= self._next_sample:
            self._next_sample = now + 1.0
            self.memory.sample()
            self._report_progress()

    def _settled(self) -> int:
        """Pods of our profiles bound or reported unschedulable."""
        return len(self.bound_at) + len(self.loop.dispatcher.unschedulable())

    def _settled_share(self) -> float:
        return self._settled() / self._ours if self._ours else 0.0

    def _report_progress(self) -> None:
        self.progress(self._settled(), self._ours)


def _in_namespace(template: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    """A namespaced object from a template: the op's namespace where it names none."""
    meta = template.get("metadata") or {}
    return {**template, "metadata": {**meta, "namespace": meta.get("namespace") or namespace}}
