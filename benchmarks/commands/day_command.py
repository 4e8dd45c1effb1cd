"""`optimist day`: a day in a living cluster (`benchmarks.day`), a stream of workloads on
KWOK's nodes with kube-controller-manager, lived by optimist and, with --compare, by
kube-scheduler on a plane of its own: the same day, drawn from the same seed."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.markup import escape

from benchmarks.apiserver.api_bench import SCHEDULERS, api_server, scheduler
from benchmarks.apiserver.scheduler_processes import (
    metrics_url,
    scheduler_documents,
    scheduler_names,
)
from benchmarks.cases import day_file as shipped_day
from benchmarks.commands.bench_options import KubeVersion
from benchmarks.controlplane.control_plane import ControlPlaneMissing, binaries, free_port
from benchmarks.controlplane.living_plane import LivingPlane
from benchmarks.controlplane.releases import NEWEST, UnknownRelease
from benchmarks.day.day_file import load_day
from benchmarks.day.day_plan import DayPlan, plan_day
from benchmarks.day.day_report import DayFigures, DayReport, day_figures, day_table
from benchmarks.day.day_runner import DayRunner
from benchmarks.report.bench_report import Machine
from benchmarks.report.instruments import ProcessTree
from benchmarks.report.pages import write_html
from benchmarks.report.result_file import write_report
from optimist.cli.shared_options import console, load_or_exit, refuse
from optimist.configuration import ConfigError
from optimist.offline.provenance import machine

DAY = shipped_day()
# the PodGroup CRD (for the gangs) where the project's shared folder sits beside the checkout
SHARED_CRDS = Path(__file__).resolve().parents[3] / "shared" / "kubernetes" / "crds"


def register(app: typer.Typer) -> None:
    """Joins `optimist` through the `optimist.commands` entry-point group."""
    app.command()(day)


def day(
    day_file: Annotated[
        Path, typer.Argument(exists=True, dir_okay=False, help="the day file")
    ] = DAY,
    nodes: Annotated[int, typer.Option(min=3, help="KWOK nodes")] = 100,
    duration: Annotated[float, typer.Option(min=10, help="the day's length, seconds")] = 120.0,
    seed: Annotated[int, typer.Option(help="draws the day's workloads")] = 0,
    shards: Annotated[int, typer.Option(min=1, help="optimist's shards")] = 2,
    scheduler_name: Annotated[
        str, typer.Option("--scheduler", help="optimist or kube-scheduler")
    ] = "optimist",
    compare: Annotated[
        str | None, typer.Option(help="the other scheduler, on a day of its own")
    ] = None,
    config: Annotated[
        Path | None, typer.Option(dir_okay=False, exists=True, help="KubeSchedulerConfiguration")
    ] = None,
    crds: Annotated[
        Path | None,
        typer.Option(file_okay=False, help="CRDs to install (the PodGroup's, for the gangs)"),
    ] = None,
    check_every: Annotated[
        float, typer.Option(min=1, help="seconds between invariant checks")
    ] = 30.0,
    settle: Annotated[
        float, typer.Option(min=0, help="seconds the cluster gets to settle after the day")
    ] = 60.0,
    kube_version: KubeVersion = NEWEST,
    report: Annotated[Path | None, typer.Option(help="write the JSON result file here")] = None,
    html: Annotated[Path | None, typer.Option(help="write an HTML page with charts")] = None,
    logs: Annotated[
        Path | None,
        typer.Option(
            file_okay=False,
            help="keep every process's log here, a folder for each scheduler's day "
            "(the plane's folder goes when the day ends)",
        ),
    ] = None,
) -> NoReturn:
    """A day in a living cluster: Deployments scaled and rolled out, Jobs that finish, a
    gang, a DaemonSet, pods that never fit, a pool gone NotReady and back, a pool
    drained under disruption budgets. Watched each second (pods/s, queues, the oldest
    pending pod, conflicts) and checked for the invariants as it goes and at its end.
    Exits 1 on any violation or pod left pending unexplained."""
    schedulers = (scheduler_name, compare) if compare else (scheduler_name,)
    for name in schedulers:
        if name not in SCHEDULERS:
            refuse(f"{name!r}: the schedulers are {', '.join(SCHEDULERS)}")
    if compare == scheduler_name:
        refuse(f"--compare {compare}: the same as --scheduler")
    if config:
        load_or_exit(config)
    try:
        binaries(kube_version)
        the_day = load_day(day_file)
    except (ControlPlaneMissing, ConfigError, UnknownRelease) as e:
        refuse(str(e))
    names = scheduler_names(config)
    plan = plan_day(the_day, nodes, duration, seed, sorted(names)[0])
    crd_folder = crds or SHARED_CRDS
    crd_files = sorted(crd_folder.glob("*.yaml")) if crd_folder.is_dir() else []
    setting = (plan, config, names, shards, crd_files, check_every, settle, kube_version)
    lived = [live(name, *setting, logs / name if logs else None) for name in schedulers]
    result = DayReport(
        day=str(day_file), kubernetes=kube_version, nodes=nodes, duration_s=duration,
        seed=seed, shards=shards, happenings=plan.counts(), schedulers=lived,
        machine=Machine.model_validate(machine()),
    )  # fmt: skip
    console.print(day_table(result))
    for f in lived:
        for pod, waited_s in f.slowest:
            told = f.slowest_told.get(pod, "never told unschedulable")
            console.print(f"{f.scheduler}: {pod} waited {waited_s:.1f} s: {escape(told)}")
        for line in f.end.not_rolled_out:
            console.print(f"[yellow]{f.scheduler}: Deployment {escape(line)}[/yellow]")
    failed = _failures(lived)
    for line in failed:
        console.print(f"[red]{escape(line)}[/red]")
    if report:
        write_report(report, result)
    if html:
        write_html(result.model_dump(mode="json"), html)
    raise typer.Exit(1 if failed else 0)


def live(
    name: str,
    plan: DayPlan,
    config: Path | None,
    names: frozenset[str],
    shards: int,
    crds: list[Path],
    check_every_s: float,
    settle_s: float,
    kube_version: str,
    logs: Path | None,
) -> DayFigures:
    """The day, with the scheduler `name` on a living plane of its own (every process's
    log copied to `logs` at its end, the scheduler's whole)."""
    port = free_port()
    with api_server(None, living=True, version=kube_version) as server:
        plane = server.plane
        assert isinstance(plane, LivingPlane)
        for crd in crds:  # before the scheduler starts: its informers look for them once
            plane.install_crd(crd)
        try:
            with scheduler(name, server, scheduler_documents(config), names, shards, port) as pid:
                meters = {
                    "scheduler": ProcessTree(pid),
                    **server.meters(),
                    "client": ProcessTree(os.getpid(), descendants=False),
                }
                runner = DayRunner(
                    plan, plane, server.client, name, meters, metrics_url(name, port), names,
                    check_every_s=check_every_s, settle_s=settle_s,
                    explain_address=f"127.0.0.1:{port}" if name == "optimist" else "",
                    progress=lambda line: console.print(escape(line)),
                )  # fmt: skip
                return day_figures(runner.run(), plan.duration_s)
        finally:  # the scheduler has stopped: its log is whole
            if logs:
                logs.mkdir(parents=True, exist_ok=True)
                for log in server.folder.glob("*.log"):
                    shutil.copyfile(log, logs / log.name)


def _failures(lived: list[DayFigures]) -> list[str]:
    out = []
    for f in lived:
        for v in [*f.violations_during, *f.violations_at_end, *f.placed_on_closed_nodes]:
            out.append(f"{f.scheduler}: {v}")
        out += [f"{f.scheduler}: pod {pod} left pending, unexplained" for pod in f.end.unexplained]
    return out
