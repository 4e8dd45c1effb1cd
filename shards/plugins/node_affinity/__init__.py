from shards.plugins.node_affinity.node_affinity import NodeAffinity

__all__ = ["NodeAffinity"]
