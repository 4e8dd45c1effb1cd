"""Plays a day (`day_plan`) on a living plane with one scheduler, and watches it live.

The timeline runs in this thread: objects made, Deployments scaled and rolled
out, a pool's KWOK stopped and started again, a pool drained (in a thread of
its own: it waits on disruption budgets). Once a second a sampler reads what a
user's dashboard would: pods bound, the scheduler's queues by kind (its own
`scheduler_pending_pods`, which both schedulers serve), the age of the oldest
pod still waiting (no upstream metric gives it; those made to fit nowhere left
out), conflicts, and the scheduler's CPU. A checker thread checks the
invariants on the API server's state at intervals; they are checked again at
the end, after the cluster has had `settle_s` to settle, with the controllers'
pods and the pending ones read.
"""

from __future__ import annotations

import ssl
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from benchmarks.apiserver.pod_watch import PodWatch
from benchmarks.controlplane.living_plane import LivingPlane
from benchmarks.day.day_checks import (
    Closures,
    EndState,
    daemon_pod,
    end_state,
    invariants_at_end,
    invariants_now,
    made_in_time,
    rolled_out,
)
from benchmarks.day.day_plan import NAMESPACE, NEVER_FITS_LABEL, POOL_LABEL, DayPlan, Happening
from benchmarks.report.instruments import ProcessTree
from cluster.manifests import condition, condition_true, scheduler_name
from optimist.explain import ExplainError, ask_endpoint
from optimist.kube.client import MERGE_PATCH, ApiError, Backoff, KubeClient
from optimist.kube.informer import list_all

QUEUES = ("active", "backoff", "unschedulable", "gated")
SAMPLE_S = 1.0
# what the pods made before a day that never settled get, beyond it: two of the longest backoffs
LAST_CHANCE_S = 20.0
DRAIN_RETRY_S = 1.0
# where each kind the day makes is created ({ns}: the day's namespace)
PATHS = {
    "Pod": "/api/v1/namespaces/{ns}/pods",
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
    "DaemonSet": "/apis/apps/v1/namespaces/{ns}/daemonsets",
    "Job": "/apis/batch/v1/namespaces/{ns}/jobs",
    "PodDisruptionBudget": "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
    "PodGroup": "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{ns}/podgroups",
}
ONCE = Backoff(tries=1)


@dataclass(frozen=True, slots=True)
class Sample:
    """One second of the day, as a dashboard shows it."""

    t_s: float
    bound: int  # pods first seen bound in this second
    pending: dict[str, int]  # by the scheduler's queue, from its metrics
    oldest_pending_s: float  # the longest any pod of ours has waited (never-fits left out)
    conflicts: float  # so far (placements the store refused; kube-scheduler has none)
    scheduler_cpu_s: float  # the scheduler's CPU in this second


@dataclass
class DayOutcome:
    scheduler: str
    samples: list[Sample]
    created_at: dict[str, float]  # pod -> when the watch first saw it (perf_counter)
    watch: PodWatch
    checks: list[tuple[float, list[str]]]  # (t_s, violations) of each check while it ran
    closed: list[str]  # pods placed on a node that was NotReady or cordoned
    end: EndState
    violations: list[str]  # the invariant checker's, at the end
    cpu_s: dict[str, float]  # per process, over the day and its settling
    happened: list[tuple[float, str]]  # (t_s, what) of the timeline, for the charts
    # nodes seen NotReady, and cordoned, at some time of the day
    closed_nodes: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


# the families the day reads, asked for by name: the scrape comes once a second, and the
# whole exposition cost optimist a fifth of its control process's CPU on a day (a
# scheduler that serves all whatever it is asked, as kube-scheduler does, is read whole)
SCRAPED = urllib.parse.urlencode(
    [("name[]", "scheduler_pending_pods"), ("name[]", "optimist_conflicts_total")]
)


