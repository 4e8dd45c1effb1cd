"""LeastAllocated: prefer the node with the most room left after placing the pod."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shards.framework import MAX_NODE_SCORE, PodClass, Rows
from shards.node_table import NodeTable
from shards.plugins.noderesources.resource_allocation import (
    DEFAULT_RESOURCES,
    ResourceWeight,
    requested_and_capacity,
    weighted_mean,
)


@dataclass(frozen=True, slots=True)
class LeastAllocated:
    resources: tuple[ResourceWeight, ...] = DEFAULT_RESOURCES

    def score(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray:
        requested, capacity = requested_and_capacity(pod, table, rows, self.resources)
        fits = (capacity > 0) & (requested <= capacity)
        safe = np.where(capacity > 0, capacity, 1)
        per_resource = np.where(fits, (capacity - requested) * MAX_NODE_SCORE // safe, 0)
        return weighted_mean(per_resource, self.resources)
