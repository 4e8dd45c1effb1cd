"""GPUPlacementArgs (optimist's own): which policy places GPU pods, how many recent pods
make the workload it learns, and how ties between nodes are broken."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import field_validator

from cluster.config_types import Int32, Int64, PluginArgs, in_range
from shards.plugins.gpu_placement.workload import DEFAULT_WINDOW

DEFAULT_POLICY = "fgd-scarcity"  # the best on the Alibaba trace and its mixes (docs/gpus.md)


class GPUPlacementArgs(PluginArgs):
    policy: str = DEFAULT_POLICY
    """How GPU pods are placed: fgd-scarcity, fgd-sliver, fgd-capacity, fgd, best-fit,
    dot-product, gpu-packing, gpu-clustering or random (docs/gpus.md)."""
    window: Annotated[Int32, in_range(1)] = DEFAULT_WINDOW
    """How many recent pods make the workload a learning policy (fgd) places against."""
    tie_break: Literal["nodePriority", "random"] = "nodePriority"
    """Among the best nodes: nodePriority, a fixed ranking of the nodes (what packs
    pods); random, upstream's reservoir choice."""
    priority_seed: Int64 = 0
    """The seed of that ranking (and of the random policy)."""

    @field_validator("policy")
    @classmethod
    def _known(cls, policy: str) -> str:
        from shards.plugins.gpu_placement.gpu_placement import POLICIES  # they import us

        if policy not in POLICIES:
            raise ValueError(f"must be one of {', '.join(sorted(POLICIES))}")
        return policy
