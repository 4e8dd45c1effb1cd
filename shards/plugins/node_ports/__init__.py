from shards.plugins.node_ports.node_ports import NodePorts

__all__ = ["NodePorts"]
