from shards.plugins.noderesources.balanced_allocation import NodeResourcesBalancedAllocation
from shards.plugins.noderesources.fit import NodeResourcesFit
from shards.plugins.noderesources.least_allocated import LeastAllocated
from shards.plugins.noderesources.most_allocated import MostAllocated
from shards.plugins.noderesources.noderesources_args import (
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
)
from shards.plugins.noderesources.requested_to_capacity_ratio import RequestedToCapacityRatio

__all__ = [
    "LeastAllocated",
    "MostAllocated",
    "NodeResourcesBalancedAllocation",
    "NodeResourcesBalancedAllocationArgs",
    "NodeResourcesFit",
    "NodeResourcesFitArgs",
    "RequestedToCapacityRatio",
]
