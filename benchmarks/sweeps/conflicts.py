"""How often parallel shards collide, and what each lever buys: the conflict sweep.

    .venv/bin/python -m benchmarks.sweeps.conflicts [--nodes 200] [--shards 1,2,4,8]
        [--report OUT.json]

Every run schedules the same cluster and the same pods in the same order
(single pods and gangs of 2 to 16, all 500m CPU, to the fill asked for), and
varies one setting of the matrix: shards, fill, node partitions, conflict
detection (fine or coarse) and K, the candidates offered per pod. It reports
conflicts per committed unit and attempts per pod (pods sent to shards per
pod created), and checks the invariants after every run.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from cluster.objects import POD_GROUP_LABEL
from optimist.loop import SchedulingLoop
from optimist.offline.invariants import check_invariants
from optimist.offline.simulator import SimulatedCluster
from optimist.runtime import Platform, init_ray
from optimist.settings import Settings

NODE_CPU = 4
POD_CPU_MILLI = 500


@dataclass(frozen=True, slots=True)
class Variant:
    shards: int
    fill: float
    partitions: bool
    mode: str
    candidates: int


@dataclass(frozen=True, slots=True)
class Figures:
    pods: int
    bound: int
    committed_units: int
    conflicts: int
    conflicts_per_unit: float
    attempts_per_pod: float
    pods_per_s: float


def workload(nodes: int, fill: float, seed: int) -> list[tuple[str, int, int]]:
    """(group or "", minMember, pods) per unit, filling `fill` of the cluster's CPU."""
    rng = random.Random(seed)
    slots = int(nodes * NODE_CPU * 1000 * fill) // POD_CPU_MILLI
    units: list[tuple[str, int, int]] = []
    total = 0
    while total < slots:
        size = rng.choice([1, 1, 1, 2, 4, 8, 16])
        size = min(size, slots - total)
        group = f"gang{len(units)}" if size > 1 else ""
        units.append((group, rng.randint(max(size // 2, 1), size) if group else 1, size))
        total += size
    return units


def run(base: Settings, variant: Variant, nodes: int, seed: int) -> Figures:
    settings = replace(
        base,
        shards=variant.shards,
        node_partitions=variant.partitions,
        conflict_mode=variant.mode,
        candidates=variant.candidates,
        seed=seed,
    )
    cluster = SimulatedCluster(settings.scheduler_names, seed=seed)
    cluster.create_nodes(
        {
            "kind": "Node",
            "metadata": {"generateName": "node-"},
            "status": {"capacity": {"cpu": str(NODE_CPU), "memory": "32Gi", "pods": "110"}},
        },
        nodes,
    )
    units = workload(nodes, variant.fill, seed)
    with Platform(settings) as platform:
        platform.store.clear()
        loop = SchedulingLoop(platform, cluster)
        started = time.perf_counter()
        for group, min_member, size in units:
            labels = {POD_GROUP_LABEL: group} if group else {}
            if group:
                cluster.create_pod_group(
                    {"metadata": {"name": group}, "spec": {"minMember": min_member}}
                )
            cluster.create_pods(_pod(group or "pod", labels), size)
        loop.run_until_settled()
        elapsed = time.perf_counter() - started
        unschedulable = loop.dispatcher.unschedulable()
        violations = check_invariants(cluster, unschedulable, platform.store)
        if violations:
            raise SystemExit(f"{variant}: invariants violated: {violations[:5]}")
        stats = loop.dispatcher.stats
    pods = len(cluster.pod_manifests)
    committed = sum(stats.units_by_shard.values())
    return Figures(
        pods=pods,
        bound=len(cluster.bindings),
        committed_units=committed,
        conflicts=stats.conflicts,
        conflicts_per_unit=stats.conflicts / committed if committed else 0.0,
        attempts_per_pod=stats.pod_attempts / pods if pods else 0.0,
        pods_per_s=len(cluster.bindings) / elapsed,
    )


def _pod(prefix: str, labels: dict[str, str]) -> dict[str, Any]:
    amount = f"{POD_CPU_MILLI}m"
    return {
        "kind": "Pod",
        "metadata": {"generateName": f"{prefix}-", "labels": labels},
        "spec": {
            "containers": [
                {"name": "c", "resources": {"requests": {"cpu": amount, "memory": "256Mi"}}}
            ]
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--shards", default="1,2,4,8")
    parser.add_argument("--fills", default="0.5,0.95")
    parser.add_argument("--repeats", type=int, default=1, help="runs per variant (medians)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--report", type=Path)
    args = parser.parse_args()
    base = Settings(batch_pods=64)
    init_ray(None)  # once for the whole sweep: every run's shards are fresh actors
    matrix = itertools.product(
        [int(s) for s in args.shards.split(",")],
        [float(f) for f in args.fills.split(",")],
        (False, True),
        ("fine", "coarse"),
        (1, 3),
    )
    rows = []
    print("shards fill  partitions mode   K  conflicts/unit attempts/pod pods/s")
    for shards, fill, partitions, mode, k in matrix:
        variant = Variant(shards, fill, partitions, mode, k)
        runs = [run(base, variant, args.nodes, args.seed) for _ in range(args.repeats)]
        figures = replace(
            runs[0],
            conflicts_per_unit=statistics.median(r.conflicts_per_unit for r in runs),
            attempts_per_pod=statistics.median(r.attempts_per_pod for r in runs),
            pods_per_s=statistics.median(r.pods_per_s for r in runs),
        )
        rows.append({"variant": asdict(variant), "figures": asdict(figures)})
        print(
            f"{shards:>6} {fill:<5} {'yes' if partitions else 'no':<10} {mode:<6} {k:<2}"
            f" {figures.conflicts_per_unit:>14.3f} {figures.attempts_per_pod:>12.3f}"
            f" {figures.pods_per_s:>6.0f}",
            flush=True,
        )
    if args.report:
        args.report.write_text(json.dumps({"nodes": args.nodes, "runs": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
