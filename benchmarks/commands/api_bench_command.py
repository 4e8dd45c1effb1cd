"""`optimist bench --cluster apiserver` (or `kwok`): the workloads through a real API
server, one scheduler or two side by side."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NoReturn

import typer
from rich.markup import escape
from rich.table import Table

from benchmarks.apiserver.api_bench import BENCHED, ApiBench, run_apiserver_bench
from benchmarks.apiserver.plane_faults import OPTIMIST_ONLY
from benchmarks.chaos import LIVING_FAULTS, PLANE_FAULTS, ChaosPlan
from benchmarks.commands.bench_options import ApiServerFlags
from benchmarks.commands.bench_tables import chaos_rows
from benchmarks.controlplane.control_plane import ControlPlaneMissing, binaries
from benchmarks.controlplane.releases import UnknownRelease
from benchmarks.report.api_report import ApiBenchReport, ApiRunReport
from benchmarks.report.cluster_files import write_placements, write_state
from benchmarks.report.instruments import comparison_rows
from benchmarks.report.pages import write_html
from benchmarks.report.result_file import write_report
from benchmarks.simulated.sim_bench import progress_bar
from optimist.cli.shared_options import console, load_or_exit, refuse
from optimist.offline.simulator import SimulatedCluster


@dataclass
class KeptClusters:
    """Of each run's cluster as the server held it at the end, what the files asked for
    need: its bindings (--placements) and the last cluster whole (--save-state); no
    more, since a run's cluster may hold a hundred thousand pods."""

    placed: dict[tuple[str, ...], dict[str, str]] = field(default_factory=dict)
    last: SimulatedCluster | None = None

    def __call__(self, run: tuple[str, str, str], cluster: SimulatedCluster) -> None:
        self.placed[run] = dict(cluster.bindings)
        self.last = cluster


def bench_apiserver(f: ApiServerFlags, *, living: bool) -> NoReturn:
    """The workloads through a real API server (`living`: with kube-controller-manager
    and KWOK's nodes), with one scheduler or (--compare) two side by side."""
    schedulers = (f.scheduler, *(f.compare or ()))
    for name in schedulers:
        if name not in BENCHED:
            refuse(f"{name!r}: the schedulers are {', '.join(BENCHED)}")
    if len(set(schedulers)) < len(schedulers):
        refuse(f"--compare {' '.join(f.compare or ())}: a scheduler named twice")
    if f.config:
        load_or_exit(f.config)
    try:
        binaries(f.kube_version)  # kube-scheduler, and the control plane unless one is given
    except (ControlPlaneMissing, UnknownRelease) as e:
        refuse(str(e))
    chaos = _chaos(f, living)
    plan = f.plan()
    bench = ApiBench(
        schedulers,
        f.rounds,
        f.shards or 2,
        f.config,
        f.kubeconfig,
        plan.timeout_s,
        f.seed or 0,
        living,
        f.kube_version,
        f.ceiling_pods,
        chaos,
        f.ray_address,
    )
    with progress_bar(f.progress) as bar:

        def callback(label: str) -> Callable[[int, int], None]:
            task = bar.add_task(label, total=None) if bar else None

            def update(done: int, total: int) -> None:
                if bar is not None and task is not None:
                    bar.update(task, completed=done, total=total)

            return update

        kept = KeptClusters()
        wanted = f.placements or f.save_state
        result = run_apiserver_bench(bench, plan, callback, kept if wanted else None)
    _show(f, result)
    if f.placements:
        write_placements(f.placements, kept.placed, ("case", "scheduler", "round"))
    if f.save_state and kept.last is not None:
        write_state(f.save_state, kept.last)
    ok = not result.errors and not result.invariant_violations
    raise typer.Exit(0 if ok else 1)


def _chaos(f: ApiServerFlags, living: bool) -> ChaosPlan | None:
    """--chaos through an API server (`living`: with KWOK's nodes); exit 2 where its faults
    have nothing to go into."""
    chaos = f.chaos_plan(LIVING_FAULTS if living else PLANE_FAULTS)
    if chaos and f.kubeconfig:
        refuse("--chaos: not with --kubeconfig (its faults go into a server started here)")
    if chaos and f.ray_address and (own := [k for k in chaos.faults if k in OPTIMIST_ONLY]):
        refuse(
            f"--chaos {','.join(own)}: not with --ray-address (its targets are the processes "
            "of optimist's own Ray)"
        )
    return chaos


def _show(f: ApiServerFlags, result: ApiBenchReport) -> None:
    """The tables, the files asked for, and what went wrong."""
    for table in apiserver_tables(result):
        console.print(table)
    if f.report:
        write_report(f.report, result)
    if f.html:
        write_html(result.model_dump(), f.html)
    for r in result.runs:
        for warning in r.warnings:
            where = escape(f"{r.name} [{r.scheduler}]")
            console.print(f"[yellow]warning:[/yellow] {where}: {warning}")
    for violation in result.invariant_violations:
        console.print(f"[red]invariant violated:[/red] {escape(violation)}")
    for error in result.errors:
        console.print(f"[red]case failed:[/red] {escape(error)}")


def apiserver_tables(result: ApiBenchReport) -> list[Table]:
    """One table per workload, a column per scheduler (`instruments.comparison_rows`)."""
    ceiling = result.ceiling_pods_per_s.median if result.ceiling_pods_per_s else None
    tables = []
    for entry in result.cases:
        table = Table(title=escape(entry.name), title_justify="left")
        table.add_column("through a real kube-apiserver")
        for name in entry.schedulers:
            table.add_column(name, justify="right")
        for label, cells in comparison_rows(entry, ceiling):
            table.add_row(label, *cells)
        tables.append(table)
    for run in result.runs:
        if isinstance(run, ApiRunReport) and run.chaos is not None:
            title = f"{run.name} [{run.scheduler}, round {run.round + 1}]: faults"
            table = Table(title=escape(title), title_justify="left")
            table.add_column("injected into the run")
            table.add_column("", justify="right")
            for label, value in chaos_rows(run.chaos):
                table.add_row(label, str(value))
            tables.append(table)
    return tables
