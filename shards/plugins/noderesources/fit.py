"""NodeResourcesFit: the pod's requests fit in what the node has left; scored by a strategy.

Beyond upstream, GPUs fit per device (cluster/gpus.py): the node's totals
are not enough when no single GPU has the share a pod asks for, or fewer
GPUs than it asks for are untouched.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

import numpy as np

from cluster import resources as res
from cluster.events import ASSIGNED_POD_DELETE, NODE_ADD, NODE_UPDATE
from cluster.gpus import GPU, GPU_MILLI, NVLINK
from shards.framework import FilterPlugin, PodClass, Rows, ScorePlugin
from shards.gpu_fit import fits, fits_within
from shards.node_table import NodeTable, take_rows
from shards.plugins.noderesources.least_allocated import LeastAllocated
from shards.plugins.noderesources.most_allocated import MostAllocated
from shards.plugins.noderesources.noderesources_args import NodeResourcesFitArgs
from shards.plugins.noderesources.noderesources_args import ScoringStrategy as ScoringStrategyArgs
from shards.plugins.noderesources.requested_to_capacity_ratio import (
    RequestedToCapacityRatio,
    shape_of,
)
from shards.plugins.noderesources.resource_allocation import ResourceWeight


class ScoringStrategy(Protocol):
    def score(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray: ...


# scoringStrategy.type -> how to build it from its resources and the strategy's args
STRATEGIES: dict[
    str, Callable[[tuple[ResourceWeight, ...], ScoringStrategyArgs], ScoringStrategy]
] = {
    "LeastAllocated": lambda resources, _: LeastAllocated(resources),
    "MostAllocated": lambda resources, _: MostAllocated(resources),
    "RequestedToCapacityRatio": lambda resources, strategy: RequestedToCapacityRatio(
        resources, shape_of(strategy.requested_to_capacity_ratio)
    ),
}


def _reason(resource: str) -> str:
    return "Too many pods" if resource == res.PODS else f"Insufficient {resource}"


class NodeResourcesFit(FilterPlugin, ScorePlugin):
    name = "NodeResourcesFit"
    # room given back on a node, or a node with more room
    events = frozenset({ASSIGNED_POD_DELETE, NODE_ADD, NODE_UPDATE})
    dynamic = True
    preemptible = True  # evicting pods gives their requests back

    def __init__(
        self,
        strategy: ScoringStrategy | None = None,
        ignored: Iterable[str] = (),
        ignored_groups: Iterable[str] = (),
    ) -> None:
        self.strategy = strategy or LeastAllocated()
        self.ignored = frozenset(ignored)
        self.ignored_groups = frozenset(ignored_groups)

    @classmethod
    def from_args(cls, wire: Mapping[str, Any]) -> NodeResourcesFit:
        args = NodeResourcesFitArgs.from_wire(wire)
        strategy = args.scoring_strategy
        resources = tuple(ResourceWeight(r.name, r.weight) for r in strategy.resources)
        return cls(
            STRATEGIES[strategy.type](resources, strategy),
            args.ignored_resources or (),
            args.ignored_resource_groups or (),
        )

    def _checked(self, pod: PodClass, table: NodeTable) -> np.ndarray:
        """The pod's checked columns less the extended resources the args tell us to ignore."""
        if not (self.ignored or self.ignored_groups):
            return pod.checked
        return np.array(
            [
                c
                for c in pod.checked
                if not (
                    res.is_extended(name := table.columns[c])
                    and (name in self.ignored or name.split("/", 1)[0] in self.ignored_groups)
                )
            ],
            dtype=np.intp,
        )

    def _short(self, pod: PodClass, table: NodeTable, rows: Rows) -> tuple[np.ndarray, np.ndarray]:
        """The checked columns, and per row and column whether the node has too little left."""
        cols = self._checked(pod, table)
        free = take_rows(table.alloc, rows, cols) - table.in_use(rows, cols)
        return cols, free < pod.request[cols]

    def _per_gpu(self, pod: PodClass) -> bool:
        """Whether the pod's GPUs are checked device by device (unless ignored)."""
        return bool(pod.gpu) and GPU not in self.ignored and "nvidia.com" not in self.ignored_groups

    def filter(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray:
        ok = ~self._short(pod, table, rows)[1].any(axis=1)
        assert isinstance(ok, np.ndarray)  # rows x columns, so one answer per row
        if self._per_gpu(pod):
            free = table.gpu_free(rows)
            ok &= fits(free, pod.gpu)
            if pod.spec.gpu_locality:
                groups = take_rows(table.gpu_groups(pod.spec.gpu_locality), rows)
                ok &= fits_within(free, pod.gpu, groups)
        return ok

    def reasons(self, pod: PodClass, table: NodeTable, rows: np.ndarray) -> Counter[str]:
        cols, short = self._short(pod, table, rows)
        names = [table.columns[c] for c in cols]
        if pod.gpu.whole:  # the gpu-milli of whole GPUs is those GPUs: one reason
            names = [GPU if name == GPU_MILLI else name for name in names]
        out: Counter[str] = Counter()
        for name in dict.fromkeys(names):
            n = int(short[:, [i for i, x in enumerate(names) if x == name]].any(axis=1).sum())
            if n:
                out[_reason(name)] = n
        if self._per_gpu(pod):
            # enough in total, but not on the GPUs one by one, or not within one group
            free = table.gpu_free(rows)
            split = ~short.any(axis=1) & ~fits(free, pod.gpu)
            if split.any():
                what = (
                    f"Insufficient {GPU} (whole GPUs free)"
                    if pod.gpu.whole
                    else f"Insufficient {GPU_MILLI} on any single GPU"
                )
                out[what] = int(split.sum())
            if pod.spec.gpu_locality:
                groups = take_rows(table.gpu_groups(pod.spec.gpu_locality), rows)
                apart = ~short.any(axis=1) & ~split & ~fits_within(free, pod.gpu, groups)
                if apart.any():
                    where = "NVLink island" if pod.spec.gpu_locality == NVLINK else "NUMA node"
                    out[f"Insufficient {GPU} within one {where}"] = int(apart.sum())
        return out

    def score(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray:
        return self.strategy.score(pod, table, rows)
