"""`optimist bench` on the simulated cluster (`--cluster sim`, the default)."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import replace
from typing import NoReturn

import typer
from rich.markup import escape

from benchmarks.chaos import FAULTS, ChaosError, ChaosPlan
from benchmarks.commands.bench_options import SimulatedFlags
from benchmarks.commands.bench_tables import explained, summary_table, sweep_table
from benchmarks.report.bench_report import BenchReport, SweepReport
from benchmarks.report.cluster_files import Run, write_placements, write_state
from benchmarks.report.pages import write_html
from benchmarks.report.result_file import write_report
from benchmarks.simulated.sim_bench import (
    BenchRun,
    Plan,
    run_bench,
)
from benchmarks.sweeps.bench_sweep import SweepError, parse_sweep, run_sweep
from optimist.cli.shared_options import (
    console,
    load_or_exit,
    refuse,
    resources_or_exit,
    usage_error,
)
from optimist.configuration import default_configuration
from optimist.explain import Explainer
from optimist.metrics.definitions import SchedulerMetrics
from optimist.metrics.recorder import LoopMetrics
from optimist.metrics.server import MetricsServer
from optimist.profiling import Profiler
from optimist.runtime import PlacementError
from optimist.settings import Settings

log = logging.getLogger("optimist")


def bench_simulated(f: SimulatedFlags) -> NoReturn:
    """The workloads on the platform with the simulated cluster: once, once per value of
    a setting (--sweep), or with the metrics served while it runs."""
    if f.profiling_endpoint and (f.profile or not f.metrics_address):
        refuse(
            "--profiling-endpoint needs --metrics-address, and takes its profiles "
            "instead of --profile's"
        )
    faults = f.chaos_plan(FAULTS)
    if faults and f.sweep:
        refuse("--chaos: not with --sweep (each run would see other faults)")
    settings = _settings(f)
    plan = f.plan()
    run: BenchRun[BenchReport] | BenchRun[SweepReport]
    with usage_error(SweepError, ChaosError, PlacementError):
        if f.sweep:
            run = run_sweep(
                settings,
                plan,
                *parse_sweep(f.sweep),
                show_progress=f.progress,
                cpu_affinity=f.cpu_affinity,
            )
        elif f.metrics_address:
            run = _serving_metrics(f, f.metrics_address, settings, plan, faults)
        else:
            run = run_bench(
                settings,
                plan,
                show_progress=f.progress,
                cpu_affinity=f.cpu_affinity,
                profile_dir=f.profile,
                chaos=faults,
                explain_every_s=f.explain_every,
            )
    if not f.metrics_address or f.sweep:
        _show(f, run)
    raise typer.Exit(0 if run.ok else 1)


def _settings(f: SimulatedFlags) -> Settings:
    """The configuration file's settings with the flags over them; exit 2 where they do
    not go together."""
    configuration = load_or_exit(f.config) if f.config else default_configuration()
    with usage_error(ValueError):
        settings = Settings.from_configuration(
            configuration,
            shards=f.shards,
            redis_url=f.redis_url,
            ray_address=f.ray_address,
            batch_pods=f.batch_pods,
            seed=f.seed,
        )
        settings = replace(settings, conflict_mode=f.conflict_mode, candidates=f.candidates)
        if f.shard_resource:
            settings = replace(settings, shard_resources=resources_or_exit(f.shard_resource))
        if f.node_partitions is not None:
            settings = replace(settings, node_partitions=f.node_partitions)
        if f.redis_partitions is not None:
            settings = replace(settings, redis_partitions=f.redis_partitions)
        if f.binders is not None:
            settings = replace(settings, binders=f.binders)
    if f.config:
        for plugin in configuration.inactive:
            log.warning("inactive plugin: %s", plugin)
    return settings


def _show(f: SimulatedFlags, run: BenchRun[BenchReport] | BenchRun[SweepReport]) -> None:
    """The summary and the files asked for, at once: a script reading stdout (or waiting
    for a file) knows the run is over, even while metrics linger."""
    report = run.report
    bench = report if isinstance(report, BenchReport) else None  # a sweep's has no cases
    console.print(sweep_table(report) if isinstance(report, SweepReport) else summary_table(report))
    if f.html:
        write_html(report.model_dump(), f.html)
    if f.placements:
        placed: dict[Run, dict[str, str]] = {
            (name,): cluster.bindings for name, cluster in run.clusters.items()
        }
        write_placements(f.placements, placed, ("case",))
    if f.save_state:
        write_state(f.save_state, run.cluster)
    if f.report:
        write_report(f.report, report)
    # a run's name may hold brackets (`CaseWorkload.name`): text, never markup
    for case in bench.cases if bench else []:
        if case.explain:
            console.print(escape(explained(case.name, case.explain)))
    for warning in bench.warnings if bench else []:
        console.print(f"[yellow]warning:[/yellow] {escape(warning)}")
    for violation in report.invariant_violations:
        console.print(f"[red]invariant violated:[/red] {escape(violation)}")
    for error in report.errors:
        console.print(f"[red]case failed:[/red] {escape(error)}")
    console.file.flush()


def _serving_metrics(
    f: SimulatedFlags, address: str, settings: Settings, plan: Plan, chaos: ChaosPlan | None
) -> BenchRun[BenchReport]:
    """`run_bench` with the platform's metrics served on `address` (ready while it runs),
    and for --linger seconds after, so that a scraper collects the final values; the run
    is shown before that."""
    metrics = SchedulerMetrics()
    profiler = Profiler() if f.profiling_endpoint else None
    running = threading.Event()
    running.set()
    explainer = Explainer(settings.scheduler_names)
    with MetricsServer(
        metrics, address, ready=running.is_set, profiler=profiler, explainer=explainer
    ) as server:
        log.info("serving metrics on http://%s/metrics", server.address)
        run = run_bench(
            settings,
            plan,
            show_progress=f.progress,
            cpu_affinity=f.cpu_affinity,
            metrics=LoopMetrics(metrics, node_partitions=settings.node_partition_count),
            profile_dir=f.profile,
            profiler=profiler,
            chaos=chaos,
            explainer=explainer,
            explain_every_s=f.explain_every,
        )
        running.clear()
        _show(f, run)
        time.sleep(f.linger)
    return run
