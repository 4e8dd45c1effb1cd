"""What the resource scorers share: the requested and allocatable amounts they judge.

Upstream's `resourceAllocationScorer` decides per node and resource what is
requested (what is on the node plus the pod) and what is allocatable; a
resource it leaves out gets allocatable 0, and every scorer skips those.
Requested counts what is committed and assumed on the node plus the pod;
for CPU and memory the NodeResourcesFit strategies use the non-zero amounts
(a container that asks for nothing counts as 100m / 200Mi), while
BalancedAllocation uses the actual requests.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from cluster import resources as res
from shards.framework import PodClass, Rows
from shards.node_table import NodeTable

_NONZERO_COLUMN = {res.CPU: res.NONZERO_CPU, res.MEMORY: res.NONZERO_MEMORY}


@dataclass(frozen=True, slots=True)
class ResourceWeight:
    name: str
    weight: int = 1


DEFAULT_RESOURCES = (ResourceWeight(res.CPU), ResourceWeight(res.MEMORY))


def resources_from_args(raw: Iterable[Mapping[str, Any]] | None) -> tuple[ResourceWeight, ...]:
    """ResourceSpec items as upstream defaults them: none means cpu and memory, weight 0 means 1."""
    resources = tuple(ResourceWeight(r["name"], int(r.get("weight") or 1)) for r in raw or ())
    return resources or DEFAULT_RESOURCES


def is_scalar(name: str) -> bool:
    """Upstream's IsScalarResourceName: extended, hugepages, prefixed native, attachable volumes."""
    return (
        res.is_extended(name)
        or "kubernetes.io/" in name
        or name.startswith(("hugepages-", "attachable-volumes-"))
    )


def _usage_column(name: str, use_requested: bool) -> str | None:
    """The column upstream reads this resource's request from; None if it never scores it."""
    if name in _NONZERO_COLUMN:
        return name if use_requested else _NONZERO_COLUMN[name]
    if name == res.EPHEMERAL_STORAGE or is_scalar(name):
        return name
    return None


def requested_and_capacity(
    pod: PodClass,
    table: NodeTable,
    rows: Rows,
    resources: tuple[ResourceWeight, ...],
    *,
    use_requested: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Two int64 arrays [rows, resources]: requested with the pod, and allocatable.

    Both are 0 where upstream leaves the resource out: a scalar resource the
    pod does not ask for, a resource the node does not have, or one upstream
    never scores (such as `pods`).
    """
    scored, cap_cols, used_cols, asked = _layout(
        pod.spec.requests, tuple(table.columns), resources, use_requested
    )
    count = len(table.alive[rows])
    requested = np.zeros((count, len(resources)), dtype=np.int64)
    capacity = np.zeros_like(requested)
    if len(scored):
        capacity[:, scored] = table.alloc[rows][:, cap_cols]
        used = table.used[rows][:, used_cols] + table.assumed[rows][:, used_cols]
        requested[:, scored] = used + asked
    requested[capacity == 0] = 0
    return requested, capacity


@functools.lru_cache(maxsize=4096)
def _layout(
    requests: tuple[tuple[str, int], ...],
    columns: tuple[str, ...],
    resources: tuple[ResourceWeight, ...],
    use_requested: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Which resources a class is scored on, and where: worked out once per class and layout.

    Returns the scored resources' positions, their allocatable and usage
    columns, and the pod's own request of each.
    """
    col = {name: i for i, name in enumerate(columns)}
    asks = dict(requests)
    scored, cap_cols, used_cols, asked = [], [], [], []
    for i, resource in enumerate(resources):
        source = _usage_column(resource.name, use_requested)
        if source not in col or resource.name not in col:
            continue  # no node has it: allocatable is 0 everywhere
        if asks.get(source, 0) == 0 and is_scalar(resource.name):
            continue
        scored.append(i)
        cap_cols.append(col[resource.name])
        used_cols.append(col[source])
        asked.append(asks.get(source, 0))
    return (
        np.array(scored, dtype=np.intp),
        np.array(cap_cols, dtype=np.intp),
        np.array(used_cols, dtype=np.intp),
        np.array(asked, dtype=np.int64),
    )


def weighted_sums(
    scores: np.ndarray, counted: np.ndarray, resources: tuple[ResourceWeight, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the sum of score x weight and the sum of weights, over the counted resources."""
    weights = np.where(counted, np.array([r.weight for r in resources], dtype=np.int64), 0)
    return (scores * weights).sum(axis=1), weights.sum(axis=1)


def weighted_mean(
    scores: np.ndarray, counted: np.ndarray, resources: tuple[ResourceWeight, ...]
) -> np.ndarray:
    """The integer weighted mean over the counted resources; 0 where none counts, as upstream."""
    total, weights = weighted_sums(scores, counted, resources)
    return np.where(weights > 0, total // np.maximum(weights, 1), 0)
