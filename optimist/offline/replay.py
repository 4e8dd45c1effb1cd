"""`optimist replay`: schedule a real cluster's pods again, offline, and compare.

The input is what `kubectl get nodes,pods,podgroups -A -o yaml` prints: a
`kind: List` whose `items` are the objects. Which pods take part, and how:

- **replayed**: pods of the profiles optimist runs (`spec.schedulerName` in
  `Settings.scheduler_names`), bound or pending, unless pinned. They are
  created again without what the server added (`status`, `managedFields`,
  `resourceVersion`, `uid`, `creationTimestamp`, and `spec.nodeName`), in
  the order they were created, and optimist places them from scratch.
- **background**: bound pods that optimist would not place itself, because
  another scheduler owns them or because they are pinned to their node
  (DaemonSet pods, static pods and their mirrors). They stay where they run
  and count as load: their requests are committed to the node store on
  their node and they are recorded bound in the simulated cluster before
  any replayed pod exists. Pending ones of these hold nothing and are left
  out.
- **left out**: terminated pods (`status.phase` Succeeded or Failed) hold
  nothing on their node; objects of other kinds are counted and skipped.

A bad object (one `cluster.manifests` refuses, a duplicate, a background
pod on a node the snapshot lacks or that has no room for it) is reported
with its name and field, and the rest of the replay goes on.

The report puts the placement quality (`optimist.offline.quality`) of the pods where
they are beside that of optimist's placement, and says how many pods optimist
placed, could not place (with reasons) and moved to another node.
"""

from __future__ import annotations

import csv
import json
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from cluster.errors import InvalidObject
from cluster.manifests import (
    node_from_manifest,
    pod_from_manifest,
    podgroup_from_manifest,
    terminated,
)
from cluster.objects import Pod
from cluster.store import Store, pinned
from optimist.loop import SchedulingLoop
from optimist.offline import provenance
from optimist.offline.invariants import check_invariants
from optimist.offline.quality import cluster_quality, placement_quality
from optimist.offline.simulator import SimulatedCluster
from optimist.runtime import Platform
from optimist.settings import Settings

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
# What the API server adds to an object; a pod created again has none of it.
SERVER_METADATA = ("managedFields", "resourceVersion", "uid", "creationTimestamp", "generation")
_COMMIT_CHUNK = 1000


class SnapshotError(ValueError):
    """The file is not a snapshot at all (unreadable, not YAML, no list of items)."""


@dataclass(slots=True)
class Snapshot:
    """A cluster's objects sorted into what the replay does with them."""

    source: str
    node_manifests: list[dict[str, Any]] = field(default_factory=list)
    group_manifests: list[dict[str, Any]] = field(default_factory=list)
    replayed: list[Pod] = field(default_factory=list)  # in creation order, manifests stripped
    background: list[Pod] = field(default_factory=list)  # bound, staying where they are
    actual: dict[str, str] = field(default_factory=dict)  # replayed pod -> its node in the snapshot
    left_out: Counter[str] = field(default_factory=Counter)  # why -> objects
    errors: list[str] = field(default_factory=list)


def load_snapshot(path: Path, scheduler_names: frozenset[str]) -> Snapshot:
    """Read and sort a `kubectl get ... -o yaml` (or `-o json`) file; raises `SnapshotError`
    if it is none. JSON is read as JSON: for a large cluster that is many times faster."""
    try:
        text = path.read_text()
        if text.lstrip().startswith("{"):
            doc = json.loads(text)
        else:
            doc = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, yaml.YAMLError) as err:
        raise SnapshotError(f"{path}: {err}") from err
    return read_snapshot(doc, scheduler_names, str(path))


