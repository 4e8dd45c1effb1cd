"""What the loop survived so far: each count is a fault it went on after, for reports."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Faults:
    shard_failures: int = 0  # batches a shard failed on (its units went back to the queue)
    shard_restarts: int = 0  # shards killed for answering too late, for Ray to restart
    store_outages: int = 0  # times Redis was away or had lost the store
    store_rebuilds: list[float] = field(default_factory=list)  # seconds each rebuild took
    binder_failures: int = 0  # batches a binder actor failed on
    # pods tried again because a fault voided their attempt (a shard's or a binder's
    # batch lost, a commit in a store lost since) or a store built again woke them
    fault_retries: int = 0
