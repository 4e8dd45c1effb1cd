"""The cluster as a real API server shows it: informers in, bindings and reports out.

Informers (one thread each) turn watch events into the batches the control
loop takes (`ClusterAdapter`): nodes for the node store; pods of our
profiles, unbound, for the dispatcher; pods bound by anybody else (another
scheduler, or before optimist started) for the usage shards see; deletions;
namespaces' labels; PodGroups, PodDisruptionBudgets, ElasticQuotas and
Reservations (custom resources: where their definitions are not installed,
there are none). PriorityClasses fill in `spec.priority` where admission has
not. The selectors of Services, ReplicationControllers, ReplicaSets and
StatefulSets give each new pod the selector its default spreading counts by;
a pod whose controller has not been seen yet (its watch is a moment behind the
pods') waits for it, `controller_wait_s` at most.

Bindings go out through the `pods/binding` subresource from a pool of
threads, as many at once as the client's rate limit lets through. Reports
(events, the PodScheduled condition, nominatedNodeName) go from one thread of
their own through a bounded queue: they never hold up a binding, and when the
API cannot keep up they are dropped and counted, as client-go's event
broadcaster drops them.
"""

from __future__ import annotations

import functools
import json
import logging
import queue
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from cluster.cluster_adapter import Binding, ClusterState
from cluster.disruption import DisruptionBudget
from cluster.errors import InvalidObject
from cluster.gpus import GPU_INDICES_ANNOTATION, format_indices
from cluster.manifests import (
    TERMINAL_PHASES,
    budget_from_manifest,
    node_from_manifest,
    pod_from_manifest,
    podgroup_from_manifest,
    reservation_from_manifest,
    terminated,
)
from cluster.objects import Node, Pod, PodGroup
from cluster.quota import Quota, quota_from_manifest
from cluster.reservations import Reservation
from cluster.workload_selectors import WorkloadSelectors, workload_selector_from_manifest
from optimist.kube.client import ApiError, KubeClient
from optimist.kube.informer import Informer, list_all, object_key

log = logging.getLogger(__name__)

PATHS = {
    "nodes": "/api/v1/nodes",
    "pods": "/api/v1/pods",
    "podgroups": "/apis/scheduling.x-k8s.io/v1alpha1/podgroups",
    "poddisruptionbudgets": "/apis/policy/v1/poddisruptionbudgets",
    "priorityclasses": "/apis/scheduling.k8s.io/v1/priorityclasses",
    "namespaces": "/api/v1/namespaces",
    "elasticquotas": "/apis/scheduling.x-k8s.io/v1alpha1/elasticquotas",
    "reservations": "/apis/scheduling.koordinator.sh/v1alpha1/reservations",
    "services": "/api/v1/services",
    "replicationcontrollers": "/api/v1/replicationcontrollers",
    "replicasets": "/apis/apps/v1/replicasets",
    "statefulsets": "/apis/apps/v1/statefulsets",
}
# the selector kinds, each watched before pods are
_SELECTOR_KINDS = {
    "services": "Service",
    "replicationcontrollers": "ReplicationController",
    "replicasets": "ReplicaSet",
    "statefulsets": "StatefulSet",
}
CONTROLLER_WAIT_S = 2.0


_WRITTEN_KEPT = 100_000  # pods whose last report is remembered, to aggregate repeats
REPORTERS = 4  # threads writing reports (events and status patches)


@dataclass(slots=True)
class _Written:
    """What was last written about one pod."""

    event: str = ""  # the Event's name
    reason: str = ""
    message: str = ""
    count: int = 0
    status: str | None = None  # `_sameness` of the last status written


def _sameness(status: dict[str, Any] | None) -> str | None:
    """A status patch as compared with the last: its condition's times left out."""
    if status is None:
        return None
    conditions = [
        {k: v for k, v in c.items() if k != "lastTransitionTime"}
        for c in status.get("conditions", [])
    ]
    return json.dumps({**status, "conditions": conditions}, sort_keys=True)


@dataclass(frozen=True, slots=True)
class _Report:
    """One write about a pod: an event, and optionally a status patch."""

    pod: str  # namespace/name
    uid: str
    event_type: str  # Normal, Warning
    reason: str  # Scheduled, FailedScheduling, Preempted...
    message: str
    status: dict[str, Any] | None = None  # merged into the pod's status, if given


