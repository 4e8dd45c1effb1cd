"""The manifests a workload creates, made from its templates as the ops and strategies say.

Each function returns (manifest, count) batches for the simulated cluster, so
objects that are all alike are made in one call and only the ones a strategy
makes different are made one at a time.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from benchmarks.cases.case_fields import Manifest, PerIndex
from benchmarks.cases.case_ops import ClaimTemplates, CreateNodes, CreatePods
from benchmarks.cases.go_template import TextTemplate
from cluster.manifests import copy_manifest
from cluster.objects import POD_GROUP_LABEL

Batch = tuple[dict[str, Any], int]


def node_batches(op: CreateNodes, rng: random.Random, unique: Iterator[int]) -> list[Batch]:
    """The op's nodes: allocatable set, then labelled as its strategies say; a Go
    template's each rendered with its index."""
    values: list[str | None] = [None] * op.count
    if op.label_values is not None:
        values = [rng.choice(op.label_values.values) for _ in range(op.count)]
    if isinstance(op.template, TextTemplate):
        return [
            (
                _labelled(
                    _allocated(op.template.render(i, op.count), op), op, v, _unique(op, unique)
                ),
                1,
            )
            for i, v in enumerate(values)
        ]
    base = _allocated(op.template, op)
    if op.unique_label is None:
        return [(_labelled(base, op, value), n) for value, n in Counter(values).items()]
    return [(_labelled(base, op, value, _unique(op, unique)), 1) for value in values]


def _allocated(template: Manifest, op: CreateNodes) -> dict[str, Any]:
    """The template with the strategy's amounts set in its allocatable, which the API
    server defaults to the capacity where a node gives none."""
    node: dict[str, Any] = copy_manifest(dict(template))
    if op.allocatable is not None and op.allocatable.allocatable:
        status = node.setdefault("status", {})
        given = status.get("allocatable") or status.get("capacity") or {}
        status["allocatable"] = {**given, **op.allocatable.allocatable}
    return node


def _unique(op: CreateNodes, unique: Iterator[int]) -> str:
    """The next value of the op's uniqueNodeLabelStrategy, if it has one."""
    if op.unique_label is None:
        return ""
    return f"{op.unique_label.rsplit('/', 1)[-1]}-{next(unique)}"


def _labelled(
    base: Manifest, op: CreateNodes, value: str | None, unique: str = ""
) -> dict[str, Any]:
    node: dict[str, Any] = copy_manifest(dict(base))
    labels = node.setdefault("metadata", {}).setdefault("labels", {})
    if value is not None and op.label_values is not None:
        labels[op.label_values.key] = value
    if unique and op.unique_label is not None:
        labels[op.unique_label] = unique
    return node


def pod_batches(op: CreatePods) -> list[Batch]:
    """The op's pods; with a per-index strategy or a Go template, each one different;
    with a signature batch size, alike by batches."""
    if isinstance(op.template, TextTemplate):
        made = [op.template.render(i, op.count) for i in range(op.count)]
        if op.per_index is not None:
            made = [indexed_pod(pod, op.per_index, i) for i, pod in enumerate(made)]
        return [(_signed(pod, op, i), 1) for i, pod in enumerate(made)]
    if op.per_index is not None:
        return [
            (_signed(indexed_pod(op.template, op.per_index, i), op, i), 1) for i in range(op.count)
        ]
    size = op.signature_batch or op.count
    return [
        (_signed(op.template, op, start), min(size, op.count - start))
        for start in range(0, op.count, size)
    ]


def _signed(pod: Manifest, op: CreatePods, index: int) -> dict[str, Any]:
    """Pod `index` of the op, labelled with its signature if the op gives a batch size."""
    if op.signature_batch is None:
        return dict(pod)
    signed: dict[str, Any] = copy_manifest(dict(pod))
    labels = signed.setdefault("metadata", {}).setdefault("labels", {})
    labels["signature"] = f"signature-label-{index // op.signature_batch}"
    return signed


def indexed_pod(template: Manifest, s: PerIndex, i: int) -> dict[str, Any]:
    """Pod `i` of a createPods op with a per-index strategy."""
    pod: dict[str, Any] = copy_manifest(dict(template))
    cpu_span = s.cpu_milli[1] - s.cpu_milli[0] + 1
    memory_span = s.memory_mi[1] - s.memory_mi[0] + 1
    amounts = {
        "cpu": f"{s.cpu_milli[0] + i % cpu_span}m",
        "memory": f"{s.memory_mi[0] + (i // cpu_span) % memory_span}Mi",
    }
    spec = pod.setdefault("spec", {})
    container = spec["containers"][0]
    container["resources"] = {"requests": dict(amounts), "limits": dict(amounts)}
    if s.affinity is not None:
        values = s.affinity.values
        chosen = [values[(i + k) % len(values)] for k in range(s.width)]
        term = {"matchExpressions": [{"key": s.affinity.key, "operator": "In", "values": chosen}]}
        node_affinity = spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [term]
        }
    return pod


