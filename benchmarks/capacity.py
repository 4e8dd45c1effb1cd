"""The capacity model of docs/capacity.md: how many shards, binders and Redis servers a
cluster size and a rate need, from the per-part costs measured on the 2-core machine;
and how much memory each part holds for a cluster's nodes and pods, fitted to what the
API bench measured.

    .venv/bin/python -m benchmarks.capacity                     # the plans, as a table
    .venv/bin/python -m benchmarks.capacity --simulate-cores 2  # check one by simulation
    .venv/bin/python -m benchmarks.capacity --memory RESULT.json...  # memory, fitted

`plan` is the arithmetic: each part sized to be at most 80% busy. `simulate`
checks it independently: pods flow through the driver, a shard, a binder and a
Redis partition as work on processes that share the machine's cores (processor
sharing), every committed pod adding sync work to every shard and read work to
its partition; the throughput it reaches is compared with the plan's. It models
CPU only: Ray's round trips, batching delays and the operating system are not in
it, which is why the measured 2-core figure sits below it (docs/capacity.md).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

BUSY = 0.8  # each part planned to be at most this busy


@dataclass(frozen=True, slots=True)
class Costs:
    """CPU µs per pod of each part, measured here (SchedulingBasic; docs/performance.md,
    "Where a pod's time goes", `benchmarks.micro.shard_micro`, `benchmarks.micro.store_micro`)."""

    # the driver without commits: dispatcher, watch, Ray, msgpack (33 in the bench with
    # its commits, of which the commits' share by cProfile is about a fifth)
    dispatch_us: float = 26.0
    watch_parse_us: float = 60.0  # a real API watch's parse (the simulated cluster skips it)
    commit_us: float = 7.0  # a binder's side of a commit: encode, decode, bind call
    # a shard's decision, its own sync included (shard_micro, 2026-12-02)
    decide_us: tuple[tuple[int, float], ...] = ((5_000, 39.0), (20_000, 45.0), (100_000, 136.0))
    sync_us: float = 2.0  # every shard, for every pod committed by any (from the commit log)
    redis_commit_us: float = 33.0  # Redis CPU per pod committed (the bench, one shard)
    redis_read_us: float = 0.1  # Redis CPU per pod, per shard reading the change (the log)
    api_writes_per_pod: float = 4.0  # binding, Scheduled event, the kubelet's two updates
    etcd_writes_per_s: float = 30_000.0  # a 3-member etcd under heavy load (etcd's docs)

    def decide(self, nodes: int) -> float:
        """Interpolated between the sizes measured, in µs per pod."""
        points = sorted(self.decide_us)
        if nodes <= points[0][0]:
            return points[0][1]
        for (n0, c0), (n1, c1) in itertools.pairwise(points):
            if nodes <= n1:
                return c0 + (c1 - c0) * (nodes - n0) / (n1 - n0)
        return points[-1][1]


@dataclass(frozen=True, slots=True)
class Plan:
    nodes: int
    rate: float  # pods/s asked for
    shards: int
    binder_actors: int  # beside the driver's own binder, which commits too when it can
    redis: int  # partitions of the node store
    dispatchers: int  # driver processes the dispatch needs; optimist has one today
    api_share: float  # of etcd's write rate, at this rate
    limit: str  # what gives way first if the rate grows
    ceiling: float  # the pods/s at which it does

    @property
    def cores(self) -> int:
        return self.dispatchers + self.shards + self.binder_actors + self.redis

    @property
    def feasible(self) -> bool:
        """What optimist can run today (one dispatcher) against one API server."""
        return self.dispatchers == 1 and self.api_share <= 1.0


def plan(nodes: int, rate: float, costs: Costs = Costs(), kube: bool = True) -> Plan:
    """The fewest of each part for `rate` pods/s at `nodes` nodes; `kube`: a real API
    server's watch and writes, else the simulated cluster."""
    budget = BUSY * 1e6  # µs of CPU a part may use each second
    per_shard = budget - rate * costs.sync_us  # what syncing every change leaves to decide
    shards = math.ceil(rate * costs.decide(nodes) / per_shard) if per_shard > 0 else 10**6
    redis = math.ceil(rate * (costs.redis_commit_us + shards * costs.redis_read_us) / budget)
    dispatch = costs.dispatch_us + (costs.watch_parse_us if kube else 0.0)
    if rate * (dispatch + costs.commit_us) <= budget:
        actors = 0  # the driver dispatches and commits
    else:
        actors = math.ceil(rate * costs.commit_us / budget)
    dispatchers = math.ceil(rate * dispatch / budget)
    writes = costs.etcd_writes_per_s / costs.api_writes_per_pod if kube else math.inf
    ceilings = {  # pods/s each part allows as planned
        "the driver's dispatch (one process)": budget / dispatch,
        "the Kubernetes API's writes (etcd)": writes,
        "every shard syncing every change": budget / costs.sync_us,
        f"the shards ({shards})": shards * budget / (costs.decide(nodes) + shards * costs.sync_us),
        f"Redis ({redis})": redis * budget / (costs.redis_commit_us + shards * costs.redis_read_us),
    }
    if actors:
        ceilings[f"the binder actors ({actors})"] = actors * budget / costs.commit_us
    else:
        ceilings["the driver's dispatch and commits (one process)"] = budget / (
            dispatch + costs.commit_us
        )
    limit = min(ceilings, key=ceilings.__getitem__)
    api_share = rate / writes
    return Plan(nodes, rate, shards, actors, redis, dispatchers, api_share, limit, ceilings[limit])


