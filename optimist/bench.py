"""`optimist bench`: schedule a simulated cluster through the real platform and measure it.

Nodes are created and stored first; the measured phase starts when the
pods are created and ends when every pod is bound or waits on a verdict that
still holds. The invariant checker runs on the result before it is reported.
"""

from __future__ import annotations

import csv
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from cluster.invariants import check_invariants
from cluster.simulator import SimulatedCluster, load_template
from optimist import report
from optimist.config import Settings
from optimist.runtime import Platform, SchedulingLoop


@dataclass(frozen=True, slots=True)
class Workload:
    nodes: int
    pods: int
    node_template: Path
    pod_template: Path


@dataclass(slots=True)
class BenchRun:
    report: dict[str, Any]
    cluster: SimulatedCluster

    @property
    def ok(self) -> bool:
        return not self.report["invariant_violations"]


def run_bench(settings: Settings, workload: Workload, *, show_progress: bool = False) -> BenchRun:
    cluster = SimulatedCluster(settings.scheduler_names, seed=settings.seed)
    cluster.create_nodes(load_template(workload.node_template), workload.nodes)
    pod_template = load_template(workload.pod_template)
    bound_at: list[float] = []
    with Platform(settings) as platform:
        store = platform.store
        store.clear()
        store.put_nodes(cluster.nodes.values())
        loop = SchedulingLoop(
            platform,
            cluster,
            on_bound=lambda pods: bound_at.extend([time.perf_counter()] * len(pods)),
        )
        bar = _progress() if show_progress else None
        with bar or nullcontext():
            task = bar.add_task("scheduling", total=workload.pods) if bar else None

            def tick() -> None:
                if bar is not None:
                    done = len(bound_at) + len(loop.dispatcher.unschedulable())
                    bar.update(task, completed=done)  # type: ignore[arg-type]

            start = time.perf_counter()
            cluster.create_pods(pod_template, workload.pods)
            loop.run_until_settled(tick)
            end = time.perf_counter()
            tick()
        unschedulable = loop.dispatcher.unschedulable()
        violations = check_invariants(cluster, unschedulable, store)
        stats = loop.dispatcher.stats
        redis_info = store.client.info("server")
        shards = [
            {
                "id": info["id"],
                "ray_node_id": info["ray_node_id"],
                "units": stats.units_by_shard.get(int(info["id"]), 0),  # type: ignore[call-overload]
                "pods": stats.pods_by_shard.get(int(info["id"]), 0),  # type: ignore[call-overload]
            }
            for info in platform.shard_info
        ]
    return BenchRun(
        report={
            "pods_created": workload.pods,
            "pods_scheduled": len(cluster.bindings),
            "pods_unschedulable": len(unschedulable),
            "unschedulable_reasons": report.reason_counts(unschedulable),
            "conflicts": stats.conflicts,
            "conflict_backoffs": stats.conflict_backoffs,
            "attempts": stats.pod_attempts,
            "attempts_per_pod": stats.pod_attempts / workload.pods if workload.pods else 0.0,
            "bind_failures": stats.bind_failures,
            "shard_failures": loop.shard_failures,
            "extender_errors": stats.extender_errors,
            "cross_pod_refusals": loop.binder.guard.refused,
            "store_commits": loop.binder.commits,
            "duration_s": end - start,
            "throughput_pods_per_s": report.throughput(bound_at, start, end),
            "shards": shards,
            "nodes": workload.nodes,
            "invariant_violations": violations[:100],
            "config": settings.public(),
            "machine": report.machine(),
            "versions": report.versions(redis_info),
        },
        cluster=cluster,
    )


def write_placements(cluster: SimulatedCluster, path: Path) -> None:
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["namespace", "pod", "node"])
        for key, node in sorted(cluster.bindings.items()):
            namespace, name = key.split("/", 1)
            out.writerow([namespace, name, node])


def _progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=False,
    )
