"""The `optimist` command line."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from benchmarks import template
from optimist.bench import Workload, run_bench, write_placements
from optimist.config import Settings
from optimist.configuration import (
    HANDLED_OUTSIDE_SHARDS,
    ConfigError,
    Configuration,
    default_configuration,
    load_file,
)
from optimist.plots import write_html
from optimist.replay import SnapshotError, load_snapshot, run_replay, write_comparison

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)
console = Console()
log = logging.getLogger("optimist")


@app.callback()
def main(verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False) -> None:
    """optimist: a parallel, optimistic-concurrency scheduler for Kubernetes."""
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


@app.command()
def bench(
    config: Annotated[
        Path | None,
        typer.Option(
            dir_okay=False,
            help="KubeSchedulerConfiguration file, with an optional OptimistConfiguration "
            "document; the flags below override the latter",
        ),
    ] = None,
    shards: Annotated[
        int | None, typer.Option(min=1, help="scheduler shards (Ray actors) [default: 2]")
    ] = None,
    nodes: Annotated[int, typer.Option(min=1, help="simulated nodes")] = 5000,
    pods: Annotated[int, typer.Option(min=0, help="pods created in the measured phase")] = 10000,
    seed: Annotated[
        int | None, typer.Option(help="seed for names, tie-breaks and order [default: 0]")
    ] = None,
    redis_url: Annotated[
        str | None, typer.Option(help="redis://, rediss:// or unix:// (default: a private Redis)")
    ] = None,
    ray_address: Annotated[str | None, typer.Option(help="join this Ray cluster")] = None,
    batch_pods: Annotated[
        int | None, typer.Option(min=1, help="pods per batch sent to a shard [default: 256]")
    ] = None,
    conflict_mode: Annotated[
        str,
        typer.Option(
            help="fine: a pod that still fits is committed; coarse: any change to its node "
            "since the shard looked is a conflict"
        ),
    ] = "fine",
    candidates: Annotated[
        int, typer.Option(min=1, help="nodes offered per pod; the binder takes the first that fits")
    ] = 3,
    node_template: Annotated[Path | None, typer.Option(exists=True, dir_okay=False)] = None,
    pod_template: Annotated[Path | None, typer.Option(exists=True, dir_okay=False)] = None,
    placements: Annotated[
        Path | None, typer.Option(help="write namespace,pod,node CSV here")
    ] = None,
    report: Annotated[Path | None, typer.Option(help="write the JSON report here")] = None,
    progress: Annotated[bool, typer.Option(help="show a progress bar")] = True,
) -> None:
    """Schedule a simulated cluster and report pods/s; exits 1 if any pod was lost."""
    configuration = _load_or_exit(config) if config else default_configuration()
    settings = Settings.from_configuration(
        configuration,
        shards=shards,
        redis_url=redis_url,
        ray_address=ray_address,
        batch_pods=batch_pods,
        seed=seed,
    )
    settings = replace(settings, conflict_mode=conflict_mode, candidates=candidates)
    if config:
        for plugin in configuration.inactive:
            log.warning("inactive plugin: %s", plugin)
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


@app.command("check-config")
def check_config(
    file: Annotated[Path, typer.Argument(dir_okay=False, help="the configuration file")],
) -> None:
    """Validate a configuration file and show what optimist runs of it; exits 2 if it is bad."""
    configuration = _load_or_exit(file)
    for profile, expanded in zip(configuration.profiles, configuration.expanded, strict=True):
        pct = profile.percentage_of_nodes_to_score
        typer.echo(f"profile {profile.scheduler_name}")
        typer.echo(f"  percentageOfNodesToScore: {pct if pct is not None else 'adaptive'}")
        typer.echo(f"  filters: {', '.join(profile.filters) or '(none)'}")
        scorers = ", ".join(f"{name} (weight {weight})" for name, weight in profile.scorers)
        typer.echo(f"  scorers: {scorers or '(none)'}")
        for name, (point, how) in HANDLED_OUTSIDE_SHARDS.items():
            if name in expanded.points[point]:
                typer.echo(f"  {point}: {name} ({how})")
    if configuration.inactive:
        typer.echo("inactive plugins (enabled in the file, not run by optimist):")
        for plugin in configuration.inactive:
            typer.echo(f"  {plugin}")
    settings = Settings.from_configuration(configuration).public()
    settings.pop("profiles")
    typer.echo("optimist: " + ", ".join(f"{k}={v}" for k, v in settings.items()))


def _load_or_exit(path: Path) -> Configuration:
    """The loaded file, or exit 2 with the problem, as a usage error does."""
    try:
        return load_file(path)
    except (ConfigError, OSError, UnicodeDecodeError) as e:
        typer.echo(f"error: {path}: {e}", err=True)
        raise typer.Exit(2) from e


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


@app.command()
def replay(
    snapshot: Annotated[
        Path,
        typer.Argument(
            exists=True, dir_okay=False, help="`kubectl get nodes,pods,podgroups -A -o yaml` output"
        ),
    ],
    config: Annotated[
        Path | None,
        typer.Option(dir_okay=False, help="KubeSchedulerConfiguration file, as for bench"),
    ] = None,
    shards: Annotated[
        int | None, typer.Option(min=1, help="scheduler shards (Ray actors) [default: 2]")
    ] = None,
    seed: Annotated[int | None, typer.Option(help="seed for tie-breaks [default: 0]")] = None,
    redis_url: Annotated[
        str | None, typer.Option(help="redis://, rediss:// or unix:// (default: a private Redis)")
    ] = None,
    ray_address: Annotated[str | None, typer.Option(help="join this Ray cluster")] = None,
    placements: Annotated[
        Path | None,
        typer.Option(help="write namespace,pod,snapshot_node,optimist_node,unplaced_reason CSV"),
    ] = None,
    report: Annotated[Path | None, typer.Option(help="write the JSON report here")] = None,
    html: Annotated[Path | None, typer.Option(help="write an HTML page with charts here")] = None,
) -> None:
    """Place a real cluster's pods again with optimist and compare with where they are.

    Exits 2 if the file is no snapshot, 1 if an invariant broke; bad objects in
    it are reported and left out.
    """
    configuration = _load_or_exit(config) if config else default_configuration()
    settings = Settings.from_configuration(
        configuration, shards=shards, redis_url=redis_url, ray_address=ray_address, seed=seed
    )
    for plugin in configuration.inactive if config else ():
        log.warning("inactive plugin: %s", plugin)
    try:
        snap = load_snapshot(snapshot, settings.scheduler_names)
    except SnapshotError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from e
    run = run_replay(snap, settings)
    for error in run.report["errors"]:
        typer.echo(f"error: {error}", err=True)
    console.print(_replay_table(run.report))
    if placements:
        write_comparison(run, placements)
    if report:
        report.write_text(json.dumps(run.report, indent=2) + "\n")
    if html:
        write_html(run.report, html)
    for violation in run.report["invariant_violations"]:
        console.print(f"[red]invariant violated:[/red] {violation}")
    raise typer.Exit(0 if run.ok else 1)


def _replay_table(r: dict[str, Any]) -> Table:
    """The snapshot's placement beside optimist's, then what optimist did with the pods."""
    table = Table(title=f"optimist replay: {r['nodes']} nodes, {r['pods_replayed']} pods replayed")
    table.add_column("figure")
    table.add_column("snapshot", justify="right")
    table.add_column("optimist", justify="right")
    before, after = r["quality"]["snapshot"], r["quality"]["optimist"]
    rows: list[tuple[str, Callable[[dict[str, Any]], object]]] = [
        ("pods bound", lambda q: q["workload_pods_bound"]),
        ("whole free nodes", lambda q: q["whole_free_nodes"]),
        ("whole free 8-GPU nodes", lambda q: q["whole_free_gpu8_nodes"]),
        ("CPU stranded (cores)", lambda q: f"{q['resources']['cpu']['stranded'] / 1000:.1f}"),
        ("memory stranded (GiB)", lambda q: f"{q['resources']['memory']['stranded'] / 2**30:.1f}"),
        ("GPUs stranded", lambda q: q["resources"]["nvidia.com/gpu"]["stranded"]),
        ("zone skew (pods)", lambda q: q["zones"]["skew"]),
    ]
    for name, figure in rows:
        table.add_row(name, str(figure(before)), str(figure(after)))
    for name, key in [
        ("placed", "pods_placed"),
        ("not placed", "pods_unplaced"),
        ("moved to another node", "pods_moved"),
        ("placed, pending in the snapshot", "pods_newly_placed"),
        ("conflicts", "conflicts"),
    ]:
        table.add_row(name, "", str(r[key]))
    for reason, count in list(r["unplaced_reasons"].items())[:5]:
        table.add_row(f"  {reason}", "", str(count))
    return table
