"""`optimist replay-gpu-trace`: the FGD paper's replay of a GPU trace, through optimist.

The protocol is the paper's (../shared/traces/README.md): the trace's GPU
nodes; its tasks shuffled with a seed and topped up, by sampling with
replacement, to 130% of the cluster's GPU capacity; one attempt per task,
a task that fits nowhere fails and is dropped, nothing ever leaves. Only
the placing is optimist's own: every task is a pod created in the simulated
cluster, queued by the dispatcher, placed by the shards with the chosen
GPU policy (`GPUPlacement`), committed by the binder.

The headline is the share of GPU capacity left unallocated when the GPU
requests that arrived (failed ones included) reach 100% of capacity.
Each placement depends only on the tasks before it (one shard places in
order), so that moment is read off afterwards from the placements.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.gpu import mix as gpu_mix
from benchmarks.gpu.trace_files import (
    PROFILE,
    TraceNode,
    TraceTask,
    read_nodes,
    read_tasks,
)
from benchmarks.report.charts import Series, line_chart, save_png
from cluster.gpus import GPU_INDICES_ANNOTATION
from cluster.profile_config import ProfileConfig
from optimist.loop import SchedulingLoop
from optimist.offline import provenance
from optimist.offline.invariants import check_invariants
from optimist.offline.simulator import SimulatedCluster
from optimist.runtime import Platform
from optimist.settings import Settings
from shards.plugins.gpu_placement.fragmentation import demands, fragmentation
from shards.plugins.gpu_placement.workload import Workload

DEFAULT_TRACE_POLICY = "fgd-scarcity"  # the best optimist has (docs/gpus.md)
VOLUME = 1.3  # tasks arrive until their GPU requests reach this share of capacity
CURVE_STEPS = 130  # points of the unallocated-against-arrived curve, one per percent
# several shards: each keeps to its own nodes first, in small batches, one at a time, so
# that its decisions are made on a view of them no other shard has moved meanwhile
SEVERAL_SHARDS_BATCH = 64
SEVERAL_SHARDS_INFLIGHT = 1


def arrivals(tasks: Sequence[TraceTask], gpu_total: int, seed: int) -> list[TraceTask]:
    """The paper's order: shuffled with the seed, then topped up by sampling with
    replacement until the GPU requests reach `VOLUME` of capacity."""
    rng = np.random.default_rng(seed)
    order = [tasks[i] for i in rng.permutation(len(tasks))]
    arrived = sum(t.gpu_request for t in order)
    while arrived < VOLUME * gpu_total and any(t.gpu_request for t in tasks):
        task = tasks[int(rng.integers(len(tasks)))]
        order.append(task)
        arrived += task.gpu_request
    return order


@dataclass(slots=True)
class SeedRun:
    seed: int
    pods: int
    unallocated_pct_at_100: float
    unallocated_pct_end: float
    fragmentation_rate_at_100: float
    failed: Counter[str]
    curve: list[float]  # unallocated % when 1%, 2%, ... of capacity had arrived
    attempts_per_pod: float
    duration_s: float
    violations: list[str]


def trace_profile(policy: str, seed: int) -> ProfileConfig:
    """The replay's profile: the filters the trace needs and the policy alone scoring every
    node, as the paper does, ties broken by the nodes' priority drawn from the seed."""
    args = {"policy": policy, "prioritySeed": seed, "tieBreak": "nodePriority"}
    return ProfileConfig(
        PROFILE,
        filters=("NodeUnschedulable", "NodeAffinity", "NodeResourcesFit"),
        scorers=(("GPUPlacement", 1),),
        args={"GPUPlacement": args, "NodeResourcesFit": {}},
        percentage_of_nodes_to_score=100,
    )


def replay_settings(
    shards: int,
    *,
    batch_pods: int | None = None,
    inflight_per_shard: int | None = None,
    node_partitions: bool | None = None,
    redis_url: str | None = None,
) -> Settings:
    """The replay's platform: with one shard the paper's order; with several, unless
    told otherwise, node partitions and small batches one at a time (on the default
    trace, 4 shards lost 1.4 points against one shard with the scheduler's defaults and
    0.2 with these; docs/gpus.md)."""
    several = shards > 1
    return Settings(
        shards=shards,
        redis_url=redis_url,
        batch_pods=batch_pods or (SEVERAL_SHARDS_BATCH if several else None),
        inflight_per_shard=inflight_per_shard or (SEVERAL_SHARDS_INFLIGHT if several else None),
        node_partitions=several if node_partitions is None else node_partitions,
    )


