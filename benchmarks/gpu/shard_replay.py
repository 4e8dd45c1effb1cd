"""The GPU trace replayed inside one shard, no Ray, no binder: the platform's placements
for one shard (each task placed after those before it) in a tenth of its time.

The shard (`ShardCore`) places the tasks in the replay's order, batch by batch,
with the replay's profile (`trace_profile`: GPUPlacement alone scoring every
node). With one shard nothing else moves the store, so the shard's own table,
in which it assumes each placement, is the cluster. `gpu_policy_cost` times the
policies on it and `gpu_mix_sweep` compares them on many mixes and seeds.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.gpu.trace_files import TraceNode, TraceTask
from benchmarks.gpu.trace_replay import tasks_at_100, trace_profile
from cluster.manifests import node_from_manifest, pod_from_manifest
from cluster.messages import PodPlacement, ShardBatch, UnitRequest
from cluster.objects import SchedulingSpec
from cluster.redis_server import EmbeddedRedis, connect
from cluster.store import Keys, NodeStore
from shards.framework import PodClass, Profile
from shards.node_table import NodeTable
from shards.plugins import build_profile
from shards.scheduler import ShardCore
from shards.stopwatch import SCORE


@dataclass(frozen=True, slots=True)
class ShardReplay:
    """What one in-shard replay of an arrival order did."""

    order: Sequence[TraceTask]  # the tasks replayed, in order
    placements: list[PodPlacement | None]  # per task: where it went, None if it failed
    hundred: int  # how many tasks had arrived at 100% of GPU capacity
    gpu_total: int  # milli
    batch_s: list[float]  # per batch: the shard's decision time per pod
    score_s: float  # of it, the Score extension point's
    choose_s: float  # and the choice of GPUs inside the chosen node

    @property
    def arrived(self) -> list[tuple[TraceTask, PodPlacement | None]]:
        """The tasks that had arrived at 100% of capacity, each with where it went."""
        return list(zip(self.order[: self.hundred], self.placements, strict=False))

    @property
    def unallocated_pct_at_100(self) -> float:
        """As `replay-gpu-trace` reads it: 100% less the GPU milli placed of the tasks that
        had arrived at 100% of capacity."""
        placed = sum(task.gpu_request for task, where in self.arrived if where is not None)
        return 100.0 * (1 - placed / self.gpu_total)


def replay_in_shard(
    nodes: Sequence[TraceNode],
    order: Sequence[TraceTask],
    policy: str,
    seed: int,
    batch: int,
    *,
    through_100: bool = False,
) -> ShardReplay:
    """Place `order` in batches of `batch`; with `through_100`, only the batches that hold
    the tasks arrived at 100% (the rest changes nothing before it)."""
    gpu_total = sum(n.gpus for n in nodes) * 1000
    hundred = tasks_at_100(order, gpu_total)
    stop = min(len(order), -(-max(hundred, 1) // batch) * batch) if through_100 else len(order)
    placements: list[PodPlacement | None] = [None] * stop
    batch_s: list[float] = []
    with EmbeddedRedis() as redis:
        store = NodeStore(connect(redis.url), Keys("gpu-shard-replay:"))
        store.put_nodes([node_from_manifest(n.manifest()) for n in nodes])
        profile = build_profile(trace_profile(policy, seed))
        choosing = _timed_choice(profile)
        core = ShardCore(0, store, [profile], seed=seed)
        for start in range(0, stop, batch):
            specs: dict[SchedulingSpec, int] = {}
            units = []
            for i, task in enumerate(order[start : min(start + batch, stop)], start):
                spec = pod_from_manifest(task.manifest(f"task-{i}")).spec
                cls = specs.setdefault(spec, len(specs))
                units.append(UnitRequest(f"u{i}", [(f"trace/task-{i}", cls)]))
            result = core.handle(ShardBatch(start, list(specs), units))
            batch_s.append(result.decide_s / len(units))
            for d in result.decisions:
                if d.placed:
                    placements[int(d.unit[1:])] = d.placements[0]
    return ShardReplay(
        order[:stop],
        placements,
        hundred,
        gpu_total,
        batch_s,
        core.stopwatch.seconds[SCORE],
        choosing[0],
    )


def _timed_choice(profile: Profile) -> list[float]:
    """The profile's choice of GPUs, timed: the seconds it took so far, in a list."""
    spent, choose = [0.0], profile.choose_gpus

    def timed(table: NodeTable, row: int, pod: PodClass) -> tuple[int, ...]:
        started = time.perf_counter()
        try:
            return choose(table, row, pod)
        finally:
            spent[0] += time.perf_counter() - started

    profile.choose_gpus = timed
    return spent
