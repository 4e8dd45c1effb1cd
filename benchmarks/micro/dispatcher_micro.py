"""Micro-benchmark of the dispatcher alone: its units per second, with no shard, binder or I/O.

    .venv/bin/python -m benchmarks.micro.dispatcher_micro [--pods 100000] [--batch 256] [--profile]

Pods of one template go through the dispatcher as the loop drives it: added,
batched for a shard, answered as placed, reported bound. Each stage is timed
apart; memory per queued pod is the driver's resident growth while they wait.
Then the unschedulable queue: as many pods answered "no node fits" (by
NodeResourcesFit), the cost of an event none of them waits for, and of one
that sends them all back. `--profile` prints where the time goes (cProfile).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import time

import psutil

from benchmarks.cases import template
from cluster.events import ASSIGNED_POD_ADD, ASSIGNED_POD_DELETE, NODE_ADD, NODE_UPDATE
from cluster.messages import Decision, PodPlacement, ShardResult, Status, UnitOutcome
from cluster.objects import Pod
from dispatcher.dispatcher import Dispatcher
from optimist.offline.simulator import SimulatedCluster, load_template


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
        placed = dispatcher.on_result(ShardResult(0, batch.batch_id, 1, decisions)).placed
        spent["on_result"] += time.perf_counter() - t
        if not placed:  # a batch that only told the shard what is settled
            continue
        outcomes = [UnitOutcome(d.unit, Status.BOUND, nodes=["node-0"]) for d in placed]
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
    unschedulable_queue(pods, args.batch)
    if args.profile:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(20)


def unschedulable_queue(pods: list[Pod], batch_pods: int) -> None:
    """Every pod found unschedulable, then two events: one that helps none, one that helps all."""
    dispatcher = Dispatcher()
    for pod in pods:
        dispatcher.add(pod)
    fit_events = sorted([ASSIGNED_POD_DELETE, NODE_ADD, NODE_UPDATE])
    started = time.perf_counter()
    while (batch := dispatcher.next_batch(0, batch_pods)) is not None:
        refused = [
            Decision(u.key, [], {"Insufficient cpu": 1}, 1, ["NodeResourcesFit"], fit_events)
            for u in batch.units
        ]
        dispatcher.on_result(ShardResult(0, batch.batch_id, 1, refused))
    answered = time.perf_counter() - started
    waiting = len(dispatcher.queue.unschedulable_units)
    t = time.perf_counter()
    dispatcher.on_event(ASSIGNED_POD_ADD)
    none = time.perf_counter() - t
    t = time.perf_counter()
    moved = dispatcher.on_event(NODE_ADD)
    every = time.perf_counter() - t
    print(
        f"unschedulable queue: {waiting:,} units waiting ({answered / len(pods) * 1e6:.1f} us "
        f"per pod to send and answer); an event none waits for: {none * 1e6:.0f} us; "
        f"one that sends all {moved:,} back: {every / max(moved, 1) * 1e6:.2f} us per unit"
    )


if __name__ == "__main__":
    main()
