"""Runs one workload of a case through a real API server, as scheduler_perf runs its own:
this process makes the objects with a client of its own, a scheduler in another
process (`optimist run`, or kube-scheduler) places the pods, and what the server
says, through a watch of every pod, is what is measured.

A pod is scheduled when the watch first shows its `spec.nodeName`; it stands
reported unschedulable while its PodScheduled condition says False (both
schedulers write it). A wait ends when its pods are scheduled, or, where every
pod left is reported unschedulable (since the bench's last change, or
`pod_watch.RETRY_S`, a scheduler's longest backoff, after it) and nothing was
bound for `pod_watch.SETTLE_S`, it has settled: a createPods op that waits then
fails naming why, where upstream's harness would wait out its timeout. Latency
is from the create call's answer to the watch's news of the binding.
"""

from __future__ import annotations

import itertools
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from benchmarks.apiserver.plane_faults import PlaneFaults, PlaneTargets
from benchmarks.apiserver.pod_watch import PodWatch
from benchmarks.apiserver.replicas import Replicas
from benchmarks.cases import workload_objects
from benchmarks.cases.case_fields import Manifest
from benchmarks.cases.case_file import CaseWorkload
from benchmarks.cases.case_ops import WORKLOAD_KINDS, CreateAny, CreatePodGroups, DeletePods
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
from benchmarks.controlplane.living_plane import run_by
from benchmarks.report.api_report import MemoryParts, Restarted
from benchmarks.report.instruments import MemorySampler, ProcessTree
from cluster.manifests import (
    copy_manifest,
    scheduler_name,
)
from cluster.objects import HOSTNAME_LABEL
from optimist.kube.client import MERGE_PATCH, ApiError, KubeClient
from optimist.kube.informer import list_all, object_key

CREATORS = 16  # client threads making objects, as upstream's harness makes them in parallel
POLL_S = 0.02
Created = tuple[dict[str, Any], float]  # the server's object, and when its answer came
# where each kind the ops may make is created; a namespaced path holds {ns}
PATHS = {
    "Namespace": "/api/v1/namespaces",
    "Node": "/api/v1/nodes",
    "Pod": "/api/v1/namespaces/{ns}/pods",
    "Service": "/api/v1/namespaces/{ns}/services",
    "PriorityClass": "/apis/scheduling.k8s.io/v1/priorityclasses",
    "PodDisruptionBudget": "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
    "ReplicaSet": "/apis/apps/v1/namespaces/{ns}/replicasets",
    "StatefulSet": "/apis/apps/v1/namespaces/{ns}/statefulsets",
    "DaemonSet": "/apis/apps/v1/namespaces/{ns}/daemonsets",
    "Job": "/apis/batch/v1/namespaces/{ns}/jobs",
    "PersistentVolume": "/api/v1/persistentvolumes",
    "PersistentVolumeClaim": "/api/v1/namespaces/{ns}/persistentvolumeclaims",
    "CSINode": "/apis/storage.k8s.io/v1/csinodes",
    "StorageClass": "/apis/storage.k8s.io/v1/storageclasses",
}


class SchedulerExited(Exception):
    """The scheduler under test is gone: the rest of its stretch cannot run."""


@dataclass(slots=True)
class ApiWindow:
    """A measured phase: its pods, its span, and each process's CPU seconds in it."""

    start: float
    cpu_before: dict[str, float]
    namespaces: tuple[str, ...] = ()
    selector: dict[str, str] | None = None
    pods: list[str] = field(default_factory=list)
    end: float = 0.0
    cpu_s: dict[str, float] = field(default_factory=dict)

    def takes(self, namespace: str, labels: Mapping[str, str]) -> bool:
        return phase_takes(self.namespaces, self.selector, namespace, labels)


