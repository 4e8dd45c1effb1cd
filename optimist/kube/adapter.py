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

Claims, volumes and storage classes are passed on as they come, for the control
loop's volume index (`cluster.volumes`).

Bindings go out through the `pods/binding` subresource from a pool of
threads, as many at once as the client's rate limit lets through. A pod with
claims waiting for their first consumer is bound once its claims are
(`optimist.kube.volume_prebind`), without holding a thread while it waits; if
they never are, it goes back to the queue as if deleted and made again. Reports
(events, the PodScheduled condition, nominatedNodeName) go out through
`optimist.kube.reporter`, never holding up a binding.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

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
    scheduler_name,
    terminated,
)
from cluster.objects import Node, Pod, PodGroup
from cluster.quota import Quota, quota_from_manifest
from cluster.reservations import Reservation
from cluster.volumes.index import CLAIMS, CLASSES, CSI_NODES, VOLUMES, VolumeChange
from cluster.workload_selectors import WorkloadSelectors, workload_selector_from_manifest
from optimist.kube.client import MERGE_PATCH, ApiError, KubeClient
from optimist.kube.informer import Informer, list_all, object_key
from optimist.kube.left_out import Involved, LeftOut
from optimist.kube.reporter import Reporter
from optimist.kube.volume_prebind import PreBindError, VolumePreBind

log = logging.getLogger(__name__)
T = TypeVar("T")

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
    CLAIMS: "/api/v1/persistentvolumeclaims",
    VOLUMES: "/api/v1/persistentvolumes",
    CLASSES: "/apis/storage.k8s.io/v1/storageclasses",
    CSI_NODES: "/apis/storage.k8s.io/v1/csinodes",
}
# the selector kinds, each watched before pods are
_SELECTOR_KINDS = {
    "services": "Service",
    "replicationcontrollers": "ReplicationController",
    "replicasets": "ReplicaSet",
    "statefulsets": "StatefulSet",
}
CONTROLLER_WAIT_S = 2.0
NOMINATES_BEFORE_PREBIND = 35  # from this minor release on, kube-scheduler nominates first


