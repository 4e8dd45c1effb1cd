"""NodeResourcesBalancedAllocation: prefer the node whose resources end up equally used.

Upstream (v1.30) scores 100 x (1 - std) of the fractions requested/allocatable,
each capped at 1, over the resources the node has (a scalar resource counts
only if the pod asks for it). It uses the actual requests, not the non-zero
ones, and float64 arithmetic; the operations here run in the same order so
the floats, and so the truncated scores, are the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from shards.framework import MAX_NODE_SCORE, PodClass, Rows, ScorePlugin
from shards.node_table import NodeTable
from shards.plugins.noderesources.noderesources_args import NodeResourcesBalancedAllocationArgs
from shards.plugins.noderesources.resource_allocation import (
    DEFAULT_RESOURCES,
    ResourceWeight,
    divisors,
    requested_and_capacity,
)


def balanced_score(requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Upstream's balancedResourceScorer for every row of [rows, resources]."""
    counted = capacity > 0
    if counted.all():  # every node has every resource (int64 / int64 divides as float64)
        fractions = np.minimum(requested / capacity, 1.0)
        if fractions.shape[1] == 2:  # the default (cpu, memory): |a - b| / 2
            std = np.abs((fractions[:, 0] - fractions[:, 1]) / 2)
            score: npt.NDArray[np.int64] = np.trunc((1 - std) * float(MAX_NODE_SCORE)).astype(
                np.int64
            )
            return score
    fractions = np.minimum(
        requested.astype(np.float64) / divisors(capacity, counted).astype(np.float64), 1.0
    )
    fractions = np.where(counted, fractions, 0.0)
    if fractions.shape[1] == 2:  # |a - b| / 2, or 0 if one is left out
        std = np.where(counted.all(axis=1), np.abs((fractions[:, 0] - fractions[:, 1]) / 2), 0.0)
        return np.trunc((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)
    n = counted.sum(axis=1)
    total = np.zeros(len(n))
    for column in fractions.T:  # summed left to right, as upstream's loop
        total = total + column
    # with exactly two fractions upstream takes |a - b| / 2 of the first two counted
    pair = np.zeros(len(n))
    if fractions.shape[1] >= 2:
        packed = np.take_along_axis(fractions, np.argsort(~counted, axis=1, kind="stable"), axis=1)
        pair = np.abs((packed[:, 0] - packed[:, 1]) / 2)
    mean = total / np.maximum(n, 1)
    squares = np.zeros(len(n))
    for column, present in zip(fractions.T, counted.T, strict=True):
        squares = squares + np.where(present, (column - mean) * (column - mean), 0.0)
    spread = np.sqrt(squares / np.maximum(n, 1))
    std = np.where(n == 2, pair, np.where(n > 2, spread, 0.0))
    return np.trunc((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)


class NodeResourcesBalancedAllocation(ScorePlugin):
    name = "NodeResourcesBalancedAllocation"
    dynamic = True

    def __init__(self, resources: tuple[ResourceWeight, ...] = DEFAULT_RESOURCES) -> None:
        self.resources = resources

    @classmethod
    def from_args(cls, wire: Mapping[str, Any]) -> NodeResourcesBalancedAllocation:
        args = NodeResourcesBalancedAllocationArgs.from_wire(wire)
        return cls(tuple(ResourceWeight(r.name, r.weight) for r in args.resources))

    def score(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray:
        requested, capacity = requested_and_capacity(
            pod, table, rows, self.resources, use_requested=True
        )
        return balanced_score(requested, capacity)