@dataclass
class ApiOutcome:
    run: CaseWorkload
    windows: list[ApiWindow]
    created_at: dict[str, float]
    watch: PodWatch
    made: int  # pods of the scheduler's profiles made, churn's included
    bound_at_creation: int  # pods made bound, no scheduler's (createPods' boundAtCreation)
    deleted: int
    peak_rss: dict[str, int]
    scheduler_memory: MemoryParts
    error: str | None = None
    failure: CaseError | None = None  # the op that stopped the case, if one did
    chaos: dict[str, Any] | None = None  # the faults injected, and the recoveries
    restarts: list[Restarted] = field(default_factory=list)  # by restartScheduler


class ApiCaseRunner(OpWalker[ApiWindow]):
    op_errors = (*OpWalker.op_errors, ApiError)

    def __init__(
        self,
        run: CaseWorkload,
        client: KubeClient,
        scheduler_names: frozenset[str],
        meters: Mapping[str, ProcessTree],
        *,
        seed: int,
        timeout_s: float,
        progress: Callable[[int, int], None] = lambda done, total: None,
        kwok_pool: str | None = None,
        chaos: tuple[ChaosPlan, PlaneTargets] | None = None,
        replicas: Replicas | None = None,
    ) -> None:
        self.run = run
        self.client = client
        # a living cluster's (`benchmarks.controlplane.living_plane`): its nodes are
        # KWOK's, whose pods turn Running and Ready, and a deleted pod goes when KWOK
        # confirms it
        self.kwok_pool = kwok_pool
        self.replicas = replicas  # the scheduler's, where a case restarts it
        self.restarted: list[tuple[bool, float]] = []  # (failover, when) of each restart
        self.scheduler_names = scheduler_names
        self.meters = meters
        self.timeout_s = timeout_s
        self.deadline = time.perf_counter() + timeout_s
        self.progress = progress
        self.rng = random.Random(seed)
        self.unique = itertools.count()
        self.pool = ThreadPoolExecutor(CREATORS, thread_name_prefix="creator")
        self.watch = PodWatch(client)
        self.created_at: dict[str, float] = {}
        self.labels: dict[str, Mapping[str, str]] = {}  # pod -> its labels, for deletePods
        self.by_op: dict[int, list[str]] = {}
        self.by_namespace: dict[str, list[str]] = {}
        self.namespaces: set[str] = set()
        self.windows: list[ApiWindow] = []
        self.collecting: ApiWindow | None = None
        self.nodes_deleted: list[str] = []  # by churn
        self.names = itertools.count()  # the numbers in the names this run gives
        self.made_here: list[tuple[str, str]] = []  # (kind, key) of what was made, but pods
        self.namespaces_made: list[str] = []  # by this run, not there before it
        self.pods_made: list[str] = []  # every pod, whichever scheduler's
        self.bound_at_creation = 0  # of those, made bound (boundAtCreation)
        self.deleting: list[DeleteTask] = []
        self.churn: list[ChurnTask] = []
        self.nodes_made: list[str] = []
        self.bound_next = 0
        self.deleted = 0
        self.expected: Counter[str] = Counter()  # namespace -> pods its workloads make
        self.arrivals: Counter[str] = Counter()  # namespace -> pods controllers made
        self._next_progress = 0.0
        self.started = time.perf_counter()
        # faults, injected between the turns of its waits: never while it makes objects
        self.chaos = (
            Chaos(
                chaos[0],
                PlaneFaults(chaos[1], self.watch),
                self._settled_share,
                seed,
                self.watch.bind_times_between,
            )
            if chaos
            else None
        )

    def __enter__(self) -> ApiCaseRunner:
        return self

    def __exit__(self, *_: object) -> None:
        self.pool.shutdown()

    # --- the whole run ---------------------------------------------------------------

    def execute(self) -> ApiOutcome:
        """Every op in order; stop at the first that fails, then wait for the rest to
        settle either way (every pod of the profiles bound or reported)."""
        with self.watch, MemorySampler(self.meters) as memory:
            failure = self._walk()
            error = str(failure) if failure else None
            self.churn.clear()
            self.deleting.clear()
            self.deadline = time.perf_counter() + self.timeout_s
            try:
                self._await_made(tuple(self.expected))
            except TimeoutError as e:
                error = error or f"case {self.run.name}: {e}"
            if not self._drive(list(self.created_at)) and error is None:
                error = f"case {self.run.name}: did not settle within {self.timeout_s:.0f}s"
            if self.chaos:  # a fault's nodes back before their pods are waited on
                self.chaos.finish()
            if self.kwok_pool is not None and not self._await_ready() and error is None:
                error = f"case {self.run.name}: pods bound but not Ready within the timeout"
            self._collect_orphans(self.nodes_deleted)
        return ApiOutcome(
            self.run,
            self.windows,
            self.created_at,
            self.watch,
            len(self.created_at),
            self.bound_at_creation,
            self.deleted,
            dict(memory.peak),
            MemoryParts(
                peak_bytes=memory.peak_parts["scheduler"],
                end_bytes=memory.end_parts["scheduler"],
            ),
            error,
            failure,
            self.chaos.report(self.started) if self.chaos else None,
            [self._restart_figures(failover, at) for failover, at in self.restarted],
        )

    def _create_groups(self, index: int, op: CreatePodGroups) -> None:
        raise ValueError(
            "PodGroups need the coscheduling CRD, which --cluster apiserver does "
            "not install (and kube-scheduler has no gangs to compare with)"
        )

    def _barrier(
        self, namespaces: tuple[str, ...], selector: dict[str, str] | None, attempted: bool
    ) -> None:
        spaces = namespaces or tuple({*self.by_namespace, *self.expected})
        self._await_made(spaces)

        def keys() -> list[str]:  # churn may make more meanwhile
            return [
                k
                for ns in spaces
                for k in self.by_namespace.get(ns, [])
                if phase_takes((), selector, ns, self.labels[k])
            ]

        if not attempted:
            self._wait(keys())
            return
        first = "while pods waited for their first attempt"
        if not self._until(lambda: "" if self.watch.attempted(keys()) else first):
            raise TimeoutError(f"pods not attempted within {self.timeout_s:.0f}s")

    def _await_made(self, namespaces: tuple[str, ...]) -> None:
        """Until the controllers have made the pods the workloads of `namespaces` ask
        for (a Deployment's replicas, a Job's completions)."""
        while waiting := [ns for ns in namespaces if self.arrivals[ns] < self.expected[ns]]:
            if time.perf_counter() > self.deadline:
                made = ", ".join(f"{ns} {self.arrivals[ns]}/{self.expected[ns]}" for ns in waiting)
                raise TimeoutError(f"the controllers made too few pods in time: {made}")
            self._tick()
            time.sleep(POLL_S)

    def _sleep(self, seconds: float) -> None:
        until = time.perf_counter() + seconds
        while time.perf_counter() < until:
            self._scheduler_runs("during a sleep")
            self._tick()
            time.sleep(POLL_S)

    def _scheduler_runs(self, when: str) -> None:
        """The case stops the moment the scheduler under test is gone: nothing it has
        left to measure can happen then, and waiting out a sleep or the timeout would
        only delay saying so."""
        if not self.meters["scheduler"].alive():
            raise SchedulerExited(f"the scheduler exited {when}")

    def _restart_scheduler(self, failover: bool) -> None:
        """Its leader killed once a standby serves, or every replica killed and started
        afresh; its next binding is timed from the kill."""
        if self.replicas is None:
            raise ValueError("only optimist and kube-scheduler, each alone on its pool, restart")
        if failover:
            self.replicas.await_standby()
            self.replicas.await_leader()
        at = time.perf_counter()
        if failover:
            self.replicas.kill_leader()
        else:
            self.replicas.restart()
        self.restarted.append((failover, at))

    def _restart_figures(self, failover: bool, at: float) -> Restarted:
        """From the kill to the first pod the scheduler bound after it: pods made bound
        (boundAtCreation) may reach the watch after the kill, and are no one's binding."""
        with self.watch.lock:
            bound = [t for k in self.created_at if (t := self.watch.bound_at.get(k, at)) > at]
        return Restarted(failover=failover, first_binding_s=min(bound) - at if bound else None)

    # --- creating ----------------------------------------------------------------------

    def _post(self, kind: str, namespace: str, bodies: list[dict[str, Any]]) -> list[Created]:
        """Create `bodies` in parallel; the server's objects, in order, each with when
        its answer came."""
        path = PATHS[kind].format(ns=namespace)

        def one(body: dict[str, Any]) -> Created:
            made = self.client.request("POST", path, body=body)
            return made, time.perf_counter()

        try:
            return list(self.pool.map(one, bodies))
        finally:
            self.watch.made()

    def _create_nodes(self, template: Manifest, count: int) -> list[str]:
        """Named here, not by the server, so that each carries its name as its
        kubernetes.io/hostname label from the start, as a kubelet registers it."""
        bodies = self._named(template, count, "node-")
        for node in bodies:
            meta = node["metadata"]
            meta["labels"] = {HOSTNAME_LABEL: meta["name"], **(meta.get("labels") or {})}
            if self.kwok_pool is not None:
                meta["annotations"] = {**(meta.get("annotations") or {}), **run_by(self.kwok_pool)}
        self._post("Node", "", bodies)
        names = [b["metadata"]["name"] for b in bodies]
        self.made_here += [("Node", name) for name in names]
        return names

    def _create_csi_nodes(self, manifests: list[dict[str, Any]]) -> None:
        self._create_all("CSINode", "", manifests)

    def _create_all(self, kind: str, namespace: str, bodies: list[dict[str, Any]]) -> None:
        """Objects of one kind, in parallel, a chunk at a time (the loop ticks between)."""
        for start in range(0, len(bodies), CREATORS * 8):
            made = self._post(kind, namespace, bodies[start : start + CREATORS * 8])
            self.made_here += [(kind, object_key(obj)) for obj, _ in made]
            self._tick()

    def _named(self, template: Manifest, count: int, prefix: str) -> list[dict[str, Any]]:
        """`count` copies of the template, each named here: its generateName (or
        `prefix`) and a number of this run's. The server's own generateName draws 5
        random characters, and among thousands of pods two draws meet (409
        AlreadyExists). A template's own name stands for one object alone."""
        out = []
        for _ in range(count):
            obj = copy_manifest(dict(template))
            meta = obj.setdefault("metadata", {})
            given = meta.pop("generateName", None)
            if not meta.get("name") or count > 1:
                meta["name"] = f"{given or prefix}{next(self.names)}"
            out.append(obj)
        return out

    def _create_volumes(self, namespace: str, pairs: list[tuple[Manifest, Manifest]]) -> None:
        """The volumes first, then their claims, each kind in parallel."""
        self._create_namespace(namespace)
        self._create_all("PersistentVolume", namespace, [dict(v) for v, _ in pairs])
        self._create_all("PersistentVolumeClaim", namespace, [dict(c) for _, c in pairs])

    def _create_namespace(self, name: str, labels: Mapping[str, str] | None = None) -> None:
        if name in self.namespaces:
            return
        body = {"metadata": {"name": name, "labels": dict(labels or {})}}
        try:
            self.client.request("POST", PATHS["Namespace"], body=body)
            self.namespaces_made.append(name)
        except ApiError as err:
            if err.status != 409:  # default and kube-system are there already
                raise
        self.namespaces.add(name)

    def _create_pods(
        self,
        index: int,
        namespace: str,
        batches: list[workload_objects.Batch],
        collect: bool,
        skip_wait: bool,
    ) -> None:
        self._create_namespace(namespace)
        window = self._open((namespace,), None) if collect else self.collecting
        # a chunk may span batches: a template rendered per pod makes batches of one,
        # which are posted in parallel all the same
        bodies = self._pod_bodies(batches)
        while chunk := list(itertools.islice(bodies, CREATORS * 8)):  # the loop ticks between
            made = self._post("Pod", namespace, chunk)
            self.pods_made += [object_key(obj) for obj, _ in made]
            ours = [(obj, at) for obj, at in made if scheduler_name(obj) in self.scheduler_names]
            self._made(ours, index, namespace, window)
            self._tick()
        if not skip_wait:
            self._wait_scheduled(index)
        if collect and window is not None:
            self._close(window)

    def _create_bound_pods(self, namespace: str, batches: list[workload_objects.Batch]) -> None:
        """Posted as the others are, each with the next node in spec.nodeName; not
        measured, not waited for (the server made them bound)."""
        self._create_namespace(namespace)
        bodies = self._pod_bodies(batches)
        while chunk := list(itertools.islice(bodies, CREATORS * 8)):
            for body, node in zip(chunk, self._next_nodes(len(chunk)), strict=True):
                body.setdefault("spec", {})["nodeName"] = node
            made = [object_key(obj) for obj, _ in self._post("Pod", namespace, chunk)]
            self.pods_made += made
            self.bound_at_creation += len(made)
            self._tick()

    def _pod_bodies(self, batches: list[workload_objects.Batch]) -> Iterator[dict[str, Any]]:
        """The pods of the batches, named (`_named`), made as they are taken."""
        for manifest, n in batches:
            for start in range(0, n, CREATORS * 8):
                yield from self._named(manifest, min(CREATORS * 8, n - start), "pod-")

    def _made(
        self, made: list[Created], index: int | None, namespace: str, window: ApiWindow | None
    ) -> None:
        """Pods of our profiles to measure: made by op `index`, or by a controller (None)."""
        for pod, at in made:
            key = object_key(pod)
            labels = (pod.get("metadata") or {}).get("labels") or {}
            self.created_at[key] = at
            self.labels[key] = labels
            if index is not None:
                self.by_op.setdefault(index, []).append(key)
            self.by_namespace.setdefault(namespace, []).append(key)
            if window is not None and window.takes(namespace, labels):
                window.pods.append(key)

    def _create_any(self, index: int, op: CreateAny) -> None:
        for i in range(op.count):
            made = op.template
            if isinstance(made, TextTemplate):  # each its own, as upstream renders them
                made = made.render(i, op.count)
            kind = str(made["kind"])
            if kind == "Namespace":
                meta = made["metadata"]
                self._create_namespace(str(meta["name"]), meta.get("labels") or {})
            elif kind == "Node":
                self._create_nodes(made, 1)
            elif kind == "Pod":
                self._create_pods(index, op.namespace, [(dict(made), 1)], False, True)
            elif kind in WORKLOAD_KINDS and self.kwok_pool is None:
                raise ValueError(f"kind {kind}: {NO_CONTROLLERS}")
            elif kind in PATHS:
                namespace = (made.get("metadata") or {}).get("namespace") or op.namespace
                self.expected[namespace] += workload_objects.pods_made_by(made)
                if "{ns}" in PATHS[kind]:
                    self._create_namespace(namespace)
                for obj, _ in self._post(kind, namespace, [dict(made)]):
                    self.made_here.append((kind, object_key(obj)))
            else:
                raise ValueError(f"kind {kind}: not made through the API server (yet)")

    # --- deleting and churn ------------------------------------------------------------

    def _delete_pods(self, op: DeletePods) -> None:
        selector = op.label_selector or {}
        keys = [
            key
            for key in self.by_namespace.get(op.namespace, [])
            if all(self.labels[key].get(k) == v for k, v in selector.items())
        ]
        task = DeleteTask(keys, op.per_second, time.perf_counter())
        self.deleting.append(task)
        self._tick()
        while not op.skip_wait and task in self.deleting:
            self._tick()
            time.sleep(POLL_S)

    def _pace_deletions(self) -> None:
        now = time.perf_counter()
        for task in list(self.deleting):
            if due := task.due(now):
                self._delete("Pod", due)
                self.deleted += len(due)
            if task.done:
                self.deleting.remove(task)

    def _delete(self, kind: str, keys: list[str]) -> None:
        try:
            self._each(kind, keys, "DELETE", query={"gracePeriodSeconds": "0"})
        finally:
            self.watch.made()

    def _each(self, kind: str, keys: list[str], method: str, **request: Any) -> None:
        """One request to each object of `keys` (namespace/name), in parallel; one gone
        meanwhile (404) needs none."""

        def one(key: str) -> None:
            namespace, _, name = key.rpartition("/")
            path = f"{PATHS[kind].format(ns=namespace)}/{name}"
            try:
                self.client.request(method, path, **request)
            except ApiError as err:
                if err.status != 404:
                    raise

        list(self.pool.map(one, keys))

    def _churn(self) -> None:
        now = time.perf_counter()
        for task in self.churn:
            task.turn(now, self._churn_make, self._remove_churned)

    def _remove_churned(self, made: list[tuple[str, str]]) -> None:
        for kind, key in made:
            self._delete(kind, [key])
            if kind == "Node":
                self.nodes_deleted.append(key)
                self._collect_orphans([key])

    def _collect_orphans(self, nodes: list[str]) -> None:
        """What the pod garbage collector does when a node goes: its pods are deleted
        (a pod bound to it while it went, too, once the watch shows it)."""
        gone = set(nodes)
        with self.watch.lock:
            orphans = [
                k for k, n in self.watch.nodes.items() if n in gone and k not in self.watch.gone
            ]
        self._delete("Pod", orphans)

    def _churn_make(self, manifest: Manifest, namespace: str) -> list[tuple[str, str]]:
        kind = str(manifest["kind"])
        if kind == "Node":
            return [("Node", name) for name in self._create_nodes(manifest, 1)]
        self._create_namespace(namespace)
        made = self._post(kind, namespace, self._named(manifest, 1, f"churn-{kind.lower()}-"))
        if kind == "Pod":
            self.pods_made += [object_key(obj) for obj, _ in made]
        else:
            self.made_here += [(kind, object_key(obj)) for obj, _ in made]
        if kind == "Pod" and scheduler_name(manifest) in self.scheduler_names:
            self.created_at.update((object_key(pod), at) for pod, at in made)
        return [(kind, object_key(obj)) for obj, _ in made]

    def remove_made(self) -> None:
        """Remove what the run made, on a server that outlives it: its pods, the other
        objects it made, its nodes, and the namespaces it made (finalized). Its pods
        with finalizers (upstream's pod-with-finalizer template) lose them first, as
        whoever set them would take them off, so that they go before the next run."""
        made = set(self.pods_made)
        finalized = [
            key
            for namespace in sorted({key.partition("/")[0] for key in made})
            for pod in list_all(self.client, PATHS["Pod"].format(ns=namespace))[0]
            if (pod["metadata"].get("finalizers") and (key := object_key(pod)) in made)
        ]
        unset = {"metadata": {"finalizers": None}}
        self._each("Pod", finalized, "PATCH", body=unset, content_type=MERGE_PATCH)
        self._delete("Pod", self.pods_made)
        # in the reverse of the order made, a run of one kind in parallel (a volume
        # workload makes thousands of volumes and claims)
        for kind, run in itertools.groupby(reversed(self.made_here), key=lambda made: made[0]):
            self._delete(kind, [key for _, key in run])
        remove_namespaces(self.client, self.namespaces_made)

    # --- measuring and waiting -----------------------------------------------------------

    def _cpu(self) -> dict[str, float]:
        return {name: meter.cpu_s() for name, meter in self.meters.items()}

    def _open(self, namespaces: tuple[str, ...], selector: dict[str, str] | None) -> ApiWindow:
        window = ApiWindow(time.perf_counter(), self._cpu(), namespaces, selector)
        self.collecting = window
        return window

    def _close(self, window: ApiWindow) -> None:
        window.end = time.perf_counter()
        after = self._cpu()
        window.cpu_s = {name: after[name] - window.cpu_before[name] for name in after}
        self.windows.append(window)
        self.collecting = None

    def _wait_scheduled(self, index: int) -> None:
        """Until every pod of the op is bound, as upstream's harness waits; pods that
        settle unschedulable fail the case, naming why."""
        keys = self.by_op.get(index, [])
        self._wait(keys)
        left, _ = self.watch.left(keys)
        if left:
            with self.watch.lock:
                reasons = Counter(self.watch.unschedulable.get(k, "?") for k in left)
            why = "; ".join(f"{n} {r}" for r, n in reasons.most_common(3))
            raise ValueError(
                f"{len(left)} of {len(keys)} pods not scheduled, where upstream's harness "
                f"waits for every one (skipWaitToCompletion: false): {why}"
            )

    def _wait(self, keys: list[str]) -> None:
        if not self._drive(keys):
            raise TimeoutError(f"pods not scheduled within {self.timeout_s:.0f}s")

    def _drive(self, keys: list[str]) -> bool:
        """Until `keys` are bound or settled, pacing deletions and churn meanwhile;
        False if the case ran out of time first."""

        def waiting() -> str:
            left, settled = self.watch.left(keys)
            if left and self.chaos is not None and self.chaos.down:
                return f"while {len(left)} pods waited for what a fault took down to come back"
            return (
                ""
                if not left or (settled and not self.deleting)
                else f"while {len(left)} pods waited"
            )

        return self._until(waiting)

    def _until(self, waiting: Callable[[], str]) -> bool:
        """Until `waiting()` says nothing waits (""; else what does, for the error of a
        scheduler found dead), pacing deletions and churn meanwhile; False if the case
        ran out of time first."""
        while doing := waiting():
            if time.perf_counter() > self.deadline:
                return False
            self._scheduler_runs(doing)
            self._tick()
            time.sleep(POLL_S)
        return True

    def _adopt(self) -> None:
        """The pods controllers made since the last turn: measured as the bench's own
        are, from when the watch first told of them."""
        for key, at, pod in self.watch.take_arrived():
            namespace = pod["metadata"]["namespace"]
            self.arrivals[namespace] += 1
            self.pods_made.append(key)
            if key not in self.created_at and scheduler_name(pod) in self.scheduler_names:
                self._made([(pod, at)], None, namespace, self.collecting)

    def _await_ready(self) -> bool:
        """Until every pod bound and not gone is Ready (KWOK runs it); False if the
        case ran out of time first."""
        while True:
            with self.watch.lock:
                w = self.watch
                done = w.ready_at.keys() | w.gone | w.ended
                waiting = [k for k in w.bound_at if k not in done]
            if not waiting:
                return True
            if time.perf_counter() > self.deadline:
                return False
            time.sleep(POLL_S)

    def _settled(self) -> tuple[int, int]:
        """The pods bound or reported unschedulable, and the pods made so far, those made
        bound left out of both."""
        with self.watch.lock:
            done = len(self.watch.bound_at) + len(self.watch.unschedulable)
        return max(done - self.bound_at_creation, 0), len(self.created_at)

    def _settled_share(self) -> float:
        done, made = self._settled()
        return done / made if made else 0.0

    def _tick(self) -> None:
        if self.chaos:
            self.chaos.tick()
        self._adopt()
        self._churn()
        self._pace_deletions()
        # without a kubelet (no KWOK), what a kubelet does for a pod deleted with a
        # grace period (an eviction), confirm it stopped, is done here
        terminating = self.watch.take_terminating()
        if terminating and self.kwok_pool is None:
            self._delete("Pod", terminating)
        now = time.perf_counter()
        if now >= self._next_progress:
            self._next_progress = now + 1.0
            self.progress(*self._settled())


def remove_namespaces(client: KubeClient, names: list[str]) -> None:
    """Delete namespaces and finalize them, the namespace controller's last step, which
    a control plane without controllers never takes (the caller removed their objects)."""
    for name in names:
        path = f"{PATHS['Namespace']}/{name}"
        client.request("DELETE", PATHS["Pod"].format(ns=name), {"gracePeriodSeconds": "0"})
        try:
            client.request("DELETE", path)
            namespace = client.request("GET", path)
        except ApiError as err:
            if err.status == 404:
                continue
            raise
        namespace["spec"] = {"finalizers": []}
        try:
            client.request("PUT", f"{path}/finalize", body=namespace)
        except ApiError as err:
            if err.status not in (404, 409):
                raise