def replay_seed(
    nodes: Sequence[TraceNode],
    tasks: Sequence[TraceTask],
    policy: str,
    seed: int,
    settings: Settings,
) -> SeedRun:
    """One seed of the protocol, through the platform."""
    gpu_total = sum(n.gpus for n in nodes) * 1000
    order = arrivals(tasks, gpu_total, seed)
    settings = replace(settings, profiles=(trace_profile(policy, seed),), seed=seed)
    cluster = SimulatedCluster(frozenset({PROFILE}), seed=seed)
    for node in nodes:
        cluster.create_nodes(node.manifest(), 1)
    with Platform(settings) as platform:
        platform.store.clear()
        loop = SchedulingLoop(platform, cluster)
        names = [f"task-{i:06d}" for i in range(len(order))]
        started = time.perf_counter()
        for task, name in zip(order, names, strict=True):
            cluster.create_pods(task.manifest(name), 1, namespace="trace")
        loop.run_until_settled()
        duration = time.perf_counter() - started
        unschedulable = loop.dispatcher.unschedulable()
        violations = check_invariants(cluster, unschedulable, platform.store)
        attempts = loop.dispatcher.stats.pod_attempts
    return _measure(nodes, order, names, cluster, seed, attempts, duration, violations)


def parse_seeds(text: str) -> list[int]:
    """`42-51`, `42,45` or both (`42-44,50`); ValueError saying what is wrong."""
    seeds: list[int] = []
    try:
        for part in text.split(","):
            low, _, high = part.partition("-")
            seeds.extend(range(int(low), int(high or low) + 1))
    except ValueError:
        raise ValueError(f"{text!r}: expected seeds such as 42-51 or 42,43") from None
    if not seeds:
        raise ValueError(f"{text!r}: no seeds")
    return seeds


def tasks_at_100(order: Sequence[TraceTask], gpu_total: int) -> int:
    """How many tasks have arrived at 100% of GPU capacity, as the paper reads it: those
    before the task that takes the GPUs asked for past it (all, if none does)."""
    arrived = 0
    for i, task in enumerate(order):
        if arrived + task.gpu_request > gpu_total:
            return i
        arrived += task.gpu_request
    return len(order)


def _measure(
    nodes: Sequence[TraceNode],
    order: Sequence[TraceTask],
    names: Sequence[str],
    cluster: SimulatedCluster,
    seed: int,
    attempts: int,
    duration: float,
    violations: list[str],
) -> SeedRun:
    gpu_total = sum(n.gpus for n in nodes) * 1000
    arrived = allocated = 0
    curve: list[float] = []
    hundred = tasks_at_100(order, gpu_total)
    pct_100: float | None = None  # unallocated % when the first `hundred` tasks have come
    failed: Counter[str] = Counter()
    for i, (task, name) in enumerate(zip(order, names, strict=True)):
        if i == hundred:
            pct_100 = 100.0 * (1 - allocated / gpu_total)
        arrived += task.gpu_request
        if f"trace/{name}" in cluster.bindings:
            allocated += task.gpu_request
        else:
            failed[task.kind] += 1
        unallocated = 100.0 * (1 - allocated / gpu_total)
        while len(curve) < CURVE_STEPS and arrived >= (len(curve) + 1) * gpu_total / 100:
            curve.append(unallocated)
    end = 100.0 * (1 - allocated / gpu_total)
    rate = fragmentation_rate(nodes, order, names[:hundred], cluster)
    return SeedRun(
        seed,
        len(order),
        end if pct_100 is None else pct_100,
        end,
        rate,
        failed,
        curve,
        attempts / len(order) if order else 0.0,
        duration,
        violations,
    )


