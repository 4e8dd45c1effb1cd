"""GPU placement policies side by side on many workload mixes of a trace, seed by seed,
and where each strands the GPUs it leaves.

    .venv/bin/python -m benchmarks.sweeps.gpu_mixes --nodes NODES.csv --pods PODS.csv \\
        --mix default --mix spec=60 --mix share=60 \\
        [--policy fgd-scarcity fgd-capacity fgd ...] [--seeds 42-51] [--resample-seed 0] \\
        [--jobs 2] [--report sweep.json] [--html sweep.html] [--plot sweep.png]

A mix is `default` (the `--pods` file as it is) or a reweighting of it by
kind (`benchmarks/gpu/mix.py`, as `replay-gpu-trace --resample` makes it),
either after `FILE.csv:` to start from another pods file (a shipped variant):
`--mix gpuspec10.csv:spec=33`. Every policy is replayed on every mix with
every seed inside one shard (`benchmarks.gpu.shard_replay`: the platform's
placements for one shard), up to 100% of GPU capacity arrived. Per mix the
table gives each policy's unallocated GPU share, mean ± sd over the seeds,
and its difference from the first policy paired by seed, told as a win or a
loss only beyond twice its standard error.

Where the unallocated share lies is split two ways, each in % of GPU capacity
at 100% arrived: the GPU requests of the tasks that failed, by kind (a share,
one whole GPU, several; bound to a GPU model or not), and the GPU capacity
left idle, by node model and form: slivers of GPUs in part used, whole GPUs on
nodes with under two cores free, other whole GPUs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.gpu.mix import composition, gpu_models, kind_of, parse_mix, resample
from benchmarks.gpu.shard_replay import ShardReplay, replay_in_shard
from benchmarks.gpu.trace_files import TraceError, TraceNode, TraceTask, read_nodes, read_tasks
from benchmarks.gpu.trace_replay import arrivals, parse_seeds
from benchmarks.report.charts import save_png
from benchmarks.report.pages import gpu_mix_chart, write_html
from optimist.offline import provenance
from shards.plugins.gpu_placement import POLICIES

DEFAULT_MIX = "default"
CPU_STARVED = 2000  # millicores: a node with less free holds almost no GPU task
# a difference is a win or a loss when it is this many standard errors from zero
BEYOND_NOISE = 2.0


@dataclass(frozen=True, slots=True)
class Mix:
    """A pods file, reweighted by `targets` (none: as it is)."""

    label: str
    pods: Path
    targets: dict[str, float]

    @classmethod
    def parse(cls, text: str, pods: Path) -> Mix:
        """`default`, `KIND=PERCENT,...` or either after `FILE.csv:`; TraceError if wrong."""
        head, colon, rest = text.rpartition(":")
        if colon and head.endswith(".csv"):
            pods, text = Path(head), rest
            label = f"{pods.stem.rsplit('_', 1)[-1]} {text}".replace(f" {DEFAULT_MIX}", "")
        else:
            label = text
        return cls(label, pods, {} if text == DEFAULT_MIX else parse_mix(text))

    def tasks(self, nodes: Sequence[TraceNode], seed: int) -> list[TraceTask]:
        tasks = read_tasks(self.pods)
        return resample(tasks, self.targets, seed, gpu_models(nodes)) if self.targets else tasks


@dataclass(frozen=True, slots=True)
class Job:
    nodes: Path
    mix: Mix
    mix_seed: int
    policy: str
    seed: int
    batch: int


@dataclass(slots=True)
class SeedResult:
    mix: str
    policy: str
    seed: int
    unallocated_pct: float
    failed_pct: dict[str, float] = field(default_factory=dict)  # by kind of task
    idle_pct: dict[str, float] = field(default_factory=dict)  # by "model: form"


def run(job: Job) -> SeedResult:
    """One policy, one mix, one seed."""
    nodes = read_nodes(job.nodes)
    tasks = job.mix.tasks(nodes, job.mix_seed)
    gpu_total = sum(n.gpus for n in nodes) * 1000
    order = arrivals(tasks, gpu_total, job.seed)
    replay = replay_in_shard(nodes, order, job.policy, job.seed, job.batch, through_100=True)
    return SeedResult(
        job.mix.label,
        job.policy,
        job.seed,
        replay.unallocated_pct_at_100,
        _failed(replay),
        _idle(nodes, replay),
    )


def _failed(replay: ShardReplay) -> dict[str, float]:
    """% of GPU capacity asked by the tasks that failed before 100% arrived, by kind."""
    out: Counter[str] = Counter()
    for task, where in replay.arrived:
        if where is None and task.gpu_request:
            kind = {"share": "share", "whole": "1 GPU", "multi": "several GPUs"}[kind_of(task)]
            out[f"{kind}, bound" if task.models else kind] += task.gpu_request
    return {k: 100.0 * v / replay.gpu_total for k, v in sorted(out.items())}


def _idle(nodes: Sequence[TraceNode], replay: ShardReplay) -> dict[str, float]:
    """% of GPU capacity idle at 100% arrived, by node model and form."""
    index = {n.name: i for i, n in enumerate(nodes)}
    free = [[1000] * n.gpus for n in nodes]
    cpu = [n.cpu_milli for n in nodes]
    for task, where in replay.arrived:
        if where is None:
            continue
        row = index[where.nodes[0]]
        cpu[row] -= task.cpu_milli
        for gpu in where.gpus:
            free[row][gpu] -= task.gpu.per_device
    out: Counter[str] = Counter()
    for n, gpus, cpu_free in zip(nodes, free, cpu, strict=True):
        for milli in gpus:
            if milli == 1000:
                form = "idle GPUs, CPU short" if cpu_free < CPU_STARVED else "idle GPUs"
            else:
                form = "slivers"
            out[f"{n.model}: {form}"] += milli
    return {k: 100.0 * v / replay.gpu_total for k, v in sorted(out.items()) if v}


def seeds(text: str) -> list[int]:
    """`42-51`, `42,45` or both, as `replay-gpu-trace --seeds` reads them."""
    try:
        return parse_seeds(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def summary(
    results: Sequence[SeedResult], mixes: Sequence[str], policies: Sequence[str]
) -> list[dict[str, Any]]:
    """Per mix, per policy: mean ± sd over the seeds, the seeds' figures, the breakdowns'
    means, and the difference from the first policy paired by seed."""
    by: dict[tuple[str, str], list[SeedResult]] = defaultdict(list)
    for r in results:
        by[r.mix, r.policy].append(r)
    out = []
    for mix in mixes:
        first = {r.seed: r.unallocated_pct for r in by[mix, policies[0]]}
        entry: dict[str, Any] = {"mix": mix, "policies": {}}
        for policy in policies:
            runs = sorted(by[mix, policy], key=lambda r: r.seed)
            values = [r.unallocated_pct for r in runs]
            diffs = [r.unallocated_pct - first[r.seed] for r in runs]
            entry["policies"][policy] = {
                "mean": statistics.mean(values),
                "sd": statistics.pstdev(values),
                "seeds": {str(r.seed): r.unallocated_pct for r in runs},
                "vs_first": _paired(diffs),
                "failed_pct": _means([r.failed_pct for r in runs]),
                "idle_pct": _means([r.idle_pct for r in runs]),
            }
        out.append(entry)
    return out


def _paired(diffs: Sequence[float]) -> dict[str, Any]:
    """The mean of per-seed differences, its standard error, and what it says."""
    mean = statistics.mean(diffs)
    se = statistics.stdev(diffs) / math.sqrt(len(diffs)) if len(diffs) > 1 else 0.0
    verdict = "within the noise"
    if abs(mean) > BEYOND_NOISE * se and any(diffs):
        verdict = "better" if mean < 0 else "worse"
    return {"mean": mean, "se": se, "verdict": verdict}


def _means(parts: Sequence[dict[str, float]]) -> dict[str, float]:
    keys = sorted({k for p in parts for k in p})
    return {k: sum(p.get(k, 0.0) for p in parts) / len(parts) for k in keys}


def _print(entries: Sequence[dict[str, Any]], policies: Sequence[str]) -> None:
    first = policies[0]
    print(f"{'mix':24}" + "".join(f" {p:>22}" for p in policies))
    for e in entries:
        cells = []
        for p in policies:
            s = e["policies"][p]
            mark = ""
            if p != first and s["vs_first"]["verdict"] != "within the noise":
                mark = " +" if s["vs_first"]["verdict"] == "worse" else " -"
            cells.append(f"{s['mean']:.2f}% ± {s['sd']:.2f}{mark:2}")
        print(f"{e['mix']:24}" + "".join(f" {c:>22}" for c in cells))
    print(f"(+ / -: beyond the noise worse / better than {first}, paired by seed)")
    for e in entries:
        print(f"\n{e['mix']}: failed GPU requests before 100%, % of capacity")
        kinds = sorted({k for p in policies for k in e["policies"][p]["failed_pct"]})
        for kind in kinds:
            row = "".join(
                f" {e['policies'][p]['failed_pct'].get(kind, 0.0):>22.2f}" for p in policies
            )
            print(f"  {kind:22}{row}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=Path, required=True)
    parser.add_argument("--pods", type=Path, required=True)
    parser.add_argument("--mix", action="append", help="default, or KIND=PERCENT,... (repeat)")
    parser.add_argument(
        "--policy",
        nargs="+",
        default=["fgd-scarcity", "fgd-capacity", "fgd"],
        choices=list(POLICIES),
    )
    parser.add_argument("--seeds", type=seeds, default=seeds("42-51"))
    parser.add_argument("--resample-seed", type=int, default=0)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--report", type=Path, help="write the figures as JSON")
    parser.add_argument("--html", type=Path, help="write a page with the chart and tables")
    parser.add_argument("--plot", type=Path, help="write the chart as a PNG")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    try:
        mixes = [Mix.parse(text, args.pods) for text in args.mix or [DEFAULT_MIX]]
        nodes = read_nodes(args.nodes)
        compositions = {m.label: composition(m.tasks(nodes, args.resample_seed)) for m in mixes}
    except (TraceError, OSError) as e:
        parser.error(str(e))
    # the code that runs is the code as it is now: an edit during a long sweep is not in it
    made = provenance.provenance(["python", "-m", "benchmarks.sweeps.gpu_mixes", *argv])
    jobs = [
        Job(args.nodes, mix, args.resample_seed, policy, seed, args.batch)
        for mix in mixes
        for policy in args.policy
        for seed in args.seeds
    ]
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(run, jobs))
    entries = summary(results, [m.label for m in mixes], args.policy)
    for entry in entries:
        entry["composition"] = compositions[entry["mix"]]
    _print(entries, args.policy)
    out: dict[str, Any] = {
        "gpu_mix_sweep": {
            "nodes": str(args.nodes),
            "pods": str(args.pods),
            "policies": args.policy,
            "seeds": args.seeds,
            "resample_seed": args.resample_seed,
            "mixes": entries,
            "runs": [asdict(r) for r in results],
        },
        "machine": provenance.machine(),
        **made,
    }
    if args.report:
        args.report.write_text(json.dumps(out, indent=1) + "\n")
    if args.html:
        write_html(out, args.html)
    chart = gpu_mix_chart(out["gpu_mix_sweep"]) if args.plot else None
    if chart is not None:
        save_png(chart, args.plot)


if __name__ == "__main__":
    main()