def scrape(url: str, timeout_s: float = 5.0) -> dict[str, float]:
    """The scheduler's pending pods by queue and its conflicts so far, from /metrics."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # its own cert
    asked = f"{url}?{SCRAPED}"
    with urllib.request.urlopen(asked, timeout=timeout_s, context=context) as answer:
        text = answer.read().decode()
    out: dict[str, float] = {"conflicts": 0.0}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if family.name == "scheduler_pending_pods":
                out[sample.labels.get("queue", "")] = sample.value
            elif sample.name == "optimist_conflicts_total":
                out["conflicts"] += sample.value
    return out


class DayRunner:
    def __init__(
        self,
        plan: DayPlan,
        plane: LivingPlane,
        client: KubeClient,
        scheduler: str,
        meters: Mapping[str, ProcessTree],
        metrics_url: str,
        names: frozenset[str],
        *,
        check_every_s: float = 30.0,
        settle_s: float = 60.0,
        explain_address: str = "",
        progress: Callable[[str], None] = lambda line: None,
    ) -> None:
        self.plan, self.plane, self.client = plan, plane, client
        self.scheduler, self.meters, self.metrics_url = scheduler, meters, metrics_url
        self.names = names
        self.check_every_s, self.settle_s = check_every_s, settle_s
        self.explain_address = explain_address  # optimist's, to ask about pending pods
        self.progress = progress
        self.watch = PodWatch(client)
        # evictions a budget refuses (429) are tried again by the drain's loop, not waited on
        self.evictor = KubeClient(client.transport, client.bucket.qps, client.bucket.burst, ONCE)
        self.samples: list[Sample] = []
        self.created_at: dict[str, float] = {}
        self.waiting: dict[str, float] = {}  # pods of ours not yet bound, oldest first
        self.daemon_pods: set[str] = set()  # a drain leaves them be
        self.checks: list[tuple[float, list[str]]] = []
        self.not_ready, self.cordoned = Closures(), Closures()
        self.watched_pools: set[str] = set()  # pools whose readiness the sampler follows
        self.happened: list[tuple[float, str]] = []
        self.notes: list[str] = []
        self.rollouts = 0
        self.cut: set[str] | None = None  # the pods the end judges, where the day never settled
        self.start = 0.0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # --- the whole day ------------------------------------------------------------------

    def run(self) -> DayOutcome:
        """The day, its settling and its checks; the KWOKs of its own pools stop after it
        (the plane may serve more than the day: a test session's does)."""
        try:
            return self._live()
        finally:
            for pool in self.plan.own_kwok:
                if (name := self.plane.kwok_name(pool)) in self.plane.running:
                    self.plane.stop(name)

    def _live(self) -> DayOutcome:
        with self.watch:
            self._make_nodes()
            cpu_before = {name: m.cpu_s() for name, m in self.meters.items()}
            self.start = time.perf_counter()
            self._spawn(self._sample_forever, "sampler")
            self._spawn(self._check_forever, "checker")
            try:
                self._play()
                self._settle()
            finally:
                self._stop.set()
                for thread in self._threads:
                    thread.join(30)
            cpu_s = {name: m.cpu_s() - cpu_before[name] for name, m in self.meters.items()}
            listed, _ = list_all(self.client, f"/api/v1/namespaces/{NAMESPACE}/pods")
            pods = self._checked(listed)
            end = end_state(self.client, self.names, pods)
            if self.explain_address:
                for pending in end.pending:
                    pending.explain_agrees = _finds_no_node(self.explain_address, pending.pod)
            explained = [p.pod for p in end.pending if p.message]
            violations = invariants_at_end(self.client, self.names, self.watch, pods, explained)
            closed = [
                *self.not_ready.placed_while_closed(pods),
                *self.cordoned.placed_while_closed(pods),
            ]
        return DayOutcome(
            self.scheduler, self.samples, self.created_at, self.watch, self.checks,
            closed, end, violations, cpu_s, self.happened,
            {"not_ready": len(self.not_ready.closed), "cordoned": len(self.cordoned.closed)},
            self.notes,
        )  # fmt: skip

    def _make_nodes(self) -> None:
        for node in self.plan.nodes:
            self.client.request("POST", "/api/v1/nodes", body=node)
        for pool in self.plan.own_kwok:
            self.plane.start_kwok(pool)
        want = {n["metadata"]["name"] for n in self.plan.nodes}
        deadline = time.monotonic() + 120 + len(want) / 10
        while time.monotonic() < deadline:
            nodes, _ = list_all(self.client, "/api/v1/nodes")
            ready = {n["metadata"]["name"] for n in nodes if condition_true(n, "Ready")}
            if want <= ready:
                return
            time.sleep(0.5)
        raise TimeoutError(f"the day's {len(want)} nodes not Ready within the time given")

    def _play(self) -> None:
        """Each happening at its time; then the rest of the day."""
        self.client.request("POST", "/api/v1/namespaces", body={"metadata": {"name": NAMESPACE}})
        for happening in self.plan.happenings:
            if self._stop.wait(max(0.0, self.start + happening.at_s - time.perf_counter())):
                return
            self._do(happening)
        self._stop.wait(max(0.0, self.start + self.plan.duration_s - time.perf_counter()))

    def _do(self, h: Happening) -> None:
        t_s = time.perf_counter() - self.start
        if h.what == "create" and h.manifest is not None:
            kind = h.manifest["kind"]
            try:
                self.client.request("POST", PATHS[kind].format(ns=NAMESPACE), body=h.manifest)
            except ApiError as err:
                if err.status != 404 or kind != "PodGroup":
                    raise
                self._note("no PodGroup CRD on this server: the gangs' Jobs run as plain Jobs")
            if kind not in ("Job", "Pod"):
                self.happened.append((t_s, f"{kind} {h.manifest['metadata']['name']}"))
        elif h.what in ("scale", "rollout") and h.manifest is not None:
            self._change(h)
        elif h.what == "node-down":
            self.watched_pools.add(h.pool)
            self.plane.stop(self.plane.kwok_name(h.pool))
            self.happened.append((t_s, f"pool {h.pool}: its KWOK stopped"))
        elif h.what == "node-up":
            self._spawn(lambda: self.plane.start_kwok(h.pool), self.plane.kwok_name(h.pool))
            self.happened.append((t_s, f"pool {h.pool}: its KWOK started again"))
        elif h.what == "drain":
            self._spawn(lambda: self._drain(h.pool), f"drain-{h.pool}")
            self.happened.append((t_s, f"pool {h.pool}: cordoned, its pods evicted"))

    def _change(self, h: Happening) -> None:
        assert h.manifest is not None
        name = h.manifest["metadata"]["name"]
        path = f"{PATHS['Deployment'].format(ns=NAMESPACE)}/{name}"
        if h.what == "scale":
            body: dict[str, Any] = {"spec": {"replicas": h.replicas}}
        else:
            self.rollouts += 1
            annotations = {"day.optimist.dev/rollout": str(self.rollouts)}
            body = {"spec": {"template": {"metadata": {"annotations": annotations}}}}
        self.client.request("PATCH", path, body=body, content_type=MERGE_PATCH)

    def _drain(self, pool: str) -> None:
        """As `kubectl drain --ignore-daemonsets`: cordon, then evict until nothing is left,
        retrying what a disruption budget refuses. What is on the nodes is read from the
        watch: listing each node's pods each second would load the server."""
        names = {n["metadata"]["name"] for n in self._listed("nodes", f"{POOL_LABEL}={pool}")}
        cordon = {"spec": {"unschedulable": True}}
        for name in sorted(names):
            path = f"/api/v1/nodes/{name}"
            self.client.request("PATCH", path, body=cordon, content_type=MERGE_PATCH)
            self.cordoned.close(name, time.time())
        while not self._stop.is_set():
            with self.watch.lock:
                done = self.watch.gone | self.watch.ended | self.watch.terminating
                left = [
                    k
                    for k, node in self.watch.nodes.items()
                    if node in names and k not in done and k not in self.daemon_pods
                ]
            if not left:
                t_s = time.perf_counter() - self.start
                self.happened.append((t_s, f"pool {pool}: drained, nothing left to evict"))
                return
            for key in left:
                self._evict(key)
            self._stop.wait(DRAIN_RETRY_S)

    def _listed(self, resource: str, labels: str) -> list[dict[str, Any]]:
        """A cluster-wide list by label selector (a pool's nodes: one page)."""
        query = {"labelSelector": labels}
        return list(self.client.request("GET", f"/api/v1/{resource}", query).get("items") or [])

    def _evict(self, key: str) -> None:
        namespace, name = key.split("/", 1)
        eviction = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/eviction"
        with suppress(ApiError):  # 429: a budget says not now; 404: gone already
            self.evictor.request("POST", path, body=eviction)

    def _settle(self) -> None:
        """After the day: until every pod of ours is bound or told why not (as the watch
        shows them: listing every pod each time would load the server), and every
        Deployment rolled out, `settle_s` at most. Running Jobs make pods all the while:
        at the deadline, the pods made so far get LAST_CHANCE_S more, and those made
        after are left out of the end's checks while still pending (`self.cut`)."""
        deadline = time.perf_counter() + self.settle_s
        path = PATHS["Deployment"].format(ns=NAMESPACE)
        while time.perf_counter() < deadline and not self._stop.is_set():
            deployments, _ = list_all(self.client, path)
            if not self._untold(list(self.created_at)) and all(rolled_out(d) for d in deployments):
                return
            self._stop.wait(2.0)
        self._note(f"the cluster had not settled {self.settle_s:g} s after the day")
        self.cut = set(self.created_at)
        last = time.perf_counter() + LAST_CHANCE_S
        while self._untold(self.cut) and time.perf_counter() < last:
            self._stop.wait(0.5)

    def _untold(self, pods: Iterable[str]) -> list[str]:
        """The pods of `pods` neither bound, gone, ended nor told why not."""
        with self.watch.lock:
            told = self.watch.bound_at.keys() | self.watch.gone | self.watch.ended
            told |= self.watch.unschedulable.keys()
        return [k for k in pods if k not in told]

    def _checked(self, pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
        checked = made_in_time(pods, self.cut)
        if late := len(pods) - len(checked):
            self._note(f"{late} pods made after the settling ended were left out, pending")
        return checked

    # --- watching ---------------------------------------------------------------------

    def _check_forever(self) -> None:
        """The invariants on the server's state every `check_every_s` (a thread of its own:
        listing every pod takes seconds on a large cluster, and the sampler keeps time)."""
        while not self._stop.wait(self.check_every_s):
            t_s = time.perf_counter() - self.start
            self.checks.append((t_s, invariants_now(self.client, self.names, self.watch)))

    def _sample_forever(self) -> None:
        bound_before = 0
        cpu_before = self.meters["scheduler"].cpu_s()
        while not self._stop.wait(self._till_next_sample()):
            t_s = time.perf_counter() - self.start
            self._arrivals()
            bound = len(self.watch.bound_at)
            cpu = self.meters["scheduler"].cpu_s()
            try:
                scraped = scrape(self.metrics_url)
            except OSError:
                scraped = {}
            self.samples.append(
                Sample(
                    t_s, bound - bound_before, {q: int(scraped.get(q, 0)) for q in QUEUES},
                    self._oldest_waiting(), scraped.get("conflicts", 0.0), cpu - cpu_before,
                )
            )  # fmt: skip
            bound_before, cpu_before = bound, cpu
            self._follow_readiness()
            if len(self.samples) % 10 == 0:
                self.progress(f"{self.scheduler}: {t_s:.0f} s, {bound} pods bound")

    def _till_next_sample(self) -> float:
        return max(0.0, self.start + (len(self.samples) + 1) * SAMPLE_S - time.perf_counter())

    def _arrivals(self) -> None:
        for key, when, pod in self.watch.take_arrived():
            if daemon_pod(pod):
                self.daemon_pods.add(key)
            labels = pod["metadata"].get("labels") or {}
            if scheduler_name(pod) not in self.names:
                continue
            self.created_at[key] = when
            if labels.get(NEVER_FITS_LABEL) != "true":
                self.waiting[key] = when

    def _oldest_waiting(self) -> float:
        """The age of the oldest pod of ours neither bound nor gone (the oldest first)."""
        now = time.perf_counter()
        with self.watch.lock:
            done = self.watch.bound_at.keys() | self.watch.gone | self.watch.ended
        for key in list(self.waiting):
            if key not in done:
                return now - self.waiting[key]
            del self.waiting[key]
        return 0.0

    def _follow_readiness(self) -> None:
        """The nodes of the pools made to fail: when each turned NotReady and Ready again,
        as the API server stamps its Ready condition (the sampler looks once a second; a
        scheduler may act within the same second)."""
        for pool in self.watched_pools:
            for node in self._listed("nodes", f"{POOL_LABEL}={pool}"):
                name, ready = node["metadata"]["name"], condition(node, "Ready") or {}
                stamp = ready.get("lastTransitionTime")
                at = datetime.fromisoformat(stamp).timestamp() if stamp else time.time()
                if ready.get("status") == "True":
                    self.not_ready.reopen(name, at)
                else:
                    self.not_ready.close(name, at)

    def _spawn(self, target: Callable[[], object], name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _note(self, note: str) -> None:
        if note not in self.notes:
            self.notes.append(note)


def _finds_no_node(address: str, pod: str) -> bool | None:
    """Whether `optimist explain` agrees the pod fits nowhere now (None: it cannot say)."""
    try:
        return not ask_endpoint(address, pod).unit.fits
    except ExplainError:
        return None
