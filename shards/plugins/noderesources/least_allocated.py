"""LeastAllocated: prefer the node with the most room left after placing the pod."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shards.framework import MAX_NODE_SCORE, PodClass, Rows
from shards.node_table import NodeTable
from shards.plugins.noderesources.resource_allocation import (
    DEFAULT_RESOURCES,
    ResourceWeight,
    divisors,
    requested_and_capacity,
    weighted_mean,
)


@dataclass(frozen=True, slots=True)
class LeastAllocated:
    resources: tuple[ResourceWeight, ...] = DEFAULT_RESOURCES

    def score(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray:
        """Per resource (capacity - requested) x 100 / capacity, 0 when over; weighted mean."""
        requested, capacity = requested_and_capacity(pod, table, rows, self.resources)
        counted = capacity > 0
        room = np.maximum(capacity - requested, 0)
        per_resource = room * MAX_NODE_SCORE // divisors(capacity, counted)
        return weighted_mean(per_resource, counted, self.resources)
