"""Placement quality: what a placement leaves usable, beside how fast it was made.

A fast scheduler that strands resources loses more than it gains (docs/design.md,
"Placement quality"). For one placement (nodes, bound pods) and one workload
(the pods the scheduler places) this measures, in exact integers:

- per resource (`cpu` in millicores, `memory` in bytes, `nvidia.com/gpu` in
  devices, whole GPUs asked for; `optimist.io/gpu-milli`, 1000 per GPU, every
  use of a GPU, shares included: cluster/gpus.py): allocatable, requested
  (by every bound pod), free, and
  **stranded**. The free amount of resource R on node N is stranded when
  R is free there but no *shape* of the workload that requests R fits on
  N. A shape is the requests of one workload pod (every resource the
  commit script checks, the pod slot included); it fits N when each
  requested amount is at most N's free amount (allocatable minus the
  requests of the pods bound there, background pods included). Only
  resources are judged: taints, selectors and affinity are not. A resource
  no workload pod requests is never stranded: nothing waits for it. So
  GPUs are stranded on a node whose CPU or memory is used up so far that
  no GPU pod of the workload fits, even though GPUs are free.
- whole free nodes: nodes holding no pod of the workload (background pods,
  such as DaemonSets, do not count: they run on every node);
- whole free 8-GPU nodes: nodes with at least 8 allocatable GPUs none of which
  any pod uses, whole or in part, where an 8-GPU job still lands;
- spread across zones (`topology.kubernetes.io/zone`): workload pods bound
  per zone (zones with none included) and the skew, max minus min.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Collection, Mapping
from typing import Any

import numpy as np

from cluster import resources as res
from cluster.errors import InvalidObject
from cluster.gpus import GPU, GPU_MILLI
from cluster.manifests import pod_from_manifest
from cluster.objects import ZONE_LABEL, Node, Pod
from optimist.offline.simulator import SimulatedCluster

REPORTED = (res.CPU, res.MEMORY, GPU, GPU_MILLI)
WHOLE_GPU_NODE = 8


def placement_quality(
    nodes: Mapping[str, Node],
    pods: Mapping[str, Pod],
    bindings: Mapping[str, str],
    workload: Collection[str],
) -> dict[str, Any]:
    """The quality figures (module docstring) as a JSON-able dict.

    `pods` holds every pod by key, `bindings` the node of each bound one
    (bindings to nodes or pods not given are ignored), and `workload` the
    keys of the scheduler's pods, bound or not: their requests are the shapes.
    """
    workload = set(workload)
    names = list(nodes)
    row = {name: i for i, name in enumerate(names)}
    bound = [(pods[k], row[n]) for k, n in bindings.items() if k in pods and n in row]
    shape_set = {_checked(pods[k].spec.requests) for k in workload if k in pods}
    columns = sorted(
        {r for n in nodes.values() for r in n.allocatable if not res.is_score_only(r)}
        | {r for shape in shape_set for r, _ in shape}
        | set(REPORTED)
    )
    col = {r: j for j, r in enumerate(columns)}
    alloc = np.zeros((len(names), len(columns)), dtype=np.int64)
    for i, name in enumerate(names):
        for r, amount in nodes[name].allocatable.items():
            if r in col:
                alloc[i, col[r]] = amount
    used = np.zeros_like(alloc)
    for (i, requests), count in Counter((i, pod.spec.requests) for pod, i in bound).items():
        for r, amount in _checked(requests):
            used[i, col[r]] += amount * count
    free = np.maximum(alloc - used, 0)
    shapes = np.zeros((len(shape_set), len(columns)), dtype=np.int64)
    for s, shape in enumerate(shape_set):
        for r, amount in shape:
            shapes[s, col[r]] = amount
    fits = np.zeros((len(names), len(shapes)), dtype=bool)  # node x shape: the shape fits
    for s, shape_row in enumerate(shapes):
        fits[:, s] = (free >= shape_row).all(axis=1)
    figures = {}
    for r in REPORTED:
        j = col[r]
        asking = shapes[:, j] > 0
        usable = fits[:, asking].any(axis=1) if asking.any() else np.ones(len(names), dtype=bool)
        figures[r] = {
            "allocatable": _total(alloc[:, j]),
            "requested": _total(used[:, j]),
            "free": _total(free[:, j]),
            "stranded": _total(free[~usable, j]),
        }
    ours = [(pod, i) for pod, i in bound if pod.key in workload]
    held = {i for _, i in ours}
    # untouched: no pod uses any of its GPUs, whole or a share (gpu-milli counts both)
    whole_gpu = (alloc[:, col[GPU]] >= WHOLE_GPU_NODE) & (used[:, col[GPU_MILLI]] == 0)
    return {
        "nodes": len(names),
        "workload_pods": len(workload),
        "workload_pods_bound": len(ours),
        "shapes": len(shape_set),
        "resources": figures,
        "whole_free_nodes": len(names) - len(held),
        "whole_free_gpu8_nodes": int(whole_gpu.sum()),
        "zones": _zones(nodes, names, ours),
    }


def cluster_quality(
    cluster: SimulatedCluster, workload: Collection[str] | None = None
) -> dict[str, Any]:
    """The quality of a simulated cluster's bindings; the workload defaults to every pod
    of the cluster's profiles. Pods whose manifest does not parse hold nothing and are left out.
    """
    pods = {}
    for key, manifest in cluster.pod_manifests.items():
        try:
            pods[key] = pod_from_manifest(manifest)
        except InvalidObject:
            continue
    if workload is None:
        workload = {k for k, p in pods.items() if p.scheduler_name in cluster.scheduler_names}
    return placement_quality(cluster.nodes, pods, cluster.bindings, workload)


@functools.lru_cache(maxsize=1024)
def _checked(requests: tuple[tuple[str, int], ...]) -> tuple[tuple[str, int], ...]:
    """The requests the commit script checks for fit: score-only amounts left out."""
    return tuple((r, a) for r, a in requests if a and not res.is_score_only(r))


def _total(amounts: np.ndarray) -> int:
    return int(amounts.sum(dtype=object)) if amounts.size else 0


def _zones(
    nodes: Mapping[str, Node], names: list[str], ours: list[tuple[Pod, int]]
) -> dict[str, Any]:
    zones = {nodes[n].labels[ZONE_LABEL] for n in names if ZONE_LABEL in nodes[n].labels}
    per_zone = Counter(dict.fromkeys(sorted(zones), 0))
    unzoned = 0
    for _, i in ours:
        zone = nodes[names[i]].labels.get(ZONE_LABEL)
        if zone is None:
            unzoned += 1
        else:
            per_zone[zone] += 1
    counts = list(per_zone.values())
    return {
        "label": ZONE_LABEL,
        "pods": dict(per_zone),
        "pods_without_zone": unzoned,
        "max": max(counts, default=0),
        "min": min(counts, default=0),
        "skew": max(counts, default=0) - min(counts, default=0),
    }
