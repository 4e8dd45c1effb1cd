from shards.plugins.gpu_placement.gpu_placement import POLICIES, GPUPlacement
from shards.plugins.gpu_placement.gpu_placement_args import DEFAULT_POLICY, GPUPlacementArgs

__all__ = ["DEFAULT_POLICY", "POLICIES", "GPUPlacement", "GPUPlacementArgs"]