class KubernetesAdapter:
    """`ClusterAdapter` over a real API server."""

    def __init__(
        self,
        client: KubeClient,
        scheduler_names: frozenset[str],
        *,
        component: str = "optimist",
        bind_workers: int = 16,
        report_queue: int = 10_000,
        watch_timeout_s: float = 300.0,
        explain_hint: bool = False,
        controller_wait_s: float = CONTROLLER_WAIT_S,
    ) -> None:
        self.client = client
        self.explain_hint = explain_hint  # see `report_unschedulable`
        # reports draw on a rate limit of their own, as client-go's event broadcaster does:
        # a burst of FailedScheduling events never makes a binding wait
        self._report_client = client.sibling(client.bucket.qps, client.bucket.burst)
        self.scheduler_names = scheduler_names
        self.component = component
        self._lock = threading.Lock()
        self._arrived = threading.Event()  # set by every watch event: wakes an idle loop
        self._new_pods: dict[str, dict[str, Any]] = {}  # key -> manifest, in arrival order
        self._deleted_pods: list[str] = []
        self._running: dict[str, Pod] = {}  # bound by others, not yet taken
        self._nodes: dict[str, Node] = {}
        self._changed_nodes: dict[str, Node] = {}
        self._deleted_nodes: list[str] = []
        self._groups: list[PodGroup] = []
        self._namespaces: dict[str, dict[str, str]] = {}  # name -> labels, as last told
        self._changed_namespaces: dict[str, dict[str, str]] = {}
        self._deleted_namespaces: list[str] = []
        self._budgets: list[DisruptionBudget] = []
        self._quotas: list[Quota] = []
        self._reservations: list[Reservation] = []
        self._priorities: dict[str, int] = {}  # PriorityClass name -> value
        self._default_priority: tuple[str, int] | None = None  # the globalDefault class
        self.selectors = WorkloadSelectors()
        self.controller_wait_s = controller_wait_s
        self.awaiting: dict[str, float] = {}  # pod key -> when it began to wait for its controller
        self._pending: dict[str, str] = {}  # our unbound pods: key -> what a change compares
        self._bound: dict[str, str] = {}  # key -> node, of every pod bound we know of
        self._uids: dict[str, str] = {}  # pod key -> uid, for events
        self.invalid: list[tuple[str, str]] = []  # (object, error) of objects left out
        self.reports_dropped = 0
        # reports go out from several threads, a pod's always from the same one (its
        # writes stay in order, and each thread aggregates its own pods' events): one
        # thread, a request at a time, fell minutes behind a few hundred pods a second,
        # and a pending pod's condition waited behind other pods' Scheduled events
        self._reports: list[queue.Queue[_Report | None]] = [
            queue.Queue(report_queue // REPORTERS) for _ in range(REPORTERS)
        ]
        self._written: list[OrderedDict[str, _Written]] = [OrderedDict() for _ in range(REPORTERS)]
        self._binders = ThreadPoolExecutor(bind_workers, thread_name_prefix="bind")
        handlers: dict[str, Callable[[str, dict[str, Any]], None]] = {
            "priorityclasses": self._on_priority_class,
            "namespaces": self._on_namespace,
            "nodes": self._on_node,
            "podgroups": self._on_group,
            "poddisruptionbudgets": self._on_budget,
            "elasticquotas": self._on_quota,
            "reservations": self._on_reservation,
            **{
                path: functools.partial(self._on_selector, kind)
                for path, kind in _SELECTOR_KINDS.items()
            },
            "pods": self._on_pod,
        }
        self.informers = {
            name: Informer(
                client, PATHS[name], handle, watch_timeout_s=watch_timeout_s, arrived=self._arrived
            )
            for name, handle in handlers.items()
        }
        self._reporters = [
            threading.Thread(target=self._report_forever, args=(i,), daemon=True)
            for i in range(REPORTERS)
        ]

    def start(self, sync_timeout_s: float = 60.0) -> KubernetesAdapter:
        """Start the informers, each once the one before has listed (priority classes
        before pods, nodes before pods), and return when all have."""
        for reporter in self._reporters:
            reporter.start()
        for name, informer in self.informers.items():
            informer.start()
            if not informer.synced.wait(sync_timeout_s):
                raise TimeoutError(f"{PATHS[name]}: not listed within {sync_timeout_s:g} s")
        return self

    def stop(self, drain_s: float = 2.0) -> None:
        """Stop watching; bindings under way finish, reports queued get `drain_s` to go."""
        for informer in self.informers.values():
            informer.stop()
        self._binders.shutdown(wait=True)
        self.flush_reports(drain_s)
        for reports in self._reports:
            reports.put(None)

    def wait_for_events(self, timeout_s: float) -> bool:
        """Until a watch brings something (True), `timeout_s` at most: an idle loop sleeps
        here rather than polling the queues (which cost it a few per cent of a core)."""
        woken = self._arrived.wait(timeout_s)
        self._arrived.clear()  # before the loop takes what came: nothing is missed
        return woken

    # --- watch handlers (informer threads) -------------------------------

    def _on_priority_class(self, kind: str, obj: dict[str, Any]) -> None:
        name = str(obj["metadata"]["name"])
        with self._lock:
            if kind == "DELETED":
                self._priorities.pop(name, None)
                if self._default_priority and self._default_priority[0] == name:
                    self._default_priority = None
                return
            value = obj.get("value")
            if not isinstance(value, int):
                self._left_out(f"PriorityClass {name}", f"value: {value!r} is not an integer")
                return
            self._priorities[name] = value
            if obj.get("globalDefault"):
                self._default_priority = (name, value)

    def _on_namespace(self, kind: str, obj: dict[str, Any]) -> None:
        name = str(obj["metadata"]["name"])
        labels = obj["metadata"].get("labels") or {}
        with self._lock:
            if kind == "DELETED":
                if self._namespaces.pop(name, None) is not None:
                    self._changed_namespaces.pop(name, None)
                    self._deleted_namespaces.append(name)
            elif self._namespaces.get(name) != labels:
                self._namespaces[name] = self._changed_namespaces[name] = dict(labels)

    def _on_node(self, kind: str, obj: dict[str, Any]) -> None:
        name = str(obj["metadata"]["name"])
        if kind == "DELETED":
            with self._lock:
                if self._nodes.pop(name, None) is not None:
                    self._changed_nodes.pop(name, None)
                    self._deleted_nodes.append(name)
            return
        try:
            node = node_from_manifest(obj)
        except InvalidObject as err:
            self._left_out(f"Node {name}", str(err))
            return
        with self._lock:
            if self._nodes.get(name) != node:  # a heartbeat changes nothing a shard reads
                self._nodes[name] = node
                self._changed_nodes[name] = node

    def _on_group(self, kind: str, obj: dict[str, Any]) -> None:
        if kind == "DELETED":
            return  # its pods go on as single pods once they are gone; nothing is held
        try:
            group = podgroup_from_manifest(obj)
        except InvalidObject as err:
            self._left_out(f"PodGroup {object_key(obj)}", str(err))
            return
        with self._lock:
            self._groups.append(group)

    def _on_budget(self, kind: str, obj: dict[str, Any]) -> None:
        if kind == "DELETED":
            return
        try:
            budget = budget_from_manifest(obj)
        except InvalidObject as err:
            self._left_out(f"PodDisruptionBudget {object_key(obj)}", str(err))
            return
        with self._lock:
            self._budgets.append(budget)

    def _on_quota(self, kind: str, obj: dict[str, Any]) -> None:
        if kind != "ADDED":  # the tree takes quotas as they come; changing one needs a restart
            if kind == "MODIFIED":
                log.warning(
                    "ElasticQuota %s changed: optimist sees it at its next start", object_key(obj)
                )
            return
        try:
            quota = quota_from_manifest(obj)
        except InvalidObject as err:
            self._left_out(f"ElasticQuota {object_key(obj)}", str(err))
            return
        with self._lock:
            self._quotas.append(quota)

    def _on_reservation(self, kind: str, obj: dict[str, Any]) -> None:
        if kind != "ADDED":
            return  # used once, then gone: what it holds expires with it (hold_ttl_s)
        try:
            reservation = reservation_from_manifest(obj, time.time())
        except InvalidObject as err:
            self._left_out(f"Reservation {object_key(obj)}", str(err))
            return
        if reservation.pod.scheduler_name in self.scheduler_names:
            with self._lock:
                self._reservations.append(reservation)

    def _on_selector(self, kind: str, event: str, obj: dict[str, Any]) -> None:
        """A Service's or controller's selector (its status changes change nothing here)."""
        if event == "DELETED":
            meta = obj.get("metadata") or {}
            namespace = str(meta.get("namespace") or "default")
            self.selectors.remove(kind, namespace, str(meta.get("name")))
            return
        try:
            self.selectors.put(workload_selector_from_manifest({**obj, "kind": kind}))
        except InvalidObject as err:
            self._left_out(f"{kind} {object_key(obj)}", str(err))

    def _on_pod(self, kind: str, obj: dict[str, Any]) -> None:
        key = object_key(obj)
        meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        phase = (obj.get("status") or {}).get("phase")
        gone = kind == "DELETED" or phase in TERMINAL_PHASES
        with self._lock:
            if gone:
                self._pending.pop(key, None)
                self._new_pods.pop(key, None)
                self._running.pop(key, None)
                self._uids.pop(key, None)
                if kind == "DELETED" or key in self._bound:
                    self._bound.pop(key, None)
                    self._deleted_pods.append(key)
                return
            self._uids[key] = str(meta.get("uid") or "")
            node = spec.get("nodeName")
            if node:
                self._pending.pop(key, None)
                self._new_pods.pop(key, None)
                if self._bound.get(key) == node:
                    return  # a binding of ours, confirmed; or a change of a bound pod
                self._bound[key] = node
                pod = self._parse_bound(obj)
                if pod is not None:
                    self._running[key] = pod
                return
            if (spec.get("schedulerName") or "default-scheduler") not in self.scheduler_names:
                return
            if meta.get("deletionTimestamp"):
                return  # on its way out: not to be placed
            # status changes (our own reports among them) are no reason to schedule again
            seen = repr((spec, meta.get("labels"), meta.get("annotations")))
            if self._pending.get(key) == seen:
                return
            self._pending[key] = seen
            self._new_pods[key] = obj

    def _parse_bound(self, obj: dict[str, Any]) -> Pod | None:
        try:
            return pod_from_manifest(self._with_priority(obj))
        except InvalidObject as err:
            # its room is used all the same; shards cannot know how much
            self._left_out(f"Pod {object_key(obj)}", f"bound, but not counted: {err}")
            return None

    def _with_priority(self, obj: dict[str, Any]) -> dict[str, Any]:
        """The pod with spec.priority from its PriorityClass, where admission has not set
        it (the lock is held)."""
        spec = obj.get("spec") or {}
        if "priority" in spec:
            return obj
        name = spec.get("priorityClassName")
        value = self._priorities.get(name) if name else None
        if value is None and not name and self._default_priority:
            value = self._default_priority[1]
        if value is None:
            return obj
        return {**obj, "spec": {**spec, "priority": value}}

    def _left_out(self, what: str, why: str) -> None:
        log.warning("%s left out: %s", what, why)
        self.invalid.append((what, why))

    @property
    def retries(self) -> int:
        """Requests retried so far, bindings' and reports' together."""
        return self.client.retries + self._report_client.retries

    def bound_pods(self) -> dict[str, str]:
        """pod -> node, of every bound pod the watch has shown (for reconciling)."""
        with self._lock:
            return dict(self._bound)

    def node_names(self) -> set[str]:
        with self._lock:
            return set(self._nodes)

    def snapshot(self) -> ClusterState:
        """Nodes and namespaces as the watches keep them; bound pods listed afresh,
        since the watch keeps no pod whole."""
        items, _ = list_all(self.client, PATHS["pods"])
        bound = [
            obj for obj in items if (obj.get("spec") or {}).get("nodeName") and not terminated(obj)
        ]
        with self._lock:
            parsed = [self._parse_bound(obj) for obj in bound]
            return ClusterState(
                list(self._nodes.values()),
                {name: dict(labels) for name, labels in self._namespaces.items()},
                [pod for pod in parsed if pod is not None],
            )

    # --- ClusterAdapter (the control loop's thread) ----------------------

    def take_new_pods(self) -> tuple[list[Pod], list[tuple[str, InvalidObject]]]:
        with self._lock:
            taken, self._new_pods = self._new_pods, {}
            manifests = [(key, self._with_priority(obj)) for key, obj in taken.items()]
        pods: list[Pod] = []
        errors: list[tuple[str, InvalidObject]] = []
        now = time.monotonic()
        for key, manifest in manifests:
            try:
                pod = pod_from_manifest(manifest)
            except InvalidObject as err:
                errors.append((key, err))
                continue
            if self.selectors.awaits_controller(pod):
                began = self.awaiting.setdefault(key, now)
                if now - began < self.controller_wait_s:
                    with self._lock:  # taken again next time (as changed, if it changed)
                        if key in self._pending:
                            self._new_pods.setdefault(key, taken[key])
                            continue
                    self.awaiting.pop(key)
                    continue  # deleted or bound meanwhile
            self.awaiting.pop(key, None)
            pods.append(self.selectors.with_spread_selector(pod))
        return pods, errors

    def take_running_pods(self) -> list[Pod]:
        with self._lock:
            taken, self._running = self._running, {}
        return list(taken.values())

    def take_deleted_pods(self) -> list[str]:
        with self._lock:
            taken, self._deleted_pods = self._deleted_pods, []
        return taken

    def take_node_events(self) -> tuple[list[Node], list[str]]:
        with self._lock:
            made, self._changed_nodes = list(self._changed_nodes.values()), {}
            gone, self._deleted_nodes = self._deleted_nodes, []
        return made, gone

    def take_namespace_events(self) -> tuple[dict[str, dict[str, str]], list[str]]:
        with self._lock:
            made, self._changed_namespaces = self._changed_namespaces, {}
            gone, self._deleted_namespaces = self._deleted_namespaces, []
        return made, gone

    def take_new_groups(self) -> list[PodGroup]:
        with self._lock:
            taken, self._groups = self._groups, []
        return taken

    def take_new_budgets(self) -> list[DisruptionBudget]:
        with self._lock:
            taken, self._budgets = self._budgets, []
        return taken

    def take_new_quotas(self) -> list[Quota]:
        with self._lock:
            taken, self._quotas = self._quotas, []
        return taken

    def take_new_reservations(self) -> list[Reservation]:
        with self._lock:
            taken, self._reservations = self._reservations, []
        return taken

    def bind(self, bindings: list[Binding]) -> list[str | None]:
        errors = list(self._binders.map(self._bind_one, bindings))
        for binding, error in zip(bindings, errors, strict=True):
            if error is None:
                self._report(
                    binding.pod,
                    "Normal",
                    "Scheduled",
                    f"Successfully assigned {binding.pod} to {binding.node}",
                )
        return errors

    def _bind_one(self, binding: Binding) -> str | None:
        namespace, name = binding.pod.split("/", 1)
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": binding.node},
        }
        with self._lock:
            bound = self._bound.get(binding.pod)
            if bound is None:
                self._bound[binding.pod] = binding.node  # the watch's confirmation is ours
        if bound is not None:  # the API would refuse it (409): no need to ask
            return f"binding {binding.pod} to {binding.node}: already assigned to node {bound}"
        try:
            if binding.gpus:  # the device plugin reads them when the kubelet starts the pod
                annotations = {GPU_INDICES_ANNOTATION: format_indices(binding.gpus)}
                self.client.request(
                    "PATCH",
                    f"/api/v1/namespaces/{namespace}/pods/{name}",
                    body={"metadata": {"annotations": annotations}},
                    content_type="application/strategic-merge-patch+json",
                )
            self.client.request(
                "POST", f"/api/v1/namespaces/{namespace}/pods/{name}/binding", body=body
            )
            return None
        except ApiError as err:
            with self._lock:
                if self._bound.get(binding.pod) == binding.node:  # the watch says nothing else
                    del self._bound[binding.pod]
            return f"binding {binding.pod} to {binding.node}: {err}"

    def evict(self, pods: list[str]) -> list[str | None]:
        errors: list[str | None] = []
        for key in pods:
            namespace, name = key.split("/", 1)
            try:
                self.client.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}")
                errors.append(None)
            except ApiError as err:
                errors.append(f"deleting {key}: {err}")
        return errors

    def report_unschedulable(self, failures: list[tuple[str, str, str]]) -> None:
        """(pod, reason, message) for pods whose attempt failed: a FailedScheduling
        event and the PodScheduled condition, as kube-scheduler writes them. `reason`
        is the condition's: Unschedulable, SchedulerError or SchedulingGated. With
        `explain_hint`, the condition's message (not the event's, which stays upstream's)
        ends with the command that explains the pod plugin by plugin."""
        for pod, reason, message in failures:
            said = message
            if self.explain_hint and reason == "Unschedulable":
                said = f"{message} Each plugin's verdict on each node: optimist explain {pod}"
            condition = {
                "type": "PodScheduled",
                "status": "False",
                "reason": reason,
                "message": said,
                "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            event = "FailedScheduling" if reason != "SchedulingGated" else ""
            self._report(pod, "Warning", event, message, {"conditions": [condition]})

    def nominate(self, nominations: dict[str, str]) -> None:
        """status.nominatedNodeName of pods that preempted room on a node."""
        for pod, node in nominations.items():
            self._report(pod, "", "", "", {"nominatedNodeName": node})

    def _report(
        self,
        pod: str,
        event_type: str,
        reason: str,
        message: str,
        status: dict[str, Any] | None = None,
    ) -> None:
        uid = self._uids.get(pod, "")
        try:
            shard = self._reports[zlib.crc32(pod.encode()) % REPORTERS]
            shard.put_nowait(_Report(pod, uid, event_type, reason, message, status))
        except queue.Full:
            self.reports_dropped += 1

    def _report_forever(self, shard: int) -> None:
        reports, written = self._reports[shard], self._written[shard]
        while (report := reports.get()) is not None:
            try:
                self._write(report, written)
            finally:
                reports.task_done()

    def _write(self, report: _Report, written: OrderedDict[str, _Written]) -> None:
        """One report, aggregated as client-go's event correlator does: a status the pod
        already has is not written again, and an event that repeats the last one about
        the pod counts up on it instead of making another (an unschedulable pod retried
        for an hour is one event, not thousands)."""
        namespace, name = report.pod.split("/", 1)
        last = written.pop(report.pod, None) or _Written()
        written[report.pod] = last  # the most recent last, for the cap below
        if len(written) > _WRITTEN_KEPT // REPORTERS:
            written.popitem(last=False)
        if report.status and "nominatedNodeName" in report.status:
            with self._lock:
                if report.pod in self._bound:  # bound meanwhile: from v1.35 the binding
                    report = replace(report, status=None)  # clears it, and it is refused
        try:
            status = _sameness(report.status)
            if report.status is not None and status != last.status:
                self._report_client.request(
                    "PATCH",
                    f"/api/v1/namespaces/{namespace}/pods/{name}/status",
                    body={"status": report.status},
                    content_type="application/strategic-merge-patch+json",
                )
                last.status = status
            if report.reason:
                self._write_event(report, last)
        except ApiError as err:
            if err.status != 404:  # a pod gone meanwhile needs no report
                log.warning("reporting %s on %s failed: %s", report.reason, report.pod, err)

    def _write_event(self, report: _Report, last: _Written) -> None:
        namespace = report.pod.split("/", 1)[0]
        events = f"/api/v1/namespaces/{namespace}/events"
        if last.event and (last.reason, last.message) == (report.reason, report.message):
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            try:
                self._report_client.request(
                    "PATCH",
                    f"{events}/{last.event}",
                    body={"count": last.count + 1, "lastTimestamp": now},
                    content_type="application/merge-patch+json",
                )
                last.count += 1
                return
            except ApiError as err:
                if err.status != 404:  # gone (events expire): a new one below
                    raise
        made = self._report_client.request("POST", events, body=self._event(report))
        last.event, last.reason, last.message = (
            made["metadata"]["name"],
            report.reason,
            report.message,
        )
        last.count = 1

    def _event(self, report: _Report) -> dict[str, Any]:
        namespace, name = report.pod.split("/", 1)
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{name}.", "namespace": namespace},
            "involvedObject": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": name,
                "namespace": namespace,
                "uid": report.uid,
            },
            "type": report.event_type,
            "reason": report.reason,
            "message": report.message,
            "source": {"component": self.component},
            "reportingComponent": self.component,
            "action": "Binding" if report.reason == "Scheduled" else "Scheduling",
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }

    def flush_reports(self, timeout_s: float = 10.0) -> bool:
        """Wait until every report queued so far is written (tests, shutdown)."""
        deadline = time.monotonic() + timeout_s
        while self._unwritten() and time.monotonic() < deadline:
            time.sleep(0.02)
        return not self._unwritten()

    def _unwritten(self) -> int:
        return sum(reports.unfinished_tasks for reports in self._reports)