def fragmentation_rate(
    nodes: Sequence[TraceNode],
    tasks: Sequence[TraceTask],
    placed_of: Sequence[str],
    cluster: SimulatedCluster,
) -> float:
    """% of the idle GPU capacity that is fragmented for the workload of all the tasks,
    with the placements of the tasks `placed_of` names (the first ones to arrive)."""
    index = {n.name: i for i, n in enumerate(nodes)}
    width = max((n.gpus for n in nodes), default=0)
    free = np.zeros((len(nodes), width), dtype=np.int64)
    for i, n in enumerate(nodes):
        free[i, : n.gpus] = 1000
    cpu_free = np.array([n.cpu_milli for n in nodes], dtype=np.int64)
    by_name = dict(zip(placed_of, tasks, strict=False))
    for name, task in by_name.items():
        key = f"trace/{name}"
        node = cluster.bindings.get(key)
        if node is None:
            continue
        row = index[node]
        cpu_free[row] -= task.cpu_milli
        annotations = cluster.pod_manifests[key]["metadata"].get("annotations") or {}
        for gpu in (annotations.get(GPU_INDICES_ANNOTATION) or "").split(","):
            if gpu:
                free[row, int(gpu)] -= task.gpu.per_device
    workload = Workload(window=max(len(tasks), 1))
    workload.observe(t.task_class for t in tasks)
    classes = workload.classes()
    vocab = {m: i for i, m in enumerate(sorted({n.model for n in nodes}))}
    model = np.array([vocab[n.model] for n in nodes], dtype=np.int64)
    fragmented = fragmentation(free, cpu_free, model, demands(classes, vocab)).sum()
    idle = free.sum()
    return float(100.0 * fragmented / idle) if idle else 0.0


def _spread(values: Sequence[float]) -> dict[str, Any]:
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    return {"mean": round(mean, 4), "std": round(std, 4), "per_seed": [round(v, 4) for v in values]}


def replay_trace(
    nodes_path: Path,
    pods_path: Path,
    policy: str,
    seeds: Sequence[int],
    settings: Settings,
    progress: Any = None,
    mix: dict[str, float] | None = None,
    mix_seed: int = 0,
) -> dict[str, Any]:
    """Every seed of one policy; the report (keys as the issue names them). With `mix`
    (`gpu_mix.parse_mix`), the trace's tasks reweighted first, once, with `mix_seed`."""
    nodes, tasks = read_nodes(nodes_path), read_tasks(pods_path)
    if mix:
        tasks = gpu_mix.resample(tasks, mix, mix_seed, gpu_mix.gpu_models(nodes))
    runs = []
    for seed in seeds:
        runs.append(replay_seed(nodes, tasks, policy, seed, settings))
        if progress is not None:
            progress(policy, seed)
    failed: Counter[str] = Counter()
    for run in runs:
        failed.update(run.failed)
    return {
        "policy": policy,
        "seeds": list(seeds),
        "nodes": nodes_path.name,
        "pods": pods_path.name,
        "mix": {
            "targets": {k: round(v * 100, 2) for k, v in (mix or {}).items()},
            "seed": mix_seed if mix else None,
            "tasks": len(tasks),
            "composition_pct": {
                k: round(v * 100, 2) for k, v in gpu_mix.composition(tasks).items()
            },
        },
        "gpu_total": sum(n.gpus for n in nodes),
        "shards": settings.shards,
        "batch_pods": settings.pods_per_batch,
        "inflight_per_shard": settings.batches_in_flight,
        "node_partitions": settings.node_partitions,
        "unallocated_gpu_pct_at_100": _spread([r.unallocated_pct_at_100 for r in runs]),
        "unallocated_gpu_pct_end": _spread([r.unallocated_pct_end for r in runs]),
        "fragmentation_rate_at_100": _spread([r.fragmentation_rate_at_100 for r in runs]),
        "failed_pods": {k: round(v / len(runs), 1) for k, v in sorted(failed.items())},
        "failed_pods_per_seed_mean": round(sum(r.failed.total() for r in runs) / len(runs), 1),
        "pods_per_seed": [r.pods for r in runs],
        "attempts_per_pod": _spread([r.attempts_per_pod for r in runs]),
        "duration_s": _spread([r.duration_s for r in runs]),
        "curve_unallocated_gpu_pct": [
            round(sum(r.curve[i] for r in runs) / len(runs), 3)
            for i in range(min(len(r.curve) for r in runs))
        ],
        "invariant_violations": [v for r in runs for v in r.violations][:100],
        "machine": provenance.machine(),
    }


def write_trace_plot(runs: Sequence[dict[str, Any]], path: Path) -> None:
    """Unallocated GPUs against the workload arrived, every policy on one chart."""
    first = runs[0]
    lines = [
        Series(
            f"{r['policy']} {r['unallocated_gpu_pct_at_100']['mean']:.2f}%",
            r["curve_unallocated_gpu_pct"],
            x=[float(i + 1) for i in range(len(r["curve_unallocated_gpu_pct"]))],
        )
        for r in runs
    ]
    title = f"{first['pods']}: unallocated gpus, mean of {len(first['seeds'])} seeds"
    x_label = "arrived gpu requests (% of capacity)"
    save_png(line_chart(title, x_label, lines, y_label="unallocated gpu %"), path)
