from shards.plugins.volume_zone.volume_zone import VolumeZone

__all__ = ["VolumeZone"]
