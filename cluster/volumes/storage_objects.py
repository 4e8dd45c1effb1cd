"""PersistentVolumeClaims, PersistentVolumes, StorageClasses and CSINodes, decoded to the fields
the volume plugins read (`cluster.volumes.storage_manifests`), and a pod's references to them.

They live where the informers are, in the control process: a shard never sees a claim,
only what the claim asks of a node once resolved (`cluster.volumes.needs`).
"""

from __future__ import annotations

from dataclasses import dataclass

from cluster.selectors import LabelSelector, NodeSelectorTerm
from cluster.volumes.needs import Attachable

WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
SELECTED_NODE = "volume.kubernetes.io/selected-node"  # where a claim is to be provisioned
BETA_CLASS = "volume.beta.kubernetes.io/storage-class"
FILESYSTEM = "Filesystem"  # a volumeMode left out
NO_PROVISIONER = "kubernetes.io/no-provisioner"  # a class of static volumes alone
AVAILABLE = "Available"  # the phase of a volume free to bind


@dataclass(frozen=True, slots=True)
class PodVolume:
    """One of a pod's volumes that names a claim: `claim` is the claim's name, given
    (persistentVolumeClaim) or made from the pod's and the volume's names (ephemeral)."""

    name: str
    claim: str
    ephemeral: bool = False


@dataclass(frozen=True, slots=True)
class PersistentVolumeClaim:
    """What the PreFilters read of a claim, and what matching it to a volume reads."""

    namespace: str
    name: str
    storage_class: str  # the beta annotation, else spec.storageClassName, else ""
    volume_name: str = ""  # spec.volumeName
    bind_completed: bool = False  # the PV controller's annotation is there
    lost: bool = False  # status.phase Lost: its volume is gone
    deleting: bool = False  # metadata.deletionTimestamp is set
    controller_uid: str = ""  # the UID of its controlling owner (an ephemeral claim's pod)
    uid: str = ""
    request: int = 0  # spec.resources.requests.storage, in bytes
    access_modes: frozenset[str] = frozenset()
    volume_mode: str = FILESYSTEM
    selector: LabelSelector | None = None  # None: any volume's labels
    selected_node: str = ""  # the node chosen for its provisioning (SELECTED_NODE)
    resource_version: str = ""  # what PreBind's write is conditional on

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def bound(self) -> bool:
        """Upstream's fully bound claim: a volume named and the binding completed."""
        return bool(self.volume_name) and self.bind_completed


@dataclass(frozen=True, slots=True)
class ClaimRef:
    """spec.claimRef of a volume: the claim it is bound, or promised, to."""

    namespace: str
    name: str
    uid: str = ""  # empty: promised to whichever claim of that name comes

    def names(self, claim: PersistentVolumeClaim) -> bool:
        """Upstream's IsVolumeBoundToClaim."""
        same = (self.namespace, self.name) == (claim.namespace, claim.name)
        return same and (not self.uid or self.uid == claim.uid)


@dataclass(frozen=True, slots=True)
class PersistentVolume:
    name: str
    labels: tuple[tuple[str, str], ...] = ()  # VolumeZone reads its zone and region
    # spec.nodeAffinity.required's terms, ORed; None: every node
    node_affinity: tuple[NodeSelectorTerm, ...] | None = None
    storage_class: str = ""  # the beta annotation, else spec.storageClassName
    capacity: int = 0  # spec.capacity.storage, in bytes
    access_modes: frozenset[str] = frozenset()
    volume_mode: str = FILESYSTEM
    claim_ref: ClaimRef | None = None
    phase: str = ""  # status.phase
    deleting: bool = False  # metadata.deletionTimestamp is set
    resource_version: str = ""  # what PreBind's write is conditional on
    # what it counts as against a node's attach limit (`cluster.volumes.attach`); None:
    # neither a CSI volume nor one of an in-tree plugin migrated to CSI, so never counted
    attach: Attachable | None = None


@dataclass(frozen=True, slots=True)
class StorageClass:
    name: str
    binding_mode: str | None  # None: volumeBindingMode not set, which upstream refuses
    provisioner: str = ""
    # allowedTopologies as node selector terms, ORed; None: any node
    allowed_topologies: tuple[NodeSelectorTerm, ...] | None = None

    @property
    def provisions(self) -> bool:
        """Whether a claim of the class can be provisioned, not only matched."""
        return self.provisioner not in ("", NO_PROVISIONER)


@dataclass(frozen=True, slots=True)
class CSINode:
    """What NodeVolumeLimits reads of a node's CSINode (named as its node)."""

    name: str
    limits: tuple[tuple[str, int], ...] = ()  # driver -> allocatable.count, where set
