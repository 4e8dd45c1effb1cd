"""The `optimist` command line."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from benchmarks import template
from optimist.bench import Workload, run_bench, write_placements
from optimist.config import Settings

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)
console = Console()


@app.callback()
def main(verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False) -> None:
    """optimist: a parallel, optimistic-concurrency scheduler for Kubernetes."""
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


@app.command()
def bench(
    shards: Annotated[int, typer.Option(min=1, help="scheduler shards (Ray actors)")] = 2,
    nodes: Annotated[int, typer.Option(min=1, help="simulated nodes")] = 5000,
    pods: Annotated[int, typer.Option(min=0, help="pods created in the measured phase")] = 10000,
    seed: Annotated[int, typer.Option(help="seed for names, tie-breaks and order")] = 0,
    redis_url: Annotated[
        str | None, typer.Option(help="redis://, rediss:// or unix:// (default: a private Redis)")
    ] = None,
    ray_address: Annotated[str | None, typer.Option(help="join this Ray cluster")] = None,
    batch_pods: Annotated[int, typer.Option(min=1, help="pods per batch sent to a shard")] = 256,
    node_template: Annotated[Path | None, typer.Option(exists=True, dir_okay=False)] = None,
    pod_template: Annotated[Path | None, typer.Option(exists=True, dir_okay=False)] = None,
    placements: Annotated[
        Path | None, typer.Option(help="write namespace,pod,node CSV here")
    ] = None,
    report: Annotated[Path | None, typer.Option(help="write the JSON report here")] = None,
    progress: Annotated[bool, typer.Option(help="show a progress bar")] = True,
) -> None:
    """Schedule a simulated cluster and report pods/s; exits 1 if any pod was lost."""
    settings = Settings(
        shards=shards,
        redis_url=redis_url,
        ray_address=ray_address,
        batch_pods=batch_pods,
        seed=seed,
    )
    workload = Workload(
        nodes=nodes,
        pods=pods,
        node_template=node_template or template("node-default.yaml"),
        pod_template=pod_template or template("pod-default.yaml"),
    )
    run = run_bench(settings, workload, show_progress=progress)
    console.print(summary_table(run.report))
    if placements:
        write_placements(run.cluster, placements)
    if report:
        report.write_text(json.dumps(run.report, indent=2) + "\n")
    for violation in run.report["invariant_violations"]:
        console.print(f"[red]invariant violated:[/red] {violation}")
    raise typer.Exit(0 if run.ok else 1)


def summary_table(r: dict[str, Any]) -> Table:
    t = r["throughput_pods_per_s"]
    table = Table(title=f"optimist bench: {r['nodes']} nodes, {len(r['shards'])} shard(s)")
    table.add_column("figure")
    table.add_column("value", justify="right")
    rows = [
        ("pods created", r["pods_created"]),
        ("pods scheduled", r["pods_scheduled"]),
        ("pods unschedulable", r["pods_unschedulable"]),
        ("conflicts", r["conflicts"]),
        ("attempts (pods sent to shards)", r["attempts"]),
        ("duration", f"{r['duration_s']:.2f} s"),
        ("pods/s average", f"{t['average']:.0f}"),
        ("pods/s p50 / p90 / p99", f"{t['p50']:.0f} / {t['p90']:.0f} / {t['p99']:.0f}"),
    ]
    for name, value in rows:
        table.add_row(name, str(value))
    for reason, count in list(r["unschedulable_reasons"].items())[:5]:
        table.add_row(f"  {reason}", str(count))
    return table
