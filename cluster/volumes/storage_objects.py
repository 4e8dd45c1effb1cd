"""PersistentVolumeClaims, PersistentVolumes and StorageClasses, decoded to the fields
the volume plugins read (`cluster.volumes.storage_manifests`), and a pod's references to them.

They live where the informers are, in the control process: a shard never sees a claim,
only what the claim asks of a node once resolved (`cluster.volumes.needs`).
"""

from __future__ import annotations

from dataclasses import dataclass

from cluster.selectors import NodeSelectorTerm

WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BETA_CLASS = "volume.beta.kubernetes.io/storage-class"


@dataclass(frozen=True, slots=True)
class PodVolume:
    """One of a pod's volumes that names a claim: `claim` is the claim's name, given
    (persistentVolumeClaim) or made from the pod's and the volume's names (ephemeral)."""

    name: str
    claim: str
    ephemeral: bool = False


@dataclass(frozen=True, slots=True)
class PersistentVolumeClaim:
    """What the PreFilters read of a claim (matching one to a volume, later, reads more)."""

    namespace: str
    name: str
    storage_class: str  # the beta annotation, else spec.storageClassName, else ""
    volume_name: str = ""  # spec.volumeName
    bind_completed: bool = False  # the PV controller's annotation is there
    lost: bool = False  # status.phase Lost: its volume is gone
    deleting: bool = False  # metadata.deletionTimestamp is set
    controller_uid: str = ""  # the UID of its controlling owner (an ephemeral claim's pod)

    @property
    def bound(self) -> bool:
        """Upstream's fully bound claim: a volume named and the binding completed."""
        return bool(self.volume_name) and self.bind_completed


@dataclass(frozen=True, slots=True)
class PersistentVolume:
    name: str
    labels: tuple[tuple[str, str], ...] = ()  # VolumeZone reads its zone and region
    # spec.nodeAffinity.required's terms, ORed; None: every node
    node_affinity: tuple[NodeSelectorTerm, ...] | None = None


@dataclass(frozen=True, slots=True)
class StorageClass:
    name: str
    binding_mode: str | None  # None: volumeBindingMode not set, which upstream refuses