def read_snapshot(doc: object, scheduler_names: frozenset[str], source: str) -> Snapshot:
    """Sort a snapshot's objects (module docstring); each bad one becomes an error line."""
    items = doc.get("items") if isinstance(doc, Mapping) else None
    if not isinstance(items, list):
        raise SnapshotError(f"{source}: items: expected the list of a `kind: List` document")
    snap = Snapshot(source)
    pods: list[tuple[str, int, Pod]] = []  # (creationTimestamp, position, pod) to replay
    seen: set[str] = set()
    for i, item in enumerate(items):
        kind = item.get("kind") if isinstance(item, Mapping) else None
        try:
            if not isinstance(kind, str) or not kind:
                raise InvalidObject(f"{source}: items[{i}]", "kind", kind, "must be a string")
            if kind == "Node":
                _once(seen, f"Node {node_from_manifest(item).name}")
                snap.node_manifests.append(_stripped(item, status=True))
            elif kind == "PodGroup":
                group = podgroup_from_manifest(item)
                _once(seen, f"PodGroup {group.key}")
                snap.group_manifests.append(_stripped(item))
            elif kind == "Pod":
                _sort_pod(snap, item, scheduler_names, seen, pods, i)
            else:
                snap.left_out[f"kind {kind}"] += 1
        except InvalidObject as err:
            snap.errors.append(str(err))
    pods.sort(key=lambda p: p[:2])
    snap.replayed = [pod for _, _, pod in pods]
    return snap


def _sort_pod(
    snap: Snapshot,
    item: Mapping[str, Any],
    scheduler_names: frozenset[str],
    seen: set[str],
    replayed: list[tuple[str, int, Pod]],
    position: int,
) -> None:
    if terminated(item):
        snap.left_out[f"pod {item['status']['phase']}"] += 1
        return
    pod = pod_from_manifest(item)
    _once(seen, f"Pod {pod.key}")
    pinned = _pinned(pod.key, item["metadata"])
    if pod.scheduler_name in scheduler_names and not pinned:
        if pod.node_name:
            snap.actual[pod.key] = pod.node_name
        created = str(item["metadata"].get("creationTimestamp") or "")
        spec = replace(pod.spec, node_name="")
        unbound = replace(pod, spec=spec, node_name="", manifest=_stripped(item, node_name=False))
        replayed.append((created, position, unbound))
    elif pod.node_name:
        snap.background.append(replace(pod, manifest=_stripped(item)))
    else:
        snap.left_out[f"pending pod, {pinned or f'scheduler {pod.scheduler_name}'}"] += 1


def _once(seen: set[str], obj: str) -> None:
    if obj in seen:
        raise InvalidObject(obj, "metadata.name", obj.split(" ", 1)[1], "appears twice")
    seen.add(obj)


def _pinned(key: str, meta: Mapping[str, Any]) -> str:
    """What pins a pod to its node ("" if nothing): a DaemonSet, or the kubelet (static pod)."""
    owners = meta.get("ownerReferences") or []
    if not isinstance(owners, list) or not all(isinstance(o, Mapping) for o in owners):
        raise InvalidObject(f"Pod {key}", "metadata.ownerReferences", owners, "must be a list")
    kinds = {o.get("kind") for o in owners}
    if "DaemonSet" in kinds:
        return "DaemonSet pod"
    annotations = meta.get("annotations") or {}
    if "Node" in kinds or (isinstance(annotations, Mapping) and MIRROR_ANNOTATION in annotations):
        return "static pod"
    return ""


def _stripped(
    item: Mapping[str, Any], *, status: bool = False, node_name: bool = True
) -> dict[str, Any]:
    """The object as it would be created: none of the server's metadata, and no status
    (except a node's, which holds its allocatable) or, for a pod to place, no nodeName."""
    out = {k: v for k, v in item.items() if status or k != "status"}
    out["metadata"] = {k: v for k, v in item["metadata"].items() if k not in SERVER_METADATA}
    if not node_name and isinstance(item.get("spec"), Mapping):
        out["spec"] = {k: v for k, v in item["spec"].items() if k != "nodeName"}
    return out


@dataclass(slots=True)
class ReplayRun:
    report: dict[str, Any]
    snapshot: Snapshot
    cluster: SimulatedCluster
    unschedulable: dict[str, str]

    @property
    def ok(self) -> bool:
        return not self.report["invariant_violations"]


