from shards.plugins.gpu_topology.gpu_topology import GPUTopology

__all__ = ["GPUTopology"]
