"""RequestedToCapacityRatio: score each resource's utilization on a configured curve.

The curve is a broken linear function through (utilization, score) points;
upstream's points score 0..10 and are scaled by 10 to the node score range.
Everything is integer arithmetic with Go's truncating division, as upstream.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from shards.framework import MAX_NODE_SCORE, PodClass, Rows
from shards.node_table import NodeTable
from shards.plugins.noderesources.noderesources_args import (
    MAX_CUSTOM_PRIORITY_SCORE,
    RequestedToCapacityRatioParam,
)
from shards.plugins.noderesources.resource_allocation import (
    ResourceWeight,
    divisors,
    requested_and_capacity,
    weighted_sums,
)

MAX_UTILIZATION = 100


@dataclass(frozen=True, slots=True)
class ShapePoint:
    utilization: int
    score: int  # on the node score scale, 0..MAX_NODE_SCORE


def shape_of(ratio: RequestedToCapacityRatioParam | None) -> tuple[ShapePoint, ...]:
    """UtilizationShapePoints (checked by the args), scores scaled from 0..10 to 0..100
    as upstream does."""
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    points = ratio.shape if ratio is not None else []
    return tuple(ShapePoint(p.utilization, p.score * scale) for p in points)


def go_div(a: npt.NDArray[np.int64], b: int) -> npt.NDArray[np.int64]:
    """Integer division truncating toward zero, as Go's `/` (numpy's `//` floors)."""
    quotient = np.abs(a) // abs(b)
    return np.where((a < 0) != (b < 0), -quotient, quotient)


def broken_linear(shape: tuple[ShapePoint, ...], p: np.ndarray) -> np.ndarray:
    """Upstream's BuildBrokenLinearFunction applied to every utilization in `p`.

    The first point whose utilization is at least p decides: its score if it
    is the first point, else the line from the point before it.
    """
    out = np.full(p.shape, shape[-1].score, dtype=np.int64)
    for i in reversed(range(len(shape))):  # earlier points overwrite later ones
        point = shape[i]
        if i == 0:
            value: np.ndarray | int = point.score
        else:
            prev = shape[i - 1]
            rise = (point.score - prev.score) * (p - prev.utilization)
            value = prev.score + go_div(rise, point.utilization - prev.utilization)
        out = np.where(p <= point.utilization, value, out)
    return out


@dataclass(frozen=True, slots=True)
class RequestedToCapacityRatio:
    resources: tuple[ResourceWeight, ...]
    shape: tuple[ShapePoint, ...]

    def score(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray:
        """Curve of each resource's utilization (100 when over); weighted mean of the positive ones.

        Upstream leaves a resource that scores 0 out of the weights, and rounds
        the mean half up (math.Round of a non-negative quotient).
        """
        requested, capacity = requested_and_capacity(pod, table, rows, self.resources)
        counted = capacity > 0
        ratio = requested * MAX_UTILIZATION // divisors(capacity, counted)
        utilization = np.where(requested <= capacity, ratio, MAX_UTILIZATION)
        per_resource = broken_linear(self.shape, utilization)
        total, weights = weighted_sums(per_resource, counted & (per_resource > 0), self.resources)
        return np.where(weights > 0, (2 * total + weights) // (2 * np.maximum(weights, 1)), 0)
