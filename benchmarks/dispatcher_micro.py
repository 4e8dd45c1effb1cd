"""Micro-benchmark of the dispatcher alone: its units per second, with no shard, binder or I/O.

    .venv/bin/python -m benchmarks.dispatcher_micro [--pods 100000] [--batch 256] [--profile]

Pods of one template go through the dispatcher as the loop drives it: added,
batched for a shard, answered as placed, reported bound. Each stage is timed
apart; memory per queued pod is the driver's resident growth while they wait.
`--profile` prints where the time goes (cProfile).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import time

import psutil

from benchmarks import template
from cluster.messages import Decision, PodPlacement, ShardResult, UnitOutcome
from cluster.simulator import SimulatedCluster, load_template
from dispatcher.dispatcher import Dispatcher


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    cluster = SimulatedCluster()
    cluster.create_pods(load_template(template("pod-default.yaml")), args.pods)
    pods, _ = cluster.take_new_pods()
    process = psutil.Process()
    gc.collect()
    before = process.memory_info().rss
    profiler = cProfile.Profile()
    if args.profile:
        profiler.enable()
    spent = {"add": 0.0, "next_batch": 0.0, "on_result": 0.0, "on_outcomes": 0.0}
    dispatcher = Dispatcher()
    started = time.perf_counter()
    for pod in pods:
        dispatcher.add(pod)
    spent["add"] = time.perf_counter() - started
    gc.collect()
    queued = process.memory_info().rss - before
    while True:
        t = time.perf_counter()
        batch = dispatcher.next_batch(0, args.batch)
        spent["next_batch"] += time.perf_counter() - t
        if batch is None:
            break
        decisions = [
            Decision(u.key, [PodPlacement(key, cls, ["node-0"], [1]) for key, cls in u.pods])
            for u in batch.units
        ]
        t = time.perf_counter()
        _, placed = dispatcher.on_result(ShardResult(0, batch.batch_id, 1, decisions))
        spent["on_result"] += time.perf_counter() - t
        if not placed:  # a batch that only told the shard what is settled
            continue
        outcomes = [UnitOutcome(d.unit, "bound", nodes=["node-0"]) for d in placed]
        t = time.perf_counter()
        dispatcher.on_outcomes(batch.batch_id, outcomes)
        spent["on_outcomes"] += time.perf_counter() - t
    profiler.disable()
    total = sum(spent.values())
    print(
        f"dispatcher: {args.pods:,} pods, batches of {args.batch}: "
        f"{args.pods / total:,.0f} pods/s ({total / args.pods * 1e6:.1f} us/pod); "
        f"{queued / args.pods:,.0f} bytes per queued pod; {dispatcher.stats.bound_pods:,} bound"
    )
    for stage, seconds in spent.items():
        print(f"  {stage}: {seconds / args.pods * 1e6:.1f} us/pod")
    if args.profile:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(20)


if __name__ == "__main__":
    main()