def pod_group(name: str, namespace: str, min_member: int) -> dict[str, Any]:
    """A coscheduling PodGroup (scheduling.x-k8s.io/v1alpha1)."""
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minMember": min_member},
    }


def group_member(template: Manifest, group: str, index: int) -> dict[str, Any]:
    """Pod `<group>-<index>` of a gang, labelled with its PodGroup."""
    pod: dict[str, Any] = copy_manifest(dict(template))
    meta = pod.setdefault("metadata", {})
    meta.pop("generateName", None)
    meta["name"] = f"{group}-{index}"
    meta.setdefault("labels", {})[POD_GROUP_LABEL] = group
    return pod


def labels_of(manifest: Manifest) -> Mapping[str, str]:
    return (manifest.get("metadata") or {}).get("labels") or {}


@dataclass
class PriorityClasses:
    """PriorityClasses created so far; they turn priorityClassName into spec.priority, as the
    Priority admission plugin of the API server does."""

    values: dict[str, int] = field(default_factory=dict)
    global_default: int | None = None

    def add(self, manifest: Manifest) -> None:
        name = (manifest.get("metadata") or {}).get("name")
        value = manifest.get("value")
        if not isinstance(name, str) or not name:
            raise ValueError(f"PriorityClass: metadata.name={name!r}: must be a non-empty string")
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"PriorityClass {name}: value={value!r}: must be an integer")
        self.values[name] = value
        if manifest.get("globalDefault") is True:
            self.global_default = value

    def admit(self, pod: Manifest) -> Manifest:
        """The pod with spec.priority set from its class; ValueError for an unknown class."""
        spec = pod.get("spec") or {}
        name = spec.get("priorityClassName")
        if name is None and (self.global_default is None or "priority" in spec):
            return pod
        if name is not None and name not in self.values:
            raise ValueError(f"Pod: spec.priorityClassName={name!r}: no such PriorityClass")
        admitted: dict[str, Any] = copy_manifest(dict(pod))
        priority = self.values[name] if name is not None else self.global_default
        admitted.setdefault("spec", {})["priority"] = priority
        return admitted


def pods_made_by(workload: Manifest) -> int:
    """The pods a workload's controller makes in all: a Deployment's, a ReplicaSet's or a
    StatefulSet's replicas, a Job's completions (its parallelism without them); none
    known of a DaemonSet (one a node that fits) or of another kind."""
    spec = workload.get("spec") or {}
    if workload["kind"] in ("Deployment", "ReplicaSet", "StatefulSet"):
        return int(spec.get("replicas", 1))
    if workload["kind"] == "Job":
        return int(spec.get("completions") or spec.get("parallelism") or 1)
    return 0


@dataclass(frozen=True, slots=True)
class ClaimedPod:
    """A pod of a createPods op with volume templates, with its volume and claim."""

    volume: dict[str, Any]
    claim: dict[str, Any]
    pod: dict[str, Any]


def claimed(templates: ClaimTemplates, pod: Manifest, namespace: str, index: int) -> ClaimedPod:
    """Pod `index` of a createPods op with volume templates, as upstream's harness makes it
    (CreatePodWithPersistentVolume): a volume `<namespace>-vol-<index>` (a CSI one's
    handle its name; an in-tree EBS one's volumeID `vol-<index>`, which the pods of the
    same index in another op share, as upstream's do), claimed by `pvc-<index>`; a claim
    of that name naming the volume, bound (the template carries the bind-completed
    annotation); the pod's volumes replaced by one, `vol`, of that claim. The phases
    upstream writes (Bound) are left to a PV controller where one runs: nothing optimist
    reads depends on them."""
    claim_name, volume_name = f"pvc-{index}", f"{namespace}-vol-{index}"
    volume: dict[str, Any] = copy_manifest(dict(templates.volume))
    volume.setdefault("metadata", {})["name"] = volume_name
    spec = volume.setdefault("spec", {})
    if isinstance(spec.get("csi"), dict):
        spec["csi"]["volumeHandle"] = volume_name
    elif isinstance(spec.get("awsElasticBlockStore"), dict):
        spec["awsElasticBlockStore"]["volumeID"] = f"vol-{index}"
    spec["claimRef"] = {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
                        "namespace": namespace, "name": claim_name}  # fmt: skip
    claim: dict[str, Any] = copy_manifest(dict(templates.claim))
    claim.setdefault("metadata", {}).update(name=claim_name, namespace=namespace)
    claim.setdefault("spec", {})["volumeName"] = volume_name
    made: dict[str, Any] = copy_manifest(dict(pod))
    made.setdefault("spec", {})["volumes"] = [
        {"name": "vol", "persistentVolumeClaim": {"claimName": claim_name}}
    ]
    return ClaimedPod(volume, claim, made)
