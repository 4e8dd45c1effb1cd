from shards.plugins.noderesources.fit import NodeResourcesFit
from shards.plugins.noderesources.least_allocated import LeastAllocated

__all__ = ["LeastAllocated", "NodeResourcesFit"]
