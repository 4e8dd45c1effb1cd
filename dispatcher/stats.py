"""What the dispatcher counts as units go through it: the report's and the metrics' source."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field


@dataclass(slots=True)
class DispatchStats:
    attempts: int = 0  # unit attempts sent to shards
    pod_attempts: int = 0
    conflicts: int = 0
    conflict_backoffs: int = 0  # units sent to backoff after max_conflicts conflicts in a row
    bind_failures: int = 0
    bound_pods: int = 0
    extender_errors: int = 0  # ignorable extenders' failed calls, skipped by the shards
    units_by_shard: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    pods_by_shard: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    # seconds each shard spent syncing and deciding, as its results say
    busy_s_by_shard: dict[int, float] = field(default_factory=lambda: defaultdict(float))
    # pods each shard decided on (placed, or found no node for), as its results say
    decided_by_shard: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    # units placed in part, then undone: by a shard in its own table (fewer than
    # minMember fit), or by the store, which refused a multi-pod unit as a conflict
    shard_rollbacks: int = 0
    commit_rollbacks: int = 0
    shard_round_trips: int = 0  # the shards' calls to Redis, as their results say
    events: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # seen, by kind
    moved_by_events: int = 0  # unschedulable units an event sent back to be tried again
    moved_by_timeout: int = 0  # unschedulable units tried again after waiting too long
    quota_waits: int = 0  # times a unit was held back, unattempted, by its quota
    preemption_attempts: int = 0  # units that fit nowhere and looked for victims
    preemptions: int = 0  # units that found victims and had room reserved
    victims: int = 0  # pods evicted for them
    # pods put in a queue, by (queue, event): kube-scheduler's queue_incoming_pods_total
    incoming: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
