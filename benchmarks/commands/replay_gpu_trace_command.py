"""`optimist replay-gpu-trace`: a GPU trace replayed by the FGD paper's protocol."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import ray
import typer
from rich.table import Table

from benchmarks.gpu.mix import parse_mix
from benchmarks.gpu.trace_files import TraceError
from benchmarks.gpu.trace_replay import (
    DEFAULT_TRACE_POLICY,
    SEVERAL_SHARDS_BATCH,
    SEVERAL_SHARDS_INFLIGHT,
    parse_seeds,
    replay_settings,
    replay_trace,
    write_trace_plot,
)
from benchmarks.report.result_file import write_report
from optimist.cli.shared_options import (
    console,
    usage_error,
)
from optimist.runtime import init_ray
from shards.plugins.gpu_placement import POLICIES


def register(app: typer.Typer) -> None:
    """Joins `optimist` through the `optimist.commands` entry-point group."""
    app.command("replay-gpu-trace")(replay_gpu_trace)


def _seeds(text: str) -> list[int]:
    try:
        return parse_seeds(text)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None


def replay_gpu_trace(
    nodes: Annotated[Path, typer.Option(exists=True, dir_okay=False, help="openb_node_list_*.csv")],
    pods: Annotated[Path, typer.Option(exists=True, dir_okay=False, help="openb_pod_list_*.csv")],
    policy: Annotated[
        str,
        typer.Option(help=f"GPU policy, or several separated by commas: {', '.join(POLICIES)}"),
    ] = DEFAULT_TRACE_POLICY,
    seeds: Annotated[str, typer.Option(help="seeds, e.g. 42-51 or 42,43")] = "42-51",
    shards: Annotated[int, typer.Option(min=1, help="scheduler shards (1: the paper's order)")] = 1,
    batch_pods: Annotated[
        int | None,
        typer.Option(
            min=1,
            help=f"pods per batch to a shard [default: 256; {SEVERAL_SHARDS_BATCH} with several]",
        ),
    ] = None,
    inflight_per_shard: Annotated[
        int | None,
        typer.Option(
            min=1,
            help=f"batches a shard may hold at once [default: 2; {SEVERAL_SHARDS_INFLIGHT} "
            "with several]",
        ),
    ] = None,
    node_partitions: Annotated[
        bool | None,
        typer.Option(help="each shard keeps to its own nodes first [default: with several]"),
    ] = None,
    resample: Annotated[
        str | None,
        typer.Option(
            help="reweight the trace's tasks by kind first, e.g. share=60,spec=30: cpu (% of "
            "tasks CPU-only), share / multi (% of the GPU request from GPU-sharing / "
            "multi-GPU tasks), spec (% of GPU tasks bound to a GPU model)"
        ),
    ] = None,
    resample_seed: Annotated[
        int, typer.Option(min=0, help="with --resample: the seed of the reweighting")
    ] = 0,
    report: Annotated[Path | None, typer.Option(help="write the JSON report here")] = None,
    plot: Annotated[
        Path | None, typer.Option(help="write a PNG of unallocated GPUs against arrivals here")
    ] = None,
    redis_url: Annotated[
        str | None, typer.Option(help="redis://, rediss:// or unix:// (default: a private Redis)")
    ] = None,
) -> None:
    """Replay a GPU trace by the FGD paper's protocol, placing every task with optimist.

    Exits 2 if a trace file cannot be read, 1 if an invariant broke.
    """
    names = [p.strip() for p in policy.split(",") if p.strip()]
    unknown = [p for p in names if p not in POLICIES]
    if unknown or not names:
        raise typer.BadParameter(f"{policy!r}: policies are {', '.join(POLICIES)}")
    settings = replay_settings(
        shards,
        batch_pods=batch_pods,
        inflight_per_shard=inflight_per_shard,
        node_partitions=node_partitions,
        redis_url=redis_url,
    )
    with usage_error(TraceError):
        mix = parse_mix(resample) if resample else None
    own = init_ray(None)
    runs = []
    try:
        with usage_error(TraceError):
            for name in names:
                runs.append(
                    replay_trace(
                        nodes,
                        pods,
                        name,
                        _seeds(seeds),
                        settings,
                        progress=lambda p, s: console.print(f"{p}: seed {s} done"),
                        mix=mix,
                        mix_seed=resample_seed,
                    )
                )
    finally:
        if own:
            ray.shutdown()
    console.print(_table(runs, pods, shards, resample, resample_seed))
    if report:
        doc = runs[0] if len(runs) == 1 else {"runs": runs}
        write_report(report, doc)
    if plot:
        write_trace_plot(runs, plot)
    violations = [v for r in runs for v in r["invariant_violations"]]
    for violation in violations:
        console.print(f"[red]invariant violated:[/red] {violation}")
    raise typer.Exit(1 if violations else 0)


def _table(
    runs: list[dict[str, Any]], pods: Path, shards: int, resample: str | None, resample_seed: int
) -> Table:
    """A row per policy: the unallocated share at 100% arrived and at the end."""
    mixed = f", resampled {resample} (seed {resample_seed})" if resample else ""
    table = Table(title=f"optimist replay-gpu-trace: {pods.name}{mixed}, {shards} shard(s)")
    for column in ("policy", "unallocated % at 100%", "at the end", "fragmentation %", "failed"):
        table.add_column(column, justify="left" if column == "policy" else "right")
    for r in runs:
        at_100, end = r["unallocated_gpu_pct_at_100"], r["unallocated_gpu_pct_end"]
        table.add_row(
            r["policy"],
            f"{at_100['mean']:.2f} ± {at_100['std']:.2f}",
            f"{end['mean']:.2f} ± {end['std']:.2f}",
            f"{r['fragmentation_rate_at_100']['mean']:.1f}",
            f"{r['failed_pods_per_seed_mean']:.0f}",
        )
    return table
