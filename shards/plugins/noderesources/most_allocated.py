"""MostAllocated: prefer the node the pod fills the most, to bin-pack."""

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
class MostAllocated:
    resources: tuple[ResourceWeight, ...] = DEFAULT_RESOURCES

    def score(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray:
        """Per resource requested x 100 / capacity, requested capped at capacity; weighted mean.

        Requested may exceed capacity because pods without requests count
        with the non-zero defaults; upstream caps it rather than scoring 0.
        """
        requested, capacity = requested_and_capacity(pod, table, rows, self.resources)
        counted = capacity > 0
        used = np.minimum(requested, capacity)
        per_resource = used * MAX_NODE_SCORE // divisors(capacity, counted)
        return weighted_mean(per_resource, counted, self.resources)
