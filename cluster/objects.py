"""The object model: nodes and pods as the scheduler needs them.

Frozen dataclasses with exact integer resources, built from manifests by
`cluster.manifests`. Everything that decides where a pod may go and how a
node scores is in its `SchedulingSpec`; pods with equal specs form one
equivalence class that a shard judges once.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cluster.gpus import GpuTopology, imply_node_milli
from cluster.selectors import LabelSelector, NodeSelectorTerm
from cluster.volumes.needs import Attachable, VolumeNeeds
from cluster.volumes.storage_objects import PodVolume
from cluster.wire import Wire


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str  # "Equal" or "Exists"
    value: str
    effect: str  # "" tolerates every effect

    def tolerates(self, taint: Taint) -> bool:
        """Upstream `Toleration.ToleratesTaint`."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value


ANY_IP = "0.0.0.0"


@dataclass(frozen=True, slots=True)
class HostPort:
    protocol: str  # TCP, UDP or SCTP
    host_ip: str  # "" and "0.0.0.0" mean every address
    port: int

    @property
    def bind_ip(self) -> str:
        return self.host_ip or ANY_IP


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    topology_key: str
    label_selector: LabelSelector | None  # None selects no pod
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = None
    match_label_keys: tuple[str, ...] = ()
    mismatch_label_keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class WeightedPodAffinityTerm:
    weight: int
    term: PodAffinityTerm


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str  # DoNotSchedule or ScheduleAnyway
    label_selector: LabelSelector | None
    min_domains: int | None = None
    node_affinity_policy: str = "Honor"
    node_taints_policy: str = "Ignore"
    match_label_keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Peer(Wire):
    """What other pods' inter-pod affinity and topology spreading see of a placed pod.

    Pods with the same peer are counted together per node, in the store and
    in the shards, so these plugins cost per distinct kind of pod, not per pod.
    """

    namespace: str
    labels: tuple[tuple[str, str], ...]
    affinity_required: tuple[PodAffinityTerm, ...] = ()
    affinity_preferred: tuple[WeightedPodAffinityTerm, ...] = ()
    anti_affinity_required: tuple[PodAffinityTerm, ...] = ()
    anti_affinity_preferred: tuple[WeightedPodAffinityTerm, ...] = ()

    @property
    def id(self) -> str:
        return _peer_wire(self)[0]

    @property
    def packed(self) -> bytes:
        """The wire form, packed: what the store keeps of a peer."""
        return _peer_wire(self)[1]


@functools.lru_cache(maxsize=16384)
def _peer_wire(peer: Peer) -> tuple[str, bytes]:
    """A peer's id and packed form, worked out once: many classes share a peer (the
    pods of one app differ in requests, not in labels), and every commit names it."""
    packed = peer.encode()
    return hashlib.blake2b(packed, digest_size=12).hexdigest(), packed


@dataclass(frozen=True, slots=True)
class SchedulingSpec(Wire):
    """Everything about a pod that decides where it may go and how nodes score."""

    requests: tuple[tuple[str, int], ...]  # sorted, with `pods` and score-only amounts
    # the score-only amounts the scorers weigh this pod by while placing it, where they
    # differ from what it adds to a node once bound (upstream counts the two apart for
    # pods with init containers: cluster.resources.nonzero_on_node)
    weighed: tuple[tuple[str, int], ...] = ()
    profile: str = "default-scheduler"  # the schedulerName: each profile has its own plugins
    namespace: str = "default"
    labels: tuple[tuple[str, str], ...] = ()
    node_name: str = ""
    node_selector: tuple[tuple[str, str], ...] = ()
    required_terms: tuple[NodeSelectorTerm, ...] | None = None  # None: no requirement
    preferred_terms: tuple[tuple[int, NodeSelectorTerm], ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    host_ports: tuple[HostPort, ...] = ()
    images: tuple[str, ...] = ()
    topology_spread: tuple[TopologySpreadConstraint, ...] = ()
    affinity_required: tuple[PodAffinityTerm, ...] = ()
    affinity_preferred: tuple[WeightedPodAffinityTerm, ...] = ()
    anti_affinity_required: tuple[PodAffinityTerm, ...] = ()
    anti_affinity_preferred: tuple[WeightedPodAffinityTerm, ...] = ()
    gpu_locality: str = ""  # "nvlink" or "numa": its GPUs must share one (cluster/gpus.py)
    # what the profile's default spreading counts for a pod without constraints of its own:
    # the selectors of the Services and controller that select it (cluster/workload_selectors)
    spread_selector: LabelSelector | None = None
    # what its volumes ask of a node, resolved against the claims when it is dispatched
    # (cluster/volumes/resolve.py); None: it has no claim
    volumes: VolumeNeeds | None = None

    @property
    def peer(self) -> Peer:
        return Peer(
            self.namespace,
            self.labels,
            self.affinity_required,
            self.affinity_preferred,
            self.anti_affinity_required,
            self.anti_affinity_preferred,
        )


@dataclass(slots=True)
class Pod:
    namespace: str
    name: str
    uid: str
    priority: int
    spec: SchedulingSpec
    node_name: str = ""  # set when the manifest is already bound
    manifest: Mapping[str, Any] | None = None  # the source object, for scheduler extenders
    group: str = ""  # the key of its PodGroup (namespace/name), when it belongs to a gang
    gates: tuple[str, ...] = ()  # spec.schedulingGates: not scheduled while any remains
    # spec.preemptionPolicy is not Never: it may evict pods of lower priority to fit
    preempts: bool = True
    # its volumes that name a claim, resolved against the claims where it is dispatched
    volumes: tuple[PodVolume, ...] = ()
    # the volumes it attaches to its node, once its claims are resolved (NodeVolumeLimits)
    attached: tuple[Attachable, ...] = ()
    # its ReadWriteOncePod claims (namespace/name), once resolved: no other pod may use
    # one while it holds it (VolumeRestrictions)
    exclusive: tuple[str, ...] = ()
    # namespace/name, made once: the queue looks it up several times per pod
    key: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.key = f"{self.namespace}/{self.name}"

    @property
    def scheduler_name(self) -> str:
        return self.spec.profile


@dataclass(frozen=True, slots=True)
class ContainerImage:
    names: tuple[str, ...]
    size_bytes: int


@dataclass(slots=True)
class Node(Wire):
    name: str
    allocatable: dict[str, int]
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    images: tuple[ContainerImage, ...] = ()
    gpu_topology: GpuTopology = field(default_factory=GpuTopology)
    # NodeVolumeLimits: attach limit key -> volumes the node may attach, sorted (its
    # allocatable's attachable-volumes-*, then its CSINode's drivers, `cluster.volumes.attach`)
    volume_limits: tuple[tuple[str, int], ...] = ()
    # in-tree volume plugins its CSINode says are migrated to CSI drivers here
    migrated_plugins: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        imply_node_milli(self.allocatable)


POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
HOSTNAME_LABEL = "kubernetes.io/hostname"  # a kubelet labels its node with its name
ZONE_LABEL = "topology.kubernetes.io/zone"
DEFAULT_SCHEDULE_TIMEOUT_S = 300


@dataclass(frozen=True, slots=True)
class PodGroup:
    """A gang (the coscheduling plugin's PodGroup): at least `min_member` pods start together."""

    namespace: str
    name: str
    min_member: int
    schedule_timeout_s: int = DEFAULT_SCHEDULE_TIMEOUT_S

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"
