"""What the roles need from a cluster, whether simulated or a real API server."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from cluster.disruption import DisruptionBudget
from cluster.errors import InvalidObject
from cluster.objects import Node, Pod, PodGroup
from cluster.quota import Quota
from cluster.reservations import Reservation
from cluster.volumes.index import VolumeChange


@dataclass(slots=True)
class Binding:
    """One `pods/binding`: this pod goes on this node (on these of its GPUs)."""

    pod: str
    node: str
    gpus: tuple[int, ...] = ()  # written on the pod before it is bound (cluster/gpus.py)
    # the free volumes the commit gave its claims that wait for their first consumer:
    # (claim, volume) each, which PreBind binds before the pod (`PodPlacement.picks`)
    volumes: tuple[tuple[str, str], ...] = ()


@dataclass(slots=True)
class ClusterState:
    """What the cluster holds now: the node store is built again from it when Redis
    has lost the store."""

    nodes: list[Node]
    namespaces: dict[str, dict[str, str]]  # name -> labels
    pods: list[Pod]  # every bound pod, with its node_name (and GPU indices annotated)


class ClusterAdapter(Protocol):
    def snapshot(self) -> ClusterState:
        """The cluster's nodes, namespaces and bound pods, read afresh."""

    def take_new_pods(self) -> tuple[list[Pod], list[tuple[str, InvalidObject]]]:
        """Pods of our profiles created, or changed while unbound, since the last call;
        (pod key, error) for unparsable ones."""

    def late_failures(self) -> dict[str, int]:
        """Pod key -> how many bindings of the pod in a row failed after their commit (a
        claim PreBind wrote that was never bound), for pods not bound since: such a pod,
        back among the new ones, waits out that backoff before its next attempt."""

    def take_running_pods(self) -> list[Pod]:
        """Pods found bound that optimist did not bind since the last call (another
        scheduler's, or bound before optimist started): usage, whether they fit or not."""

    def take_deleted_pods(self) -> list[str]:
        """Keys of pods deleted since the last call, whether bound or pending."""

    def take_node_events(self) -> tuple[list[Node], list[str]]:
        """Nodes created or changed since the last call, and the names of nodes deleted."""

    def take_namespace_events(self) -> tuple[dict[str, dict[str, str]], list[str]]:
        """Namespaces created or relabelled since the last call, with their labels (what
        namespaceSelector matches), and the names of those deleted."""

    def take_new_groups(self) -> list[PodGroup]:
        """PodGroups (gangs) seen since the last call."""

    def take_new_budgets(self) -> list[DisruptionBudget]:
        """PodDisruptionBudgets created or changed since the last call."""

    def take_new_quotas(self) -> list[Quota]:
        """ElasticQuota objects created since the last call."""

    def take_volume_events(self) -> list[VolumeChange]:
        """Claims, volumes and storage classes made, changed or deleted since the last
        call, in order."""

    def take_new_reservations(self) -> list[Reservation]:
        """Reservations of our profiles created since the last call."""

    def bind(self, bindings: list[Binding]) -> list[str | None]:
        """Bind pods to nodes; one error (or None) per binding."""

    def report_unschedulable(self, failures: list[tuple[str, str, str]]) -> None:
        """(pod, reason, message) of attempts that found no node, as kube-scheduler reports
        them: reason is the PodScheduled condition's (Unschedulable, SchedulerError or
        SchedulingGated), message the summary ("0/5000 nodes are available: ...")."""

    def nominate(self, nominations: dict[str, str]) -> None:
        """Pods that preempted room on a node: status.nominatedNodeName."""

    def evict(self, pods: list[str]) -> list[str | None]:
        """Delete bound pods, preemption's victims; one error (or None) per pod. Their
        deletion is confirmed later, by `take_deleted_pods`."""
