"""Ingest: what changed in the cluster, turned into changes of the queue and the store.

Like kube-scheduler's event handlers, and kept as apart from the cycle: the volume
objects first (a node's CSINode says its attach limits, a bound pod's claims what it
attaches), then nodes (new pods may use them), then namespaces and quotas, the pods others
bound or deleted, expired holds, gangs and budgets, and last the new pods.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field

from cluster.cluster_adapter import ClusterAdapter
from cluster.disruption import DisruptionBudgets
from cluster.errors import InvalidObject
from cluster.events import ASSIGNED_POD_DELETE, NODE_ADD, NODE_DELETE
from cluster.inventory import BoundPods
from cluster.messages import Status
from cluster.objects import Node, Pod
from cluster.store import Store
from cluster.volumes.index import CSI_NODES, VolumeIndex
from dispatcher.dispatcher import Dispatcher
from optimist.logs import unit_key
from optimist.loop.reservation_desk import ReservationDesk
from optimist.loop.stages import StageHook

log = logging.getLogger(__name__)

HOLDS_EVERY_S = 1.0  # how often expired holds are freed


@dataclass
class Ingest:
    cluster: ClusterAdapter
    store: Store
    dispatcher: Dispatcher
    bound_pods: BoundPods
    budgets: DisruptionBudgets
    reservations: ReservationDesk
    on_stage: StageHook | None
    volumes: VolumeIndex  # the claims, volumes and classes pods' volumes are resolved by
    # the nodes as the cluster reports them, before their CSINodes' limits are added
    _nodes: dict[str, Node] = field(default_factory=dict, init=False)
    _holds_checked: float = field(default=0.0, init=False)  # time.time() holds were last freed

    def take(self) -> None:
        """Everything the cluster reported since the last call."""
        self._volumes()
        self._take_nodes()
        labelled, unnamed = self.cluster.take_namespace_events()
        if labelled or unnamed:
            self.store.put_namespaces(labelled, unnamed)
        self._quotas()
        running = self.cluster.take_running_pods()
        if running:
            self._count_running(running)
        self._deleted()
        self._expired_holds()
        groups = self.cluster.take_new_groups()
        for group in groups:
            self.dispatcher.add_group(group)
        self.budgets.put(self.cluster.take_new_budgets())
        self._new_pods({g.key for g in groups})
        for reservation in self.cluster.take_new_reservations():
            self.reservations.add(reservation)

    def add_running(self, pods: list[Pod]) -> None:
        """Pods the cluster already runs (committed to the store by the caller): they count
        for preemption like the pods optimist binds."""
        for pod in pods:
            self.bound_pods.add(pod, pod.node_name)

    def labels(self, node: str) -> dict[str, str]:
        """A node's labels, as the cluster last reported them (none for a node gone)."""
        known = self._nodes.get(node)
        return known.labels if known is not None else {}

    def _take_nodes(self) -> None:
        made, gone = self.cluster.take_node_events()
        if not (made or gone):
            return
        # known before the store is written: a store rebuilt meanwhile has them anyway
        self._nodes.update((n.name, n) for n in made)
        for name in gone:
            self._nodes.pop(name, None)
        if made:
            self.store.put_nodes([self.volumes.limited(n) for n in made])
            self.dispatcher.on_event(NODE_ADD)
        if gone:
            self.store.remove_nodes(gone)
            self.dispatcher.on_event(NODE_DELETE)
        if self.dispatcher.quotas is not None:
            self.dispatcher.set_quota_capacity(self._capacity())

    def _volumes(self) -> None:
        """Claims, volumes, classes and CSINodes into the index, in order (a node whose
        CSINode changed is put again with its limits); then each kind of change once to
        the dispatcher, which moves the units waiting for it."""
        changes = self.cluster.take_volume_events()
        happened = {self.volumes.apply(*change) for change in changes}
        csi_nodes = {
            str(c.manifest.get("metadata", {}).get("name", ""))
            for c in changes
            if c.resource == CSI_NODES
        }
        if renewed := [self._nodes[name] for name in sorted(csi_nodes) if name in self._nodes]:
            self.store.put_nodes([self.volumes.limited(n) for n in renewed])
        for event in sorted(happened - {""}):
            self.dispatcher.on_event(event)

    def _quotas(self) -> None:
        for quota in self.cluster.take_new_quotas():
            try:
                self.dispatcher.add_quota(quota, self._capacity(), self.bound_pods)
            except InvalidObject as err:  # the tree stays as it was; the rest goes on
                log.warning("quota %s left out: %s", quota.name, err)

    def _capacity(self) -> dict[str, int]:
        """The cluster's allocatable, which the quotas at the top of the tree share."""
        total: Counter[str] = Counter()
        for node in self._nodes.values():
            total.update(node.allocatable)
        return dict(total)

    def _count_running(self, pods: list[Pod]) -> None:
        """Pods bound by anybody else: their room is used in the store, whether it fits or
        not; preemption may evict them; and they are no longer the queue's to place."""
        counted = []
        # with their volumes resolved: those they attach count on their nodes
        observed = self.store.observe([self.dispatcher.resolve(p) for p in pods])
        for pod, outcome in zip(pods, observed, strict=True):
            if outcome.committed:
                counted.append(pod)
            elif outcome.status != Status.DUPLICATE:
                log.warning("running pod %s not counted: %s", pod.key, outcome.detail)
        self.add_running(counted)
        self.dispatcher.running(pods)

    def _deleted(self) -> None:
        deleted = self.cluster.take_deleted_pods()
        if not deleted:
            return
        self.bound_pods.remove(deleted)
        freed = self.volumes.forget(deleted)
        self.dispatcher.forget(deleted)
        if self.store.release(pods=deleted).pods:
            self.dispatcher.on_event(ASSIGNED_POD_DELETE)
        if freed:
            self.dispatcher.on_event(freed)

    def _expired_holds(self) -> None:
        now = time.time()
        if now - self._holds_checked < HOLDS_EVERY_S:
            return
        self._holds_checked = now
        if self.store.expire_holds(now):
            self.dispatcher.on_event(ASSIGNED_POD_DELETE)  # held room is free again

    def _new_pods(self, groups: set[str]) -> None:
        """Queue the new pods, tell the cluster why a gang or a gated pod waits, and refuse
        the pods that cannot be scheduled as they are, naming what is wrong."""
        pods, errors = self.cluster.take_new_pods()
        if self.on_stage and pods:
            self.on_stage("queued", [p.key for p in pods], time.perf_counter())
        failures = self.cluster.late_failures() if pods else {}
        for pod in pods:
            self.dispatcher.add(pod, failures.get(pod.key, 0))
        touched = groups | {p.group for p in pods if p.group}
        if touched and (waits := self.dispatcher.gang_waits(touched)):
            self.cluster.report_unschedulable([(k, "Unschedulable", w) for k, w in waits.items()])
        self.reservations.claim(pods)  # queued first: a failing store loses no pod
        gated = [
            (p.key, "SchedulingGated", f"scheduling gates are not empty: {', '.join(p.gates)}")
            for p in pods
            if p.gates
        ]
        if gated:
            self.cluster.report_unschedulable(gated)
        for key, error in errors:
            log.warning("pod %s cannot be scheduled: %s", key, error, extra=unit_key(key))
            self.dispatcher.reject(key, str(error))
        if errors:
            self.cluster.report_unschedulable([(k, "SchedulerError", str(e)) for k, e in errors])
