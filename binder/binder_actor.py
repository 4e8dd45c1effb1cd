"""A binder actor: commits the batches routed to it, in its own process.

Each actor owns the batches the driver routes to it (a slice of units), so
the work around the Lua call (encoding, the round trip, decoding) runs beside
the driver's. The store serialises the commits themselves, each batch atomic.
The cluster calls stay with the driver's binder, which holds the adapter;
fences.py says what keeps commits from several binders consistent.
"""

from __future__ import annotations

import os

import ray

from cluster.messages import CommitReply, CommitRequest
from cluster.redis_server import connect
from cluster.store import Fences, Keys, NodeStore


@ray.remote(num_cpus=0, max_restarts=-1)
class BinderActor:
    def __init__(self, redis_url: str, key_prefix: str, conflict_mode: str) -> None:
        self.store = NodeStore(connect(redis_url), Keys(key_prefix))
        self.conflict_mode = conflict_mode

    def info(self) -> dict[str, object]:
        """Where this binder runs (and that it runs)."""
        return {"pid": os.getpid(), "ray_node_id": ray.get_runtime_context().get_node_id()}

    def commit(self, request: bytes) -> bytes:
        req = CommitRequest.decode(request)
        fences = Fences(keep_away_seen=req.keep_away_seen, count_namespaces=True)
        committed = self.store.commit(
            req.classes, req.decisions, self.conflict_mode, fences, req.epoch
        )
        return CommitReply(committed.outcomes, committed.keep_away).encode()
