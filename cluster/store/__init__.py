"""The versioned node store in Redis: the committed truth every shard syncs from."""

from cluster.store.keys import Keys
from cluster.store.node_store import (
    Committed,
    Delta,
    Fences,
    Hold,
    NodeStore,
    Preempted,
    pinned,
)

__all__ = [
    "Committed",
    "Delta",
    "Fences",
    "Hold",
    "Keys",
    "NodeStore",
    "Preempted",
    "pinned",
]
