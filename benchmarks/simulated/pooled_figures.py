"""A run's figures pooled over its workloads, and the shard figures they are made of.

Apart from `sim_bench`, which measures each workload: these only combine figures
already taken.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from benchmarks.report import instruments
from benchmarks.report.bench_report import CaseReport, PooledFigures, ShardFigures


def decision_rate(decided: float, busy_s: float) -> float | None:
    """Pods a shard decided on per second of its busy time over the phase: its own
    rate, whatever else shared its core."""
    return decided / busy_s if busy_s else None


def idle_fraction(busy_s: float, duration_s: float) -> float | None:
    """The fraction of the measured phase a shard spent other than busy: waiting for a
    batch, or for Ray to carry one (None without a measured phase).

    A result that arrives early in a window may count work done before it
    opened, so the fraction is clamped at 0.
    """
    return min(max(1.0 - busy_s / duration_s, 0.0), 1.0) if duration_s > 0 else None


# The counts pooled over several workloads by summing them.
SUMMED = (
    "pods_created",
    "pods_scheduled",
    "pods_unschedulable",
    "pods_pending",
    "conflicts",
    "attempts",
    "committed_units",
    "committed_pods",
    "store_commits",
    "redis_commands",
    "redis_round_trips",
    "conflict_backoffs",
    "bind_failures",
    "shard_failures",
    "shard_restarts",
    "binder_failures",
    "extender_errors",
    "cross_pod_refusals",
    "duration_s",
)


def pooled(cases: list[CaseReport]) -> PooledFigures:
    """The run's figures over several workloads (one's own are the run's:
    `BenchReport.figures`)."""
    top: dict[str, Any] = {k: sum(getattr(c, k) for c in cases) for k in SUMMED}
    reasons: Counter[str] = Counter()
    rollbacks: Counter[str] = Counter()
    cpu: Counter[str] = Counter()
    shards: dict[int, ShardFigures] = {}
    for c in cases:
        reasons.update(c.unschedulable_reasons)
        rollbacks.update(c.rollbacks.model_dump())
        cpu.update(c.cpu_s)
        for s in c.shards:
            zero = {"units": 0, "pods": 0, "busy_s": 0.0, "decided_pods": 0}
            into = shards.setdefault(s.id, s.model_copy(update=zero))
            into.units += s.units
            into.pods += s.pods
            into.busy_s += s.busy_s
            into.decided_pods += s.decided_pods
    for s in shards.values():
        s.idle_fraction = idle_fraction(s.busy_s, top["duration_s"])
        s.decisions_per_busy_s = decision_rate(s.decided_pods, s.busy_s)
    rates = [float(n) for c in cases for n in c.throughput_samples]
    created = top["pods_created"]
    top.update(
        unschedulable_reasons=dict(reasons.most_common()),
        attempts_per_pod=top["attempts"] / created if created else 0.0,
        redis_commands_per_pod=top["redis_commands"] / created if created else 0.0,
        redis_round_trips_per_pod=top["redis_round_trips"] / created if created else 0.0,
        rollbacks={"total": 0, "shard": 0, "commit": 0, **rollbacks},
        binder_batches=[sum(n) for n in zip(*(c.binder_batches for c in cases), strict=True)],
        first_decision_s=cases[0].first_decision_s,
        cpu_s=cpu,
        cpu_us_per_pod={r: s * 1e6 / created for r, s in cpu.items()} if created else {},
        throughput_pods_per_s=instruments.throughput(
            top["pods_scheduled"], top["duration_s"], rates
        ),
        nodes=max((c.nodes for c in cases), default=0),
        shards=list(shards.values()),
        memory_peak_bytes={
            role: max(c.memory_peak_bytes[role] for c in cases)
            for role in cases[0].memory_peak_bytes
        }
        if cases
        else {},
        invariant_violations=[f"{c.name}: {v}" for c in cases for v in c.invariant_violations],
        warnings=[f"{c.name}: {w}" for c in cases for w in c.warnings],
    )
    return PooledFigures.model_validate(top)
