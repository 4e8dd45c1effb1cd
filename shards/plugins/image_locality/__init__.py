from shards.plugins.image_locality.image_locality import ImageLocality

__all__ = ["ImageLocality"]
