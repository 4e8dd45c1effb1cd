"""PersistentVolumeClaims, PersistentVolumes and StorageClasses, decoded to the fields
the volume plugins read (`cluster.volumes.storage_manifests`), and a pod's references to them.

They live where the informers are, in the control process: a shard never sees a claim,
only what the claim asks of a node once resolved (`cluster.volumes.needs`).
"""

from __future__ import annotations

from dataclasses import dataclass

from cluster.selectors import LabelSelector, NodeSelectorTerm

WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
IMMEDIATE = "Immediate"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
BETA_CLASS = "volume.beta.kubernetes.io/storage-class"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"


@dataclass(frozen=True, slots=True)
class PodVolume:
    """One of a pod's volumes that names a claim: `claim` is the claim's name, given
    (persistentVolumeClaim) or made from the pod's and the volume's names (ephemeral)."""

    name: str
    claim: str
    ephemeral: bool = False


@dataclass(frozen=True, slots=True)
class PersistentVolumeClaim:
    namespace: str
    name: str
    uid: str
    storage_class: str  # the beta annotation, else spec.storageClassName, else ""
    volume_name: str = ""  # spec.volumeName
    bind_completed: bool = False  # the PV controller's annotation is there
    selected_node: str = ""  # a provisioner is asked for a volume on this node
    lost: bool = False  # status.phase Lost: its volume is gone
    deleting: bool = False  # metadata.deletionTimestamp is set
    access_modes: tuple[str, ...] = ()
    request_bytes: int = 0  # spec.resources.requests.storage
    block: bool = False  # spec.volumeMode Block (else Filesystem)
    selector: LabelSelector | None = None  # the volumes it may bind to, by label
    controller_uid: str = ""  # the UID of its controlling owner (an ephemeral claim's pod)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def bound(self) -> bool:
        """Upstream's fully bound claim: a volume named and the binding completed."""
        return bool(self.volume_name) and self.bind_completed


@dataclass(frozen=True, slots=True)
class ClaimRef:
    namespace: str
    name: str
    uid: str = ""


@dataclass(frozen=True, slots=True)
class PersistentVolume:
    name: str
    storage_class: str  # the beta annotation, else spec.storageClassName, else ""
    capacity_bytes: int = 0
    access_modes: tuple[str, ...] = ()
    block: bool = False
    claim_ref: ClaimRef | None = None
    available: bool = False  # status.phase Available
    deleting: bool = False
    labels: tuple[tuple[str, str], ...] = ()
    # spec.nodeAffinity.required's terms, ORed; None: every node
    node_affinity: tuple[NodeSelectorTerm, ...] | None = None


@dataclass(frozen=True, slots=True)
class StorageClass:
    name: str
    provisioner: str
    binding_mode: str | None  # None: volumeBindingMode not set, which upstream refuses
    # allowedTopologies: each term a tuple of (label key, values), ORed; () allows all
    allowed_topologies: tuple[tuple[tuple[str, tuple[str, ...]], ...], ...] = ()
