"""NodeResourcesFit: the pod's requests fit in what the node has left; scored by a strategy."""

from __future__ import annotations

from collections import Counter
from typing import Any, Protocol

import numpy as np

from cluster import resources as res
from shards.framework import FilterPlugin, PodClass, Rows, ScorePlugin
from shards.node_table import NodeTable
from shards.plugins.noderesources.least_allocated import LeastAllocated
from shards.plugins.noderesources.resource_allocation import DEFAULT_RESOURCES, ResourceWeight


class ScoringStrategy(Protocol):
    def score(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray: ...


def _free(pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray:
    cols = pod.checked
    return (table.alloc[rows][:, cols] - table.used[rows][:, cols]) - table.assumed[rows][:, cols]


def _reason(resource: str) -> str:
    return "Too many pods" if resource == res.PODS else f"Insufficient {resource}"


class NodeResourcesFit(FilterPlugin, ScorePlugin):
    name = "NodeResourcesFit"
    dynamic = True

    def __init__(self, strategy: ScoringStrategy | None = None) -> None:
        self.strategy = strategy or LeastAllocated()

    @classmethod
    def from_args(cls, args: dict[str, Any]) -> NodeResourcesFit:
        """From NodeResourcesFitArgs (validated where the configuration was read)."""
        strategy = args.get("scoringStrategy") or {}
        resources = (
            tuple(
                ResourceWeight(r["name"], int(r.get("weight", 1)))
                for r in strategy.get("resources") or ()
            )
            or DEFAULT_RESOURCES
        )
        kind = strategy.get("type", "LeastAllocated")
        if kind != "LeastAllocated":
            raise ValueError(f"NodeResourcesFit: scoring strategy {kind!r} is not available yet")
        return cls(LeastAllocated(resources))

    def filter(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray:
        return (_free(pod, table, rows) >= pod.request[pod.checked]).all(axis=1)

    def reasons(self, pod: PodClass, table: NodeTable, rows: np.ndarray) -> Counter[str]:
        short = _free(pod, table, rows) < pod.request[pod.checked]
        return Counter(
            {
                _reason(table.columns[c]): int(n)
                for c, n in zip(pod.checked, short.sum(axis=0), strict=True)
                if n
            }
        )

    def score(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray:
        return self.strategy.score(pod, table, rows)
