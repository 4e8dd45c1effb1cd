"""Per-pod cost of each GPU policy inside one shard, on a GPU trace, with no I/O counted.

    .venv/bin/python -m benchmarks.gpu_policy_cost --nodes NODES.csv --pods PODS.csv \\
        [--policy fgd best-fit ...] [--seed 42 43 ...] [--batch 256] [--limit N] \\
        [--resample share=60,spec=30 [--resample-seed 0]]

The shard (`ShardCore`, no Ray) places the trace's tasks in the replay's
order, batch by batch, with a profile of GPUPlacement alone scoring every
node (as `replay-gpu-trace` runs it). The figures are per pod: the shard's
decision time (`ShardResult.decide_s`: filters, scores, choices, not the
store sync) over the whole run and in the median batch, and the parts of it
that are the policy's own: the Score extension point (the shard's stopwatch)
and the choice of GPUs inside the chosen node. Beside them, the unallocated GPU
share at 100% arrived that the run leaves, as `replay-gpu-trace` reads it: the
same placements as the platform's for one shard, in a tenth of the time, for
trying a policy on many seeds before running it through the platform.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from cluster.manifests import node_from_manifest, pod_from_manifest
from cluster.messages import ShardBatch, UnitRequest
from cluster.objects import SchedulingSpec
from cluster.profile_config import ProfileConfig
from cluster.redis_server import EmbeddedRedis, connect
from cluster.store import Keys, NodeStore
from optimist.gpu_mix import gpu_models, parse_mix, resample
from optimist.gpu_trace import arrivals, tasks_at_100, trace_profile
from optimist.gpu_trace_files import read_nodes, read_tasks
from shards.framework import PodClass, Profile
from shards.node_table import NodeTable
from shards.plugins import build_profile
from shards.plugins.gpu_placement import POLICIES
from shards.scheduler import ShardCore
from shards.stopwatch import SCORE


def measure(
    nodes_path: Path,
    pods_path: Path,
    policy: str,
    seed: int,
    batch: int,
    limit: int | None,
    mix: dict[str, float] | None = None,
    mix_seed: int = 0,
) -> dict[str, float]:
    nodes, tasks = read_nodes(nodes_path), read_tasks(pods_path)
    if mix:  # as replay-gpu-trace --resample does
        tasks = resample(tasks, mix, mix_seed, gpu_models(nodes))
    gpu_total = sum(n.gpus for n in nodes) * 1000
    order = arrivals(tasks, gpu_total, seed)[:limit]
    hundred, allocated = tasks_at_100(order, gpu_total), 0  # GPU milli placed by then
    config: ProfileConfig = trace_profile(policy, seed)
    with EmbeddedRedis() as redis:
        store = NodeStore(connect(redis.url), Keys("gpu-policy-cost:"))
        store.put_nodes([node_from_manifest(n.manifest()) for n in nodes])
        profile = build_profile(config)
        choosing = _timed_choice(profile)
        core = ShardCore(0, store, [profile], seed=seed)
        per_batch, placed = [], 0
        for start in range(0, len(order), batch):
            specs: dict[SchedulingSpec, int] = {}
            units = []
            for i, task in enumerate(order[start : start + batch], start):
                spec = pod_from_manifest(task.manifest(f"task-{i}")).spec
                cls = specs.setdefault(spec, len(specs))
                units.append(UnitRequest(f"u{i}", [(f"trace/task-{i}", cls)]))
            result = core.handle(ShardBatch(start, list(specs), units))
            per_batch.append(result.decide_s / len(units))
            for d in result.decisions:
                if d.placed:
                    placed += 1
                    i = int(d.unit[1:])
                    allocated += order[i].gpu_request if i < hundred else 0
    total = sum(p * min(batch, len(order) - i * batch) for i, p in enumerate(per_batch))
    return {
        "pods": len(order),
        "placed": placed,
        "us_per_pod": 1e6 * total / len(order),
        "us_per_pod_median_batch": 1e6 * statistics.median(per_batch),
        "score_us_per_pod": 1e6 * core.stopwatch.seconds[SCORE] / len(order),
        "choose_us_per_pod": 1e6 * choosing[0] / len(order),
        "unallocated_pct_at_100": 100.0 * (1 - allocated / gpu_total),
    }


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=Path, required=True)
    parser.add_argument("--pods", type=Path, required=True)
    parser.add_argument("--policy", nargs="+", default=list(POLICIES), choices=list(POLICIES))
    parser.add_argument("--seed", type=int, nargs="+", default=[42])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--limit", type=int, default=None, help="only the first N tasks")
    parser.add_argument("--resample", default=None, help="a mix of the trace (optimist/gpu_mix.py)")
    parser.add_argument("--resample-seed", type=int, default=0)
    args = parser.parse_args()
    mix = parse_mix(args.resample) if args.resample else None
    print(
        f"{'policy':16} {'seed':>5} {'pods':>7} {'placed':>7} {'us/pod':>8} {'median batch':>13}"
        f" {'of it Score':>12} {'GPU choice':>11} {'unallocated at 100%':>20}"
    )
    for policy in args.policy:
        left = []
        for seed in args.seed:
            r = measure(
                args.nodes, args.pods, policy, seed, args.batch, args.limit, mix, args.resample_seed
            )
            left.append(r["unallocated_pct_at_100"])
            print(
                f"{policy:16} {seed:>5} {r['pods']:>7} {r['placed']:>7} {r['us_per_pod']:>8.0f}"
                f" {r['us_per_pod_median_batch']:>13.0f} {r['score_us_per_pod']:>12.0f}"
                f" {r['choose_us_per_pod']:>11.0f} {r['unallocated_pct_at_100']:>19.2f}%"
            )
        if len(left) > 1:
            spread = f"{statistics.mean(left):.2f}% ± {statistics.pstdev(left):.2f}"
            print(f"{policy:16} {'mean':>5}{'':64} {spread:>20}")


if __name__ == "__main__":
    main()