def run_replay(snapshot: Snapshot, settings: Settings) -> ReplayRun:
    """Place the snapshot's replayed pods with optimist, around its background pods."""
    cluster = SimulatedCluster(settings.scheduler_names, seed=settings.seed)
    for manifest in snapshot.node_manifests:
        cluster.create_nodes(manifest, 1)
    errors = list(snapshot.errors)
    with Platform(settings) as platform:
        store = platform.store
        store.clear()
        store.put_nodes(cluster.nodes.values())
        background = run_in_place(store, cluster, snapshot.background, errors)
        for manifest in snapshot.group_manifests:
            cluster.create_pod_group(manifest)
        loop = SchedulingLoop(platform, cluster)
        loop.add_running(background)
        start = time.perf_counter()
        for pod in snapshot.replayed:
            cluster.create_pods(pod.manifest or {}, 1)
        loop.run_until_settled()
        duration = time.perf_counter() - start
        unschedulable = loop.dispatcher.unschedulable()
        violations = check_invariants(cluster, unschedulable, store)
        stats = loop.dispatcher.stats
        redis_info = store.client.info("server")
    replayed = [p.key for p in snapshot.replayed]
    placed = {k: cluster.bindings[k] for k in replayed if k in cluster.bindings}
    actual = snapshot.actual
    # The placement as the snapshot has it: the same nodes and background pods.
    pods = {p.key: p for p in [*snapshot.replayed, *background]}
    as_found = {**{p.key: p.node_name for p in background}, **actual}
    return ReplayRun(
        report={
            "snapshot": snapshot.source,
            "nodes": len(cluster.nodes),
            "pods_background": len(background),
            "pods_replayed": len(replayed),
            "pods_bound_in_snapshot": len(actual),
            "pods_placed": len(placed),
            "pods_unplaced": len(replayed) - len(placed),
            "unplaced_reasons": provenance.reason_counts(
                {k: unschedulable.get(k, "not placed") for k in replayed if k not in placed}
            ),
            "pods_moved": sum(1 for k, n in placed.items() if actual.get(k, n) != n),
            "pods_kept": sum(1 for k, n in placed.items() if actual.get(k) == n),
            "pods_newly_placed": sum(1 for k in placed if k not in actual),
            "pods_displaced": sum(1 for k in actual if k not in placed),
            "left_out": dict(snapshot.left_out),
            "errors": errors,
            "quality": {
                "snapshot": placement_quality(cluster.nodes, pods, as_found, replayed),
                "optimist": cluster_quality(cluster, workload=replayed),
            },
            "conflicts": stats.conflicts,
            "attempts": stats.pod_attempts,
            "attempts_per_pod": stats.pod_attempts / len(replayed) if replayed else 0.0,
            "duration_s": duration,
            "invariant_violations": violations[:100],
            "config": settings.public(),
            "machine": provenance.machine(),
            "versions": provenance.versions(redis_info),
        },
        snapshot=snapshot,
        cluster=cluster,
        unschedulable=unschedulable,
    )


def run_in_place(
    store: Store, cluster: SimulatedCluster, pods: Sequence[Pod], errors: list[str]
) -> list[Pod]:
    """Commit background pods on their nodes, then record them bound; returns those that are.

    A pod whose node is missing or full is an error and is left out: the
    commit script refuses what does not fit, as it does for any placement.
    """
    present = []
    for pod in pods:
        if pod.node_name in cluster.nodes:
            present.append(pod)
        else:
            errors.append(
                f"Pod {pod.key}: spec.nodeName={pod.node_name!r}: no such node in the snapshot; "
                "left out"
            )
    accepted = []
    for start in range(0, len(present), _COMMIT_CHUNK):
        chunk = present[start : start + _COMMIT_CHUNK]
        _, outcomes, _ = store.commit(*pinned(chunk))
        for pod, outcome in zip(chunk, outcomes, strict=True):
            if outcome.committed:
                accepted.append(pod)
            else:
                errors.append(
                    f"Pod {pod.key}: spec.nodeName={pod.node_name!r}: {outcome.status}: "
                    f"{outcome.detail}; left out"
                )
    for pod, error in zip(accepted, cluster.add_running_pods(accepted), strict=True):
        if error is not None:
            errors.append(f"Pod {pod.key}: {error}")
    return accepted


def write_comparison(run: ReplayRun, path: Path) -> None:
    """One row per replayed pod: where it is in the snapshot, where optimist put it, or why not."""
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["namespace", "pod", "snapshot_node", "optimist_node", "unplaced_reason"])
        for pod in sorted(run.snapshot.replayed, key=lambda p: p.key):
            node = run.cluster.bindings.get(pod.key, "")
            reason = "" if node else run.unschedulable.get(pod.key, "not placed")
            out.writerow(
                [pod.namespace, pod.name, run.snapshot.actual.get(pod.key, ""), node, reason]
            )
