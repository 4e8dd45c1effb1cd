"""The versioned node store in Redis: the committed truth every shard syncs from."""

from cluster.store.keys import Keys
from cluster.store.node_store import Delta, NodeStore

__all__ = ["Delta", "Keys", "NodeStore"]
