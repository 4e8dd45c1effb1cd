"""Per-pod cost of each GPU policy inside one shard, on a GPU trace, with no I/O counted.

    .venv/bin/python -m benchmarks.micro.gpu_policy_cost --nodes NODES.csv --pods PODS.csv \\
        [--policy fgd best-fit ...] [--seed 42 43 ...] [--batch 256] [--limit N] \\
        [--resample share=60,spec=30 [--resample-seed 0]]

The shard places the trace's tasks in the replay's order, batch by batch
(`benchmarks.gpu.shard_replay`: no Ray, the profile `replay-gpu-trace`
runs). The figures are per pod: the shard's decision time
(`ShardResult.decide_s`: filters, scores, choices, not the store sync) over
the whole run and in the median batch, and the parts of it
that are the policy's own: the Score extension point (the shard's stopwatch)
and the choice of GPUs inside the chosen node. Beside them, the unallocated GPU
share at 100% arrived that the run leaves, as `replay-gpu-trace` reads it: the
same placements as the platform's for one shard, in a tenth of the time, for
trying a policy on many seeds before running it through the platform.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from benchmarks.gpu.mix import gpu_models, parse_mix, resample
from benchmarks.gpu.shard_replay import replay_in_shard
from benchmarks.gpu.trace_files import read_nodes, read_tasks
from benchmarks.gpu.trace_replay import arrivals
from shards.plugins.gpu_placement import POLICIES


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
    run = replay_in_shard(nodes, order, policy, seed, batch)
    total = sum(p * min(batch, len(order) - i * batch) for i, p in enumerate(run.batch_s))
    return {
        "pods": len(order),
        "placed": sum(p is not None for p in run.placements),
        "us_per_pod": 1e6 * total / len(order),
        "us_per_pod_median_batch": 1e6 * statistics.median(run.batch_s),
        "score_us_per_pod": 1e6 * run.score_s / len(order),
        "choose_us_per_pod": 1e6 * run.choose_s / len(order),
        "unallocated_pct_at_100": run.unallocated_pct_at_100,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=Path, required=True)
    parser.add_argument("--pods", type=Path, required=True)
    parser.add_argument("--policy", nargs="+", default=list(POLICIES), choices=list(POLICIES))
    parser.add_argument("--seed", type=int, nargs="+", default=[42])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--limit", type=int, default=None, help="only the first N tasks")
    parser.add_argument(
        "--resample", default=None, help="a mix of the trace (benchmarks/gpu/mix.py)"
    )
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
