from shards.plugins.node_volume_limits.node_volume_limits import NodeVolumeLimits

__all__ = ["NodeVolumeLimits"]