def minor_release(version: dict[str, Any]) -> int:
    """The minor release of an API server's /version ("37", or a vendor's "37+")."""
    digits = re.match(r"\d+", str(version.get("minor", "")))
    return int(digits.group()) if digits else 0


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
        volume_bind_timeouts: Mapping[str, float] | None = None,
    ) -> None:
        self.client = client
        self.scheduler_names = scheduler_names
        self._lock = threading.Lock()
        self._arrived = threading.Event()  # set by every watch event: wakes an idle loop
        self._new_pods: dict[str, dict[str, Any]] = {}  # key -> manifest, in arrival order
        # key -> bindings of the pod in a row that failed after their commit (PreBind)
        self._late_failures: dict[str, int] = {}
        self._rejections: dict[tuple[str, str], int] = {}  # `kubelet_rejections`
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
        self._volume_changes: list[VolumeChange] = []
        self._priorities: dict[str, int] = {}  # PriorityClass name -> value
        self._default_priority: tuple[str, int] | None = None  # the globalDefault class
        self.selectors = WorkloadSelectors()
        self.controller_wait_s = controller_wait_s
        self.awaiting: dict[str, float] = {}  # pod key -> when it began to wait for its controller
        # our unbound pods: key -> what a change is compared by (their spec, labels and
        # annotations, as the watch decoded them: an equal tuple is no change)
        self._pending: dict[str, tuple[Any, ...]] = {}
        self._bound: dict[str, str] = {}  # key -> node, of every pod bound we know of
        self._uids: dict[str, str] = {}  # pod key -> uid, for events
        self.reports = Reporter(
            client, component, explain_hint, report_queue, self._is_bound, self._uids.get
        )
        self.left_out = LeftOut(self.reports.invalid)
        self._binders = ThreadPoolExecutor(bind_workers, thread_name_prefix="bind")
        self.prebind = VolumePreBind(
            client, self._bind_later, self._prebind_failed, timeouts=volume_bind_timeouts or {}
        )
        handlers: dict[str, Callable[[str, dict[str, Any]], None]] = {
            "priorityclasses": self._on_priority_class,
            "namespaces": self._on_namespace,
            "nodes": self._on_node,
            "podgroups": self._on_group,
            "poddisruptionbudgets": self._on_budget,
            "elasticquotas": self._on_quota,
            "reservations": self._on_reservation,
            **{
                resource: functools.partial(self._on_selector, resource, kind)
                for resource, kind in _SELECTOR_KINDS.items()
            },
            **{
                resource: functools.partial(self._on_volume_object, resource)
                for resource in (CLASSES, VOLUMES, CLAIMS, CSI_NODES)
            },
            "pods": self._on_pod,
        }
        self.informers = {
            name: Informer(
                client, PATHS[name], handle, watch_timeout_s=watch_timeout_s, arrived=self._arrived
            )
            for name, handle in handlers.items()
        }

    def start(self, sync_timeout_s: float = 60.0) -> KubernetesAdapter:
        """Start the informers, each once the one before has listed (priority classes
        before pods, nodes before pods), and return when all have; a list that tells
        nothing for `sync_timeout_s` fails the start (one that goes on telling, a large
        cluster's, takes what it takes)."""
        self.reports.start()
        if minor_release(self.client.request("GET", "/version")) >= NOMINATES_BEFORE_PREBIND:
            self.prebind.nominate = self._nominate
        self.prebind.start()
        for name, informer in self.informers.items():
            informer.start()
            told = -1
            while not informer.synced.wait(sync_timeout_s):
                if informer.told == told:
                    raise TimeoutError(f"{PATHS[name]}: nothing listed for {sync_timeout_s:g} s")
                told = informer.told
        return self

    def stop(self, drain_s: float = 2.0) -> None:
        """Stop watching; bindings under way finish, reports queued get `drain_s` to go."""
        for informer in self.informers.values():
            informer.stop()
        self.abandon_prebinds()
        self._binders.shutdown(wait=True)
        self.reports.stop(drain_s)

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
                why = f"PriorityClass {name}: value={value!r}: must be an integer"
                self._refuse("priorityclasses", "PriorityClass", obj, why)
                return
            self._readable("PriorityClass", obj)
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
        node = self._read("nodes", "Node", obj, node_from_manifest) if kind != "DELETED" else None
        if node is None:  # deleted, or no longer readable: nothing is placed on it
            with self._lock:
                if self._nodes.pop(name, None) is not None:
                    self._changed_nodes.pop(name, None)
                    self._deleted_nodes.append(name)
            if kind == "DELETED":
                self._readable("Node", obj)
            return
        with self._lock:
            if self._nodes.get(name) != node:  # a heartbeat changes nothing a shard reads
                self._nodes[name] = node
                self._changed_nodes[name] = node

    def _on_group(self, kind: str, obj: dict[str, Any]) -> None:
        if kind == "DELETED":
            self._readable("PodGroup", obj)
            return  # its pods go on as single pods once they are gone; nothing is held
        group = self._read("podgroups", "PodGroup", obj, podgroup_from_manifest)
        if group is None:
            return
        with self._lock:
            self._groups.append(group)

    def _on_budget(self, kind: str, obj: dict[str, Any]) -> None:
        if kind == "DELETED":
            self._readable("PodDisruptionBudget", obj)
            return
        budget = self._read(
            "poddisruptionbudgets", "PodDisruptionBudget", obj, budget_from_manifest
        )
        if budget is None:
            return
        with self._lock:
            self._budgets.append(budget)

    def _on_quota(self, kind: str, obj: dict[str, Any]) -> None:
        if kind != "ADDED":  # the tree takes quotas as they come; changing one needs a restart
            if kind == "MODIFIED":
                log.warning(
                    "ElasticQuota %s changed: optimist sees it at its next start", object_key(obj)
                )
            else:
                self._readable("ElasticQuota", obj)  # deleted: left out no more
            return
        quota = self._read("elasticquotas", "ElasticQuota", obj, quota_from_manifest)
        if quota is None:
            return
        with self._lock:
            self._quotas.append(quota)

    def _on_reservation(self, kind: str, obj: dict[str, Any]) -> None:
        if kind == "DELETED":
            self._readable("Reservation", obj)
        if kind != "ADDED":
            return  # used once, then gone: what it holds expires with it (hold_ttl_s)
        read = functools.partial(reservation_from_manifest, now=time.time())
        reservation = self._read("reservations", "Reservation", obj, read)
        if reservation is None:
            return
        if reservation.pod.scheduler_name in self.scheduler_names:
            with self._lock:
                self._reservations.append(reservation)

    def _on_volume_object(self, resource: str, kind: str, obj: dict[str, Any]) -> None:
        change = VolumeChange(resource, obj, kind == "DELETED")
        with self._lock:
            self._volume_changes.append(change)
        if resource != CSI_NODES:  # PreBind reads claims, volumes and classes alone
            self.prebind.observe(change)

    def _on_selector(self, resource: str, kind: str, event: str, obj: dict[str, Any]) -> None:
        """A Service's or controller's selector (its status changes change nothing here)."""
        if event == "DELETED":
            meta = obj.get("metadata") or {}
            namespace = str(meta.get("namespace") or "default")
            self.selectors.remove(kind, namespace, str(meta.get("name")))
            self._readable(kind, obj)
            return
        selector = self._read(
            resource, kind, obj, lambda o: workload_selector_from_manifest({**o, "kind": kind})
        )
        if selector is not None:
            self.selectors.put(selector)

    def _on_pod(self, kind: str, obj: dict[str, Any]) -> None:
        key = object_key(obj)
        meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        phase = (obj.get("status") or {}).get("phase")
        gone = kind == "DELETED" or phase in TERMINAL_PHASES
        with self._lock:
            if gone:
                if kind != "DELETED" and key in self._bound:
                    self._kubelet_rejected(key, obj)
                self.prebind.forget(key)
                self._late_failures.pop(key, None)
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
                self.prebind.forget(key)
                self._late_failures.pop(key, None)
                self._pending.pop(key, None)
                self._new_pods.pop(key, None)
                if self._bound.get(key) == node:
                    return  # a binding of ours, confirmed; or a change of a bound pod
                self._bound[key] = node
                pod = self._parse_bound(obj)
                if pod is not None:
                    self._running[key] = pod
                return
            if scheduler_name(obj) not in self.scheduler_names:
                return
            if meta.get("deletionTimestamp"):
                return  # on its way out: not to be placed
            # status changes (our own reports among them) are no reason to schedule again
            seen = (spec, meta.get("labels"), meta.get("annotations"))
            if self._pending.get(key) == seen:
                return
            self._pending[key] = seen
            self._new_pods[key] = obj

    def _kubelet_rejected(self, key: str, obj: dict[str, Any]) -> None:
        """A pod of ours that ended Failed on its node for a reason of the kubelet's
        admission (`OutOf<resource>`, `UnexpectedAdmissionError`): counted by profile
        and reason, and told on the pod. Two schedulers on one pool leave these (the
        lock is held)."""
        if self.reports.quiet:
            return  # a standby's: the leader counts it
        status, profile = obj.get("status") or {}, scheduler_name(obj)
        reason = str(status.get("reason") or "")
        rejection = reason.startswith("OutOf") or reason == "UnexpectedAdmissionError"
        if status.get("phase") != "Failed" or not rejection or profile not in self.scheduler_names:
            return
        self._rejections[profile, reason] = self._rejections.get((profile, reason), 0) + 1
        uid, message = self._uids.get(key, ""), str(status.get("message") or "")
        node = str((obj.get("spec") or {}).get("nodeName"))
        self.reports.rejected(key, uid, node, reason, message)

    def kubelet_rejections(self) -> dict[tuple[str, str], int]:
        """(profile, reason) -> pods of ours kubelets turned away after their binding."""
        with self._lock:
            return dict(self._rejections)

    def _parse_bound(self, obj: dict[str, Any]) -> Pod | None:
        try:
            return pod_from_manifest(self._with_priority(obj))
        except InvalidObject as err:
            # its room is used all the same; shards cannot know how much
            self._refuse("pods", "Pod", obj, f"bound, but its room not counted: {err}")
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

    def _read(
        self, resource: str, kind: str, obj: dict[str, Any], parse: Callable[[dict[str, Any]], T]
    ) -> T | None:
        """`parse(obj)`; None where optimist cannot read the object of `kind` watched at
        `resource`, which is then left out and told so (`left_out`). Read without fault,
        it is left out no more."""
        try:
            made = parse(obj)
        except InvalidObject as err:
            self._refuse(resource, kind, obj, str(err))
            return None
        self._readable(kind, obj)
        return made

    def _refuse(self, resource: str, kind: str, obj: dict[str, Any], why: str) -> None:
        self.left_out.refuse(Involved.of(kind, PATHS[resource], obj), why)

    def _readable(self, kind: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        self.left_out.readable(kind, str(meta.get("namespace") or ""), str(meta.get("name")))

    @property
    def retries(self) -> int:
        """Requests retried so far, bindings' and reports' together."""
        return self.client.retries + self.reports.client.retries

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
            if pod.volumes:
                self.prebind.note(pod)
            pods.append(self.selectors.with_spread_selector(pod))
        return pods, errors

    def late_failures(self) -> dict[str, int]:
        with self._lock:
            return dict(self._late_failures)

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

    def take_volume_events(self) -> list[VolumeChange]:
        with self._lock:
            taken, self._volume_changes = self._volume_changes, []
        return taken

    def take_new_reservations(self) -> list[Reservation]:
        with self._lock:
            taken, self._reservations = self._reservations, []
        return taken

    def bind(self, bindings: list[Binding]) -> list[str | None]:
        """None for a pod bound, or (its claims waiting for their first consumer) given
        its volumes and to be bound once the PV controller has bound them."""
        return list(self._binders.map(self._bind_one, bindings))

    def _bind_one(self, binding: Binding) -> str | None:
        with self._lock:
            bound = self._bound.get(binding.pod)
            if bound is None:
                self._bound[binding.pod] = binding.node  # the watch's confirmation is ours
            node = self._nodes.get(binding.node)
        if bound is not None:  # the API would refuse it (409): no need to ask
            return f"binding {binding.pod} to {binding.node}: already assigned to node {bound}"
        try:
            if self.prebind.prebind(binding, node.labels if node else {}):
                return None
        except PreBindError as err:
            self._unclaim(binding)
            return f"binding {binding.pod} to {binding.node}: {err}"
        return self._post(binding)

    def abandon_prebinds(self) -> list[str]:
        """Stop waiting for claims to be bound: the keys of the pods that were waiting,
        never bound, whose room the caller gives back."""
        abandoned = self.prebind.stop()
        for binding in abandoned:
            self._unclaim(binding)
        return [binding.pod for binding in abandoned]

    def _nominate(self, binding: Binding) -> None:
        """status.nominatedNodeName, before PreBind writes the claims (a failure is
        logged: the binding goes on, as upstream's)."""
        namespace, name = binding.pod.split("/", 1)
        try:
            self.client.request(
                "PATCH",
                f"/api/v1/namespaces/{namespace}/pods/{name}/status",
                body={"status": {"nominatedNodeName": binding.node}},
                content_type=MERGE_PATCH,
                answer=False,
            )
        except ApiError as err:
            log.warning("nominating %s for %s before its volumes: %s", binding.node, name, err)

    def _bind_later(self, binding: Binding) -> None:
        """PreBind is done: bind from the pool (a watch thread calls this)."""
        with contextlib.suppress(RuntimeError):  # stopping: whoever schedules next binds it
            self._binders.submit(self._post_late, binding)

    def _post_late(self, binding: Binding) -> None:
        error = self._post(binding)
        if error is not None:
            self._prebind_failed(binding, error)

    def _prebind_failed(self, binding: Binding, why: str) -> None:
        """A pod whose binding failed after the loop was told it would be made: it goes
        back to the loop as deleted (its room given back) and made again (queued anew,
        to wait out a backoff as after a failed attempt: `late_failures`)."""
        self._unclaim(binding)
        namespace, name = binding.pod.split("/", 1)
        try:
            obj = self.client.request("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
        except ApiError:
            obj = None  # gone: its deletion comes through the watch
        waits = obj is not None and not (obj.get("spec") or {}).get("nodeName")
        with self._lock:
            self._deleted_pods.append(binding.pod)
            if obj is not None and waits and not obj["metadata"].get("deletionTimestamp"):
                self._new_pods[binding.pod] = obj
                self._late_failures[binding.pod] = self._late_failures.get(binding.pod, 0) + 1
        self.reports.unschedulable([(binding.pod, "SchedulerError", why)])
        self._arrived.set()

    def _unclaim(self, binding: Binding) -> None:
        with self._lock:
            if self._bound.get(binding.pod) == binding.node:  # the watch says nothing else
                del self._bound[binding.pod]

    def _post(self, binding: Binding) -> str | None:
        namespace, name = binding.pod.split("/", 1)
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": binding.node},
        }
        try:
            if binding.gpus:  # the device plugin reads them when the kubelet starts the pod
                annotations = {GPU_INDICES_ANNOTATION: format_indices(binding.gpus)}
                self.client.request(
                    "PATCH",
                    f"/api/v1/namespaces/{namespace}/pods/{name}",
                    body={"metadata": {"annotations": annotations}},
                    content_type="application/strategic-merge-patch+json",
                    answer=False,
                )
            self.client.request(
                "POST",
                f"/api/v1/namespaces/{namespace}/pods/{name}/binding",
                body=body,
                answer=False,
            )
        except ApiError as err:
            self._unclaim(binding)
            return f"binding {binding.pod} to {binding.node}: {err}"
        self.reports.scheduled(binding.pod, binding.node)
        return None

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
        self.reports.unschedulable(failures)

    def nominate(self, nominations: dict[str, str]) -> None:
        self.reports.nominate(nominations)

    def flush_reports(self, timeout_s: float = 10.0) -> bool:
        """Wait until every report queued so far is written (tests, shutdown)."""
        return self.reports.flush(timeout_s)

    @property
    def reports_dropped(self) -> int:
        return self.reports.dropped

    def _is_bound(self, pod: str) -> bool:
        with self._lock:
            return pod in self._bound
