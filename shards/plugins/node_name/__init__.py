from shards.plugins.node_name.node_name import NodeName

__all__ = ["NodeName"]
