from shards.plugins.pod_topology_spread.pod_topology_spread import PodTopologySpread

__all__ = ["PodTopologySpread"]