def simulate(
    shards: int,
    actors: int,
    redis: int,
    cores: float,
    nodes: int = 5_000,
    costs: Costs = Costs(),
    kube: bool = False,
    seconds: float = 2.0,
) -> float:
    """Pods/s through the pipeline with an endless backlog, its processes sharing `cores`.

    Each process works through its queue of jobs (µs of CPU each); every millisecond
    the busy ones share the cores, none more than one. A pod is dispatched by the
    driver, decided by a shard (round robin), committed by a binder (the driver's when
    there is no binder actor) and scripted by its Redis partition; once committed it
    gives every shard a sync job and its partition a read job for each shard. Pods
    committed in the second half of the time are counted."""
    step_us = 1000.0
    dispatch_us = costs.dispatch_us + (costs.watch_parse_us if kube else 0.0)
    decide_us = costs.decide(nodes)
    names = ["driver", *(f"shard{i}" for i in range(shards))]
    names += [f"binder{i}" for i in range(actors)] + [f"redis{i}" for i in range(redis)]
    # each job [pod, kind, µs of CPU left]: a list, as what is left is taken off in place
    queues: dict[str, deque[list[Any]]] = {name: deque() for name in names}
    inflight = 512 * (shards + 1)  # pods let into the pipeline at once, as the batches do
    sent = completed = counted = 0
    steps = int(seconds * 1e6 / step_us)

    def forward(pod: int, kind: str, counting: bool) -> None:
        nonlocal completed, counted
        if kind == "dispatch":
            queues[f"shard{pod % shards}"].append([pod, "decide", decide_us])
        elif kind == "decide":
            binder = f"binder{pod % actors}" if actors else "driver"
            queues[binder].append([pod, "commit", costs.commit_us])
        elif kind == "commit":
            queues[f"redis{pod % redis}"].append([pod, "script", costs.redis_commit_us])
        elif kind == "script":
            completed += 1
            counted += counting
            for i in range(shards):
                queues[f"shard{i}"].append([pod, "sync", costs.sync_us])
            queues[f"redis{pod % redis}"].append([pod, "read", shards * costs.redis_read_us])

    for step in range(steps):
        while sent - completed < inflight:
            queues["driver"].append([sent, "dispatch", dispatch_us])
            sent += 1
        busy = [q for q in queues.values() if q]
        share = min(1.0, cores / len(busy)) * step_us
        for queue in busy:
            left = share
            while queue and left > 0:
                job = queue[0]
                if job[2] > left:
                    job[2] -= left
                    break
                left -= job[2]
                queue.popleft()
                forward(job[0], job[1], step >= steps // 2)
    return counted / (seconds / 2)


@dataclass(frozen=True, slots=True)
class MemoryFit:
    """Resident bytes of one part of a scheduler (`instruments.part_of`; optimist's
    shards per shard): fixed, per node and per pod held, fitted by least squares to
    the steady RSS of API bench runs (each run's `scheduler_memory.end_bytes`, every
    pod settled), with the runs it was fitted to."""

    scheduler: str
    part: str
    fixed: float
    per_node: float
    per_pod: float
    runs: int

    def at(self, nodes: int, pods: int) -> float:
        return self.fixed + self.per_node * nodes + self.per_pod * pods


def fit_memory(reports: Iterable[Mapping[str, Any]]) -> list[MemoryFit]:
    """Each scheduler's parts, fitted over the runs of `reports` that kept their memory
    by part (three sizes at least, not all of one shape, for three unknowns), one
    replica each: a run that failed over ends with two, the standby and the one
    started in the killed leader's place."""
    samples: dict[tuple[str, str], list[tuple[int, int, float]]] = {}
    for report in reports:
        for run in report["runs"]:
            failed_over = any(r["failover"] for r in run.get("restarts") or [])
            if "scheduler_memory" not in run or failed_over:
                continue
            pods = run["all_pods"]["bound"] + (run["all_pods"].get("bound_at_creation") or 0)
            for part, rss in run["scheduler_memory"]["end_bytes"].items():
                each = rss / report["shards"] if part == "shards" else rss
                key = (run["scheduler"], part)
                samples.setdefault(key, []).append((run["nodes"], pods, each))
    fits = []
    for (scheduler, part), points in sorted(samples.items()):
        a = np.array([[1.0, n, p] for n, p, _ in points])
        if np.linalg.matrix_rank(a) < 3:
            raise ValueError(
                f"{scheduler} {part}: {len(points)} runs of too few shapes to fit "
                "fixed, per-node and per-pod bytes (three sizes, not all in proportion)"
            )
        (fixed, per_node, per_pod), *_ = np.linalg.lstsq(
            a, np.array([rss for *_, rss in points]), rcond=None
        )
        fits.append(MemoryFit(scheduler, part, fixed, per_node, per_pod, len(points)))
    return fits


MEMORY_SIZES = ((20_000, 200_000), (100_000, 1_000_000))  # what the plans are read at


def _print_memory(paths: list[str]) -> None:
    fits = fit_memory(json.loads(Path(p).read_text()) for p in paths)
    sizes = " | ".join(f"at {n:,} nodes, {p:,} pods" for n, p in MEMORY_SIZES)
    header = f"scheduler | part | fixed | per node | per pod | {sizes}"
    print(f"| {header} |")
    print("|---" * (header.count("|") + 1) + "|")
    for f in fits:
        at = " | ".join(f"{f.at(n, p) / 2**30:.2f} GiB" for n, p in MEMORY_SIZES)
        print(
            f"| {f.scheduler} | {f.part} | {f.fixed / 2**20:,.0f} MiB | {f.per_node:,.0f} B "
            f"| {f.per_pod:,.0f} B | {at} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--simulate-cores", type=float, help="check a plan by simulation")
    parser.add_argument("--shards", type=int, default=1)
    parser.add_argument("--binder-actors", type=int, default=0)
    parser.add_argument("--redis", type=int, default=1)
    parser.add_argument("--nodes", type=int, default=5_000)
    parser.add_argument("--kube", action="store_true", help="a real API server's watch")
    parser.add_argument("--memory", nargs="+", metavar="RESULT", help="fit memory to results")
    args = parser.parse_args()
    if args.memory:
        _print_memory(args.memory)
        return
    if args.simulate_cores:
        rate = simulate(
            args.shards,
            args.binder_actors,
            args.redis,
            args.simulate_cores,
            args.nodes,
            kube=args.kube,
        )
        print(
            f"simulated: {args.simulate_cores:g} cores, {args.shards} shards, "
            f"{args.binder_actors} binder actors, {args.redis} Redis, {args.nodes:,} nodes: "
            f"{rate:,.0f} pods/s"
        )
        return
    header = (
        "nodes | pods/s | shards | binder actors | Redis | cores | etcd writes | gives way first"
    )
    print(f"| {header} |")
    print("|---" * (header.count("|") + 1) + "|")
    for nodes in (5_000, 20_000, 100_000):
        for rate in (1_000, 5_000, 20_000):
            p = plan(nodes, rate)
            dispatch = "" if p.dispatchers == 1 else f" ({p.dispatchers} dispatchers needed)"
            print(
                f"| {nodes:,} | {rate:,} | {p.shards} | {p.binder_actors} | {p.redis} | {p.cores} "
                f"| {p.api_share:.0%} | {p.limit} at {p.ceiling:,.0f}{dispatch} |"
            )


if __name__ == "__main__":
    main()
