"""In-tree plugins, one folder each, with their tests beside them."""

from shards.plugins.registry import REGISTRY, build_profile

__all__ = ["REGISTRY", "build_profile"]
