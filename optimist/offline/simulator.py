"""A simulated cluster: nodes and pods made from Kubernetes-style templates.

It stands where the API server stands: it holds the manifests, hands new
pods of our profiles to the scheduler as a watch would, and records bindings,
refusing a second binding of a pod as the API server does (409).
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from cluster.cluster_adapter import Binding, ClusterState
from cluster.disruption import DisruptionBudget
from cluster.errors import InvalidObject
from cluster.gpus import GPU_INDICES_ANNOTATION, format_indices
from cluster.manifests import (
    budget_from_manifest,
    copy_manifest,
    node_from_manifest,
    pod_from_manifest,
    pod_group,
    podgroup_from_manifest,
    reservation_from_manifest,
    scheduler_name,
)
from cluster.objects import HOSTNAME_LABEL, Node, Pod, PodGroup
from cluster.quota import Quota, quota_from_manifest
from cluster.reservations import Reservation
from cluster.volumes.index import VolumeChange, VolumeIndex
from cluster.volumes.storage_manifests import ephemeral_named, pod_volumes
from cluster.volumes.storage_objects import PodVolume
from cluster.workload_selectors import WorkloadSelectors, workload_selector_from_manifest

# Kubernetes' generateName alphabet: no vowels, no look-alike characters.
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_SUFFIX_LENGTH = 5


def load_template(path: str | Path) -> dict[str, Any]:
    with open(path) as f:
        doc = yaml.safe_load(f)
    if not isinstance(doc, dict) or "kind" not in doc:
        raise ValueError(f"{path}: not a Kubernetes object (no kind)")
    return doc


@dataclass
class SimulatedCluster:
    scheduler_names: frozenset[str] = frozenset({"default-scheduler"})
    seed: int = 0
    # False for a long run (a soak): keep nothing of deleted pods, neither their names
    # (free again, as in Kubernetes) nor a binding log; "bound once" then rests on
    # `bind` refusing a bound pod, as the API server does, and the checker's count of
    # the log has nothing to read
    keep_history: bool = True
    nodes: dict[str, Node] = field(default_factory=dict)
    node_manifests: dict[str, dict[str, Any]] = field(default_factory=dict)
    pod_manifests: dict[str, dict[str, Any]] = field(default_factory=dict)
    bindings: dict[str, str] = field(default_factory=dict)
    bind_log: list[Binding] = field(default_factory=list)
    # PodGroup -> its pods deleted after they were bound: a gang placed whole stays whole
    # when its pods finish and go
    departed_members: Counter[str] = field(default_factory=Counter)
    evicted: list[str] = field(default_factory=list)  # pods deleted by preemption, in order
    reservations: dict[str, Reservation] = field(default_factory=dict)  # by name
    pod_groups: dict[str, PodGroup] = field(default_factory=dict)
    reports: dict[str, tuple[str, str]] = field(default_factory=dict)  # pod -> last failure
    nominated: dict[str, str] = field(default_factory=dict)  # pod -> nominatedNodeName
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> labels
    _new: list[str] = field(default_factory=list)
    _new_groups: list[PodGroup] = field(default_factory=list)
    _new_namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
    _new_budgets: list[DisruptionBudget] = field(default_factory=list)
    _new_quotas: list[Quota] = field(default_factory=list)
    _new_reservations: list[Reservation] = field(default_factory=list)
    _volume_changes: list[VolumeChange] = field(default_factory=list)
    # every volume object put and not deleted, as the cluster holds them: (resource,
    # namespace/name) -> manifest, read by the invariant checker (`volume_objects`)
    volume_manifests: dict[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)
    _names: set[str] = field(default_factory=set)
    _new_nodes: list[Node] = field(default_factory=list)
    _deleted_nodes: list[str] = field(default_factory=list)
    _deleted_pods: list[str] = field(default_factory=list)
    _parsed: dict[str, Pod] = field(default_factory=dict)  # pods created like a parsed one
    # the last pod parsed, by its manifest but its name and claims (`_parse`)
    _last_parsed: tuple[dict[str, Any], Pod] | None = None
    # Services' and controllers' selectors, for the default spreading of the pods taken
    selectors: WorkloadSelectors = field(default_factory=WorkloadSelectors)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def _name(self, meta: Mapping[str, Any], namespace: str) -> str:
        if meta.get("name"):
            return str(meta["name"])
        prefix = meta.get("generateName")
        if not prefix:
            raise ValueError("template has neither metadata.name nor metadata.generateName")
        while True:
            suffix = "".join(self._rng.choices(_SUFFIX_ALPHABET, k=_SUFFIX_LENGTH))
            if f"{namespace}/{prefix}{suffix}" not in self._names:
                return f"{prefix}{suffix}"

    def create_nodes(
        self, template: Mapping[str, Any], count: int, hostname_label: bool = False
    ) -> list[Node]:
        """`count` nodes of the template; with `hostname_label`, each labelled
        kubernetes.io/hostname with its name, as a kubelet registers it (and as
        scheduler_perf's node preparer makes its nodes)."""
        made = []
        for _ in range(count):
            manifest = copy_manifest(dict(template))
            meta = manifest.setdefault("metadata", {})
            meta["name"] = self._name(meta, "")
            meta.pop("generateName", None)
            if hostname_label:  # a label the template was given for it stays, as a
                # strategy's applied after registration does upstream
                meta["labels"] = {HOSTNAME_LABEL: meta["name"], **(meta.get("labels") or {})}
            node = node_from_manifest(manifest)
            self._names.add(f"/{node.name}")
            self.nodes[node.name] = node
            self.node_manifests[node.name] = manifest
            made.append(node)
        self._new_nodes.extend(made)
        return made

    def delete_nodes(self, names: list[str]) -> None:
        """Delete nodes; their pods go with them, as the pod garbage collector would do."""
        gone = set(names) & self.nodes.keys()
        for name in gone:
            del self.nodes[name]
            del self.node_manifests[name]
        self._deleted_nodes.extend(sorted(gone))
        self.delete_pods([pod for pod, node in self.bindings.items() if node in gone])

    def take_node_events(self) -> tuple[list[Node], list[str]]:
        """Nodes created since the last call, and the names of nodes deleted since then."""
        made = [n for n in self._new_nodes if self.nodes.get(n.name) is n]
        gone = self._deleted_nodes
        self._new_nodes, self._deleted_nodes = [], []
        return made, gone

    def create_pods(
        self, template: Mapping[str, Any], count: int, namespace: str = "default"
    ) -> list[str]:
        """Create pods as the API server would; returns their keys (namespace/name).

        The pods of one call share one copy of the template's spec (nothing
        changes a stored manifest in place), and the watch parses it once: the
        simulator stands in for the API server, and must not be what limits
        a benchmark. `pod_from_manifest` alone is measured in docs/performance.md.
        """
        base = copy_manifest(dict(template))
        like: Pod | None = None  # the call's first pod, parsed if valid: the others are like it
        keys = []
        for i in range(count):
            meta = dict(base.get("metadata") or {})
            meta["namespace"] = meta.get("namespace") or namespace
            meta["name"] = self._name(meta, meta["namespace"])
            meta.pop("generateName", None)
            manifest = {**base, "metadata": meta}
            key = f"{meta['namespace']}/{meta['name']}"
            self._names.add(key)
            self.pod_manifests[key] = manifest
            owned = self._watch(key)  # another scheduler's pods are nobody's to parse
            if owned and i == 0:
                like = self._parse(manifest)
                if like is not None:
                    self._parsed[key] = like
            elif owned and like is not None:
                volumes = ephemeral_named(like.volumes, meta["name"])
                self._parsed[key] = _named_like(like, manifest, volumes)
            keys.append(key)
        return keys

    def _parse(self, manifest: dict[str, Any]) -> Pod | None:
        """The pod, parsed; where it differs from the last one parsed only in its name and
        the claims its volumes name (a pod of a volume workload: a claim each), that one
        with its volumes read again."""
        shape = _shape(manifest)
        if self._last_parsed is not None and self._last_parsed[0] == shape:
            meta, spec = manifest["metadata"], manifest.get("spec") or {}
            try:
                volumes = pod_volumes(f"Pod {meta['namespace']}/{meta['name']}", meta["name"], spec)
            except InvalidObject:
                return None
            return _named_like(self._last_parsed[1], manifest, volumes)
        parsed = _valid_pod(manifest)
        self._last_parsed = (shape, parsed) if parsed is not None else None
        return parsed

    def _watch(self, key: str) -> bool:
        """Deliver the pod to the scheduler's watch if one of its profiles owns it; whether so."""
        owned = scheduler_name(self.pod_manifests[key]) in self.scheduler_names
        if owned:
            self._new.append(key)
        return owned

    def create_pod_group(self, manifest: Mapping[str, Any]) -> PodGroup:
        """A PodGroup (gang), as the coscheduling CRD defines it."""
        group = podgroup_from_manifest(manifest)
        self.pod_groups[group.key] = group
        self._new_groups.append(group)
        return group

    def create_workload_selector(self, manifest: Mapping[str, Any]) -> str:
        """A Service (or a controller without its pods), named as the API server names it:
        what default spreading reads of it. Its key (namespace/name)."""
        meta = dict(manifest.get("metadata") or {})
        namespace = str(meta.get("namespace") or "default")
        meta["name"] = self._name(meta, namespace)
        self._names.add(f"{namespace}/{meta['name']}")
        made = workload_selector_from_manifest({**manifest, "metadata": meta})
        self.selectors.put(made)
        return f"{made.namespace}/{made.name}"

    def delete_workload_selector(self, kind: str, key: str) -> None:
        """A Service (or controller) `create_workload_selector` made, deleted."""
        namespace, _, name = key.partition("/")
        self.selectors.remove(kind, namespace, name)

    def create_disruption_budget(self, manifest: Mapping[str, Any]) -> DisruptionBudget:
        """A policy/v1 PodDisruptionBudget."""
        budget = budget_from_manifest(manifest)
        self._new_budgets.append(budget)
        return budget

    def take_new_budgets(self) -> list[DisruptionBudget]:
        budgets, self._new_budgets = self._new_budgets, []
        return budgets

    def create_elastic_quota(self, manifest: Mapping[str, Any]) -> Quota:
        """An ElasticQuota object (`cluster.quota.quota_from_manifest`)."""
        quota = quota_from_manifest(manifest)
        self._new_quotas.append(quota)
        return quota

    def take_new_quotas(self) -> list[Quota]:
        quotas, self._new_quotas = self._new_quotas, []
        return quotas

    def create_reservation(self, manifest: Mapping[str, Any]) -> Reservation:
        """A Reservation (`cluster.manifests.reservation_from_manifest`); a watch delivers
        it if its template's schedulerName is one of ours."""
        reservation = reservation_from_manifest(manifest, time.time())
        self.reservations[reservation.name] = reservation
        if reservation.pod.scheduler_name in self.scheduler_names:
            self._new_reservations.append(reservation)
        return reservation

    def take_new_reservations(self) -> list[Reservation]:
        reservations, self._new_reservations = self._new_reservations, []
        return reservations

    def put_volume_object(
        self, resource: str, manifest: Mapping[str, Any], *, deleted: bool = False
    ) -> None:
        """A PersistentVolumeClaim, PersistentVolume, StorageClass or CSINode
        (`resource` as `cluster.volumes.index` names them) made, changed or deleted."""
        self._volume_changes.append(VolumeChange(resource, manifest, deleted))
        meta = manifest.get("metadata") or {}
        key = (resource, f"{meta.get('namespace') or ''}/{meta.get('name')}")
        if deleted:
            self.volume_manifests.pop(key, None)
        else:
            self.volume_manifests[key] = manifest

    def volume_objects(self) -> VolumeIndex:
        """The volume objects the cluster holds, decoded (for the invariant checker)."""
        index = VolumeIndex()
        for (resource, _), manifest in self.volume_manifests.items():
            index.apply(resource, manifest)
        return index

    def take_volume_events(self) -> list[VolumeChange]:
        changes, self._volume_changes = self._volume_changes, []
        return changes

    def create_namespace(self, name: str, labels: Mapping[str, str]) -> None:
        """A namespace with labels (the API server adds kubernetes.io/metadata.name)."""
        self.namespaces[name] = {**labels, "kubernetes.io/metadata.name": name}
        self._new_namespaces[name] = self.namespaces[name]

    def snapshot(self) -> ClusterState:
        pods = []
        for key, node in self.bindings.items():
            manifest = self.pod_manifests[key]
            pods.append(
                pod_from_manifest({**manifest, "spec": {**manifest["spec"], "nodeName": node}})
            )
        return ClusterState(list(self.nodes.values()), dict(self.namespaces), pods)

    def objects(self) -> dict[str, Any]:
        """The cluster as `kubectl get nodes,pods -A -o json` prints it (the nodes, and the
        pods with their node or the last failure reported for them): a snapshot that
        `optimist replay` and `optimist explain --snapshot` read."""
        items: list[dict[str, Any]] = [
            {"apiVersion": "v1", "kind": "Node", **manifest}
            for manifest in self.node_manifests.values()
        ]
        for key, manifest in self.pod_manifests.items():
            pod = {"apiVersion": "v1", "kind": "Pod", **manifest}
            if key in self.bindings:
                pod["spec"] = {**manifest["spec"], "nodeName": self.bindings[key]}
            elif key in self.reports:
                reason, message = self.reports[key]
                condition = {"type": "PodScheduled", "status": "False", "reason": reason}
                pod["status"] = {
                    "phase": "Pending",
                    "conditions": [{**condition, "message": message}],
                }
            items.append(pod)
        return {"apiVersion": "v1", "kind": "List", "items": items}

    def take_namespace_events(self) -> tuple[dict[str, dict[str, str]], list[str]]:
        made, self._new_namespaces = self._new_namespaces, {}
        return made, []

    def take_new_groups(self) -> list[PodGroup]:
        """PodGroups created since the last call."""
        groups, self._new_groups = self._new_groups, []
        return groups

    def delete_pods(self, keys: list[str]) -> None:
        """Delete pods, bound or pending; a deleted pod is never bound afterwards."""
        for key in keys:
            self._parsed.pop(key, None)
            manifest = self.pod_manifests.pop(key, None)
            if manifest is not None:
                if self.bindings.pop(key, None) is not None and (group := pod_group(manifest)):
                    self.departed_members[group] += 1
                self._deleted_pods.append(key)
                if not self.keep_history:
                    self._names.discard(key)

    def evict(self, pods: list[str]) -> list[str | None]:
        """Preemption's victims: deleted at once, as a pod with no grace period would be."""
        errors: list[str | None] = [
            None if key in self.pod_manifests else f"pods {key!r} not found" for key in pods
        ]
        self.evicted.extend(key for key, error in zip(pods, errors, strict=True) if error is None)
        self.delete_pods(pods)
        return errors

    def update_pod(self, key: str, manifest: Mapping[str, Any]) -> None:
        """Replace a pod's manifest (e.g. its scheduling gates removed); a watch sees it again."""
        if key not in self.pod_manifests:
            raise KeyError(f"pods {key!r} not found")
        self.pod_manifests[key] = copy_manifest(dict(manifest))
        self._parsed.pop(key, None)
        if key not in self.bindings:
            self._watch(key)

    def take_running_pods(self) -> list[Pod]:
        """Nobody else binds here: `add_running_pods`' caller commits those pods itself."""
        return []

    def report_unschedulable(self, failures: list[tuple[str, str, str]]) -> None:
        for pod, reason, message in failures:
            self.reports[pod] = (reason, message)

    def nominate(self, nominations: dict[str, str]) -> None:
        self.nominated.update(nominations)

    def late_failures(self) -> dict[str, int]:
        return {}  # no PreBind here: every binding is done at its commit

    def take_deleted_pods(self) -> list[str]:
        """Keys of the pods deleted since the last call."""
        gone, self._deleted_pods = self._deleted_pods, []
        return gone

    def take_new_pods(self) -> tuple[list[Pod], list[tuple[str, InvalidObject]]]:
        """Pods of our profiles created or changed since the last call, as a watch delivers them.

        A manifest optimist cannot use comes back as an error naming its field;
        it is reported, and the other pods go on.
        """
        pods: list[Pod] = []
        errors: list[tuple[str, InvalidObject]] = []
        for key in self._new:
            if key not in self.pod_manifests:
                continue  # deleted before the watch delivered it
            parsed = self._parsed.pop(key, None)
            try:
                pod = parsed or pod_from_manifest(self.pod_manifests[key])
            except InvalidObject as err:
                errors.append((key, err))
                continue
            pods.append(self.selectors.with_spread_selector(pod))
        self._new.clear()
        return pods, errors

    def bind(self, bindings: list[Binding]) -> list[str | None]:
        """The `pods/binding` subresource, for many pods: an error string per failed binding."""
        errors: list[str | None] = []
        for b in bindings:
            if b.pod not in self.pod_manifests:
                errors.append(f"pods {b.pod!r} not found")
            elif b.pod in self.bindings:
                errors.append(f"pod {b.pod} is already assigned to node {self.bindings[b.pod]}")
            elif b.node not in self.nodes:
                errors.append(f"node {b.node!r} not found")
            else:
                if b.gpus:  # as the kube adapter does: annotated, then bound
                    meta = self.pod_manifests[b.pod]["metadata"]  # the pod's own
                    meta["annotations"] = {  # a template's map may be shared: copied
                        **(meta.get("annotations") or {}),
                        GPU_INDICES_ANNOTATION: format_indices(b.gpus),
                    }
                self.bindings[b.pod] = b.node
                if self.keep_history:
                    self.bind_log.append(b)
                errors.append(None)
        return errors

    def add_running_pods(self, pods: list[Pod]) -> list[str | None]:
        """Pods already running on their node (`spec.nodeName`), as a real cluster's snapshot
        has them: recorded bound, never handed to the scheduler, never in the binding log.

        Whoever adds them commits their requests to the node store first, so that
        they count there too. An error string per refused pod, as `bind` gives.
        """
        errors: list[str | None] = []
        for pod in pods:
            if pod.manifest is None or pod.key in self.pod_manifests:
                errors.append(f"pod {pod.key} has no manifest or exists already")
            elif pod.node_name not in self.nodes:
                errors.append(f"node {pod.node_name!r} not found")
            else:
                self._names.add(pod.key)
                self.pod_manifests[pod.key] = copy_manifest(dict(pod.manifest))
                self.bindings[pod.key] = pod.node_name
                errors.append(None)
        return errors


def _named_like(like: Pod, manifest: dict[str, Any], volumes: tuple[PodVolume, ...]) -> Pod:
    """A pod parsed as `like` was, but for its name, uid and manifest, and its volumes."""
    meta = manifest["metadata"]
    uid = str(meta.get("uid") or f"{meta['namespace']}/{meta['name']}")
    return replace(like, name=meta["name"], uid=uid, manifest=manifest, volumes=volumes)


def _shape(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """A pod manifest but its name and its volumes' claims."""
    meta = {k: v for k, v in (manifest.get("metadata") or {}).items() if k not in ("name", "uid")}
    spec = {k: v for k, v in (manifest.get("spec") or {}).items() if k != "volumes"}
    volumes = [
        {k: v for k, v in volume.items() if k != "persistentVolumeClaim"}
        for volume in (manifest.get("spec") or {}).get("volumes") or []
    ]
    return {**manifest, "metadata": meta, "spec": spec, "volumes": volumes}


def _valid_pod(manifest: Mapping[str, Any]) -> Pod | None:
    """The pod, or None if it is invalid: the watch then parses (and reports) each one."""
    try:
        return pod_from_manifest(manifest)
    except InvalidObject:
        return None
