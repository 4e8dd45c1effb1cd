"""The versioned node store in Redis: the committed truth every shard syncs from."""

from cluster.store.keys import Keys
from cluster.store.node_store import (
    STORE_ERRORS,
    Committed,
    Delta,
    EpochChanged,
    Fences,
    Hold,
    NodeStore,
    Preempted,
    pinned,
)
from cluster.store.partitioned import PartitionedStore, Store, open_store

__all__ = [
    "STORE_ERRORS",
    "Committed",
    "Delta",
    "EpochChanged",
    "Fences",
    "Hold",
    "Keys",
    "NodeStore",
    "PartitionedStore",
    "Preempted",
    "Store",
    "open_store",
    "pinned",
]
