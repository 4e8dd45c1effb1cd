"""What every NodeResourcesFit scoring strategy shares: requested and capacity per resource.

Requested counts what is committed and assumed on the node plus the pod
itself; for CPU and memory it uses the non-zero amounts (a container that
asks for nothing counts as 100m / 200Mi), as upstream's scorers do.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cluster import resources as res
from shards.framework import PodClass, Rows
from shards.node_table import NodeTable

_SCORE_COLUMN = {res.CPU: res.NONZERO_CPU, res.MEMORY: res.NONZERO_MEMORY}


@dataclass(frozen=True, slots=True)
class ResourceWeight:
    name: str
    weight: int = 1


DEFAULT_RESOURCES = (ResourceWeight(res.CPU), ResourceWeight(res.MEMORY))


def requested_and_capacity(
    pod: PodClass, table: NodeTable, rows: Rows, resources: tuple[ResourceWeight, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """Two int64 arrays [rows, resources]: requested with the pod, and allocatable."""
    table.ensure_columns(
        [_SCORE_COLUMN.get(r.name, r.name) for r in resources] + [r.name for r in resources]
    )
    used_cols = [table.col[_SCORE_COLUMN.get(r.name, r.name)] for r in resources]
    cap_cols = [table.col[r.name] for r in resources]
    # The pod was laid out before any column added just now; it asks for none of those.
    request = np.array(
        [pod.request[c] if c < len(pod.request) else 0 for c in used_cols], dtype=np.int64
    )
    requested = table.used[rows][:, used_cols] + table.assumed[rows][:, used_cols] + request
    capacity = table.alloc[rows][:, cap_cols]
    return requested, capacity


def weighted_mean(scores: np.ndarray, resources: tuple[ResourceWeight, ...]) -> np.ndarray:
    """Sum of score x weight over resources, divided by the weights, in integers as upstream."""
    weights = np.array([r.weight for r in resources], dtype=np.int64)
    total = int(weights.sum())
    if total == 0:
        return np.zeros(scores.shape[0], dtype=np.int64)
    return (scores * weights).sum(axis=1) // total
