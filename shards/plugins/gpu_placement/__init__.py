from shards.plugins.gpu_placement.gpu_placement import (
    DEFAULT_POLICY,
    POLICIES,
    TIE_BREAKS,
    GPUPlacement,
)
from shards.plugins.gpu_placement.workload import DEFAULT_WINDOW

__all__ = ["DEFAULT_POLICY", "DEFAULT_WINDOW", "POLICIES", "TIE_BREAKS", "GPUPlacement"]
