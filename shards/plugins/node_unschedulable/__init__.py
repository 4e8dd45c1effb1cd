from shards.plugins.node_unschedulable.node_unschedulable import NodeUnschedulable

__all__ = ["NodeUnschedulable"]
