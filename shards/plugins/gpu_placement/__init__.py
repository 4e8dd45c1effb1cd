from shards.plugins.gpu_placement.args import DEFAULT_POLICY, GPUPlacementArgs
from shards.plugins.gpu_placement.gpu_placement import POLICIES, GPUPlacement

__all__ = ["DEFAULT_POLICY", "POLICIES", "GPUPlacement", "GPUPlacementArgs"]
