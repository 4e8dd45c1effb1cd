"""`optimist replay`: a real cluster's pods placed again by optimist, compared with where
they are, written as the harness writes its results (a result file, a page)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from benchmarks.report.pages import write_html
from benchmarks.report.result_file import write_report
from optimist.cli.shared_options import (
    console,
    load_or_exit,
    usage_error,
)
from optimist.configuration import (
    default_configuration,
)
from optimist.offline.replay import SnapshotError, load_snapshot, run_replay, write_comparison
from optimist.settings import Settings

log = logging.getLogger("optimist")


def register(app: typer.Typer) -> None:
    """Joins `optimist` through the `optimist.commands` entry-point group."""
    app.command()(replay)


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
    configuration = load_or_exit(config) if config else default_configuration()
    with usage_error(ValueError):
        settings = Settings.from_configuration(
            configuration, shards=shards, redis_url=redis_url, ray_address=ray_address, seed=seed
        )
    for plugin in configuration.inactive if config else ():
        log.warning("inactive plugin: %s", plugin)
    with usage_error(SnapshotError):
        snap = load_snapshot(snapshot, settings.scheduler_names)
    run = run_replay(snap, settings)
    for error in run.report["errors"]:
        typer.echo(f"error: {error}", err=True)
    console.print(_replay_table(run.report))
    if placements:
        write_comparison(run, placements)
    if report:
        write_report(report, run.report)
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
