"""The `optimist` command line."""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import ray
import typer
import yaml
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from optimist import logs
from optimist.bench.apiserver import SCHEDULERS, ApiBench, run_apiserver_bench
from optimist.bench.case_file import PerfConfigError
from optimist.bench.simulated import (
    DEFAULT_TIMEOUT_S,
    UPSTREAM_NOTE,
    BenchRun,
    Plan,
    load_plan,
    progress_bar,
    run_bench,
    write_placements,
    write_state,
)
from optimist.bench.sweep import SweepError, parse_sweep, run_sweep
from optimist.chaos import DURATION_S, FAULTS, FAULTS_PER_KIND, ChaosError, ChaosPlan
from optimist.config import Settings
from optimist.configuration import (
    HANDLED_OUTSIDE_SHARDS,
    ConfigError,
    Configuration,
    default_configuration,
    load_file,
)
from optimist.controlplane import ControlPlaneMissing, binaries
from optimist.explain import Explainer, ExplainError, ask_endpoint
from optimist.explain_snapshot import explain_snapshot
from optimist.explain_view import page, terminal
from optimist.gpu_mix import parse_mix
from optimist.gpu_trace import (
    DEFAULT_TRACE_POLICY,
    SEVERAL_SHARDS_BATCH,
    SEVERAL_SHARDS_INFLIGHT,
    parse_seeds,
    replay_settings,
    replay_trace,
    write_trace_plot,
)
from optimist.gpu_trace_files import TraceError
from optimist.kube.client import KubeClient
from optimist.kube.lease import LeaseConfig
from optimist.lifetime import interrupts, start_reaper, unwind
from optimist.metrics import LoopMetrics, MetricsServer, SchedulerMetrics
from optimist.plots import write_html
from optimist.profiling import Profiler
from optimist.replay import SnapshotError, load_snapshot, run_replay, write_comparison
from optimist.report import comparison_rows, provenance
from optimist.runtime import PlacementError, RayStartError, init_ray
from optimist.service import Service
from shards.plugins.gpu_placement import POLICIES

# no locals in tracebacks: they would print what a user passed, secrets included
app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help=__doc__,
    pretty_exceptions_show_locals=False,
)
console = Console()
log = logging.getLogger("optimist")


def entry() -> None:
    """The `optimist` command: what it starts ends with it, however it ends
    (`optimist.lifetime`); a Ray that cannot start is one line saying what to do, not
    a traceback from inside Ray."""
    start_reaper()
    try:
        with interrupts(unwind):
            app()
    except RayStartError as e:
        typer.echo(f"error: {e}", err=True)
        raise SystemExit(1) from None


@app.callback()
def main(
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
    log_format: Annotated[
        str, typer.Option(help="text, or json: one object per line, the unit in its own field")
    ] = "text",
) -> None:
    """optimist: a parallel, optimistic-concurrency scheduler for Kubernetes."""
    try:
        logs.configure(log_format, verbose=verbose)
    except ValueError as e:
        typer.echo(f"error: --log-format: {e}", err=True)
        raise typer.Exit(2) from e


# --shard-resource, for every command that starts shards
ShardResources = Annotated[
    list[str] | None,
    typer.Option(
        help="a Ray resource each shard asks for, NAME or NAME=AMOUNT (repeatable): in "
        "a Ray cluster, shards go to the nodes that offer it [default: shardResources]"
    ),
]


@app.command()
def bench(
    cases: Annotated[
        Path | None,
        typer.Argument(
            dir_okay=False,
            help="case file in scheduler_perf's performance-config.yaml format "
            "[default: the shipped one, SchedulingBasic/5000Nodes_150000Pods]",
        ),
    ] = None,
    case: Annotated[str | None, typer.Option(help="run only this test case")] = None,
    workload: Annotated[
        str | None, typer.Option(help="run only this workload (NAME or CASE/NAME)")
    ] = None,
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
    nodes: Annotated[
        int | None, typer.Option(min=1, help="sets the param initNodes of every workload")
    ] = None,
    pods: Annotated[
        int | None, typer.Option(min=0, help="sets the param measurePods of every workload")
    ] = None,
    seed: Annotated[
        int | None, typer.Option(help="seed for names, tie-breaks and order [default: 0]")
    ] = None,
    redis_url: Annotated[
        str | None, typer.Option(help="redis://, rediss:// or unix:// (default: a private Redis)")
    ] = None,
    ray_address: Annotated[str | None, typer.Option(help="join this Ray cluster")] = None,
    shard_resource: ShardResources = None,
    redis_partitions: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="split the node store over this many private Redis servers "
            "[default: redisPartitions, else 1]",
        ),
    ] = None,
    batch_pods: Annotated[
        int | None,
        typer.Option(min=1, help="pods per batch sent to a shard [default: 512/shards, 64..256]"),
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
    timeout: Annotated[
        float, typer.Option(min=1, help="seconds a workload may take before it is stopped")
    ] = DEFAULT_TIMEOUT_S,
    placements: Annotated[
        Path | None, typer.Option(help="write namespace,pod,node CSV here")
    ] = None,
    explain_every: Annotated[
        float,
        typer.Option(
            min=0,
            help="explain a pod of the workload every SECONDS while it runs (every node "
            "described), and report what each took (explain in the JSON report)",
        ),
    ] = 0.0,
    save_state: Annotated[
        Path | None,
        typer.Option(
            help="write the cluster as the (last) workload left it, a snapshot for "
            "`optimist explain --snapshot` and `optimist replay`"
        ),
    ] = None,
    report: Annotated[Path | None, typer.Option(help="write the JSON report here")] = None,
    html: Annotated[Path | None, typer.Option(help="write an HTML page with charts here")] = None,
    sweep: Annotated[
        str | None,
        typer.Option(
            help="run once per value of one setting, e.g. shards=1,2,4,8 (also batch, "
            "candidates, conflict-mode, node-partitions, binders, percentageOfNodesToScore)"
        ),
    ] = None,
    node_partitions: Annotated[
        bool | None,
        typer.Option(help="each shard looks at its own slice of the nodes first"),
    ] = None,
    binders: Annotated[
        int | None,
        typer.Option(min=1, help="binders that commit: the driver's and actors beside it"),
    ] = None,
    cpu_affinity: Annotated[
        bool,
        typer.Option(
            "--cpu-affinity", help="pin each shard to a core of its own, to read its decision rate"
        ),
    ] = False,
    progress: Annotated[bool, typer.Option(help="show a progress bar")] = True,
    metrics_address: Annotated[
        str | None,
        typer.Option(
            help="serve /metrics, /healthz and /readyz on HOST:PORT during the run "
            "(127.0.0.1:10259 to stand where kube-scheduler would)"
        ),
    ] = None,
    linger: Annotated[
        float,
        typer.Option(min=0, help="with --metrics-address: keep serving SECONDS after the run"),
    ] = 0.0,
    profile: Annotated[
        Path | None,
        typer.Option(
            help="write CPU profiles (pstats) of the control process and of each shard, "
            "per workload, to this folder"
        ),
    ] = None,
    profiling_endpoint: Annotated[
        bool,
        typer.Option(
            help="with --metrics-address: serve /debug/profile?target=control|shard-N"
            "&seconds=S, a CPU profile (pstats) taken on demand, to loopback clients only"
        ),
    ] = False,
    chaos: Annotated[
        str | None,
        typer.Option(
            help="inject these faults at random while the run runs, comma-separated: "
            f"{', '.join(FAULTS)}; the report counts them (faults_injected) and times "
            "each recovery"
        ),
    ] = None,
    chaos_interval: Annotated[
        float | None,
        typer.Option(
            help="with --chaos: seconds between faults, on average [default: spread over "
            "the run's progress, so that a short run meets every kind]"
        ),
    ] = None,
    chaos_faults: Annotated[
        int | None,
        typer.Option(
            help=f"with --chaos: inject no more faults than this, per workload "
            f"[default: {FAULTS_PER_KIND} of each kind]"
        ),
    ] = None,
    chaos_duration: Annotated[
        float,
        typer.Option(
            help="with --chaos: no fault after this many seconds of a workload; the run "
            "then settles"
        ),
    ] = DURATION_S,
    cluster: Annotated[
        str,
        typer.Option(
            help="sim: optimist's in-process simulated cluster; apiserver: a real "
            "kube-apiserver and etcd (built by `make kube`), started for each workload, "
            "the pods made by this process and scheduled by another; kwok: the same with "
            "kube-controller-manager and KWOK's nodes, where pods turn Running and Ready"
        ),
    ] = "sim",
    scheduler: Annotated[
        str,
        typer.Option(
            help="with --cluster apiserver or kwok: the scheduler under test, optimist (`optimist "
            "run`) or kube-scheduler (upstream's v1.30)"
        ),
    ] = "optimist",
    compare: Annotated[
        str | None,
        typer.Option(
            help="with --cluster apiserver or kwok: kube-scheduler, to run it too on every "
            "workload and print the two side by side"
        ),
    ] = None,
    rounds: Annotated[
        int,
        typer.Option(
            min=1,
            help="with --cluster apiserver or kwok: run every workload this many times with each "
            "scheduler, alternating which goes first; figures are the medians",
        ),
    ] = 1,
    kubeconfig: Annotated[
        Path | None,
        typer.Option(
            dir_okay=False,
            exists=True,
            help="with --cluster apiserver: the API server this kubeconfig names, instead "
            "of one started for each workload; what a run makes there it removes after "
            "(no other scheduler may serve the profiles meanwhile)",
        ),
    ] = None,
) -> None:
    """Run scheduler_perf cases on a simulated cluster (or through a real API server) and
    report pods/s; exits 1 if any pod was lost or a case failed, 2 if the case file or the
    configuration is bad."""
    if cluster not in ("sim", "apiserver", "kwok"):
        typer.echo(f"error: --cluster {cluster!r}: sim, apiserver or kwok", err=True)
        raise typer.Exit(2)
    if cluster == "kwok" and kubeconfig:
        typer.echo("error: --kubeconfig: not with --cluster kwok (it starts its own)", err=True)
        raise typer.Exit(2)
    if cluster != "sim":
        given = [
            flag
            for flag, value in (
                ("--sweep", sweep), ("--chaos", chaos), ("--metrics-address", metrics_address),
                ("--redis-url", redis_url), ("--ray-address", ray_address),
                ("--profile", profile), ("--placements", placements),
            )
            if value
        ]  # fmt: skip
        if given:
            typer.echo(f"error: {', '.join(given)}: not with --cluster {cluster}", err=True)
            raise typer.Exit(2)
        _bench_apiserver(
            cases, case, workload, config, shards, nodes, pods, seed, timeout, report, html,
            scheduler, compare, rounds, kubeconfig, progress, living=cluster == "kwok",
        )  # fmt: skip
        return
    if compare or scheduler != "optimist" or rounds != 1:
        typer.echo(
            "error: --scheduler, --compare and --rounds go with --cluster apiserver or kwok",
            err=True,
        )
        raise typer.Exit(2)
    if profiling_endpoint and (profile or not metrics_address):
        typer.echo(
            "error: --profiling-endpoint needs --metrics-address, and takes its profiles "
            "instead of --profile's",
            err=True,
        )
        raise typer.Exit(2)
    with _usage_error(ChaosError):
        faults = (
            ChaosPlan.parse(chaos, chaos_interval, chaos_faults, chaos_duration) if chaos else None
        )
        if faults and sweep:
            raise ChaosError("--chaos: not with --sweep (each run would see other faults)")
    configuration = _load_or_exit(config) if config else default_configuration()
    with _usage_error(ValueError):  # settings that do not go together
        settings = Settings.from_configuration(
            configuration,
            shards=shards,
            redis_url=redis_url,
            ray_address=ray_address,
            batch_pods=batch_pods,
            seed=seed,
        )
    settings = replace(settings, conflict_mode=conflict_mode, candidates=candidates)
    if shard_resource:
        settings = replace(settings, shard_resources=_resources_or_exit(shard_resource))
    if node_partitions is not None:
        settings = replace(settings, node_partitions=node_partitions)
    with _usage_error(ValueError):
        if redis_partitions is not None:
            settings = replace(settings, redis_partitions=redis_partitions)
        if binders is not None:
            settings = replace(settings, binders=binders)
    if config:
        for plugin in configuration.inactive:
            log.warning("inactive plugin: %s", plugin)
    plan = _plan_or_exit(cases, case, workload, nodes, pods, timeout)

    def show(run: BenchRun) -> None:
        """The summary and the files asked for, at once: a script reading stdout (or
        waiting for a file) knows the run is over, even while metrics linger."""
        console.print(sweep_table(run.report) if sweep else summary_table(run.report))
        if html:
            write_html(run.report, html)
        if placements:
            write_placements(run, placements)
        if save_state:
            write_state(run, save_state)
        if report:
            write_report(report, run.report)
        # a run's name may hold brackets (`CaseWorkload.name`): text, never markup
        for case in run.report.get("cases", []):
            if "explain" in case:
                console.print(escape(_explained(case["name"], case["explain"])))
        for warning in run.report.get("warnings", []):
            console.print(f"[yellow]warning:[/yellow] {escape(warning)}")
        for violation in run.report["invariant_violations"]:
            console.print(f"[red]invariant violated:[/red] {escape(violation)}")
        for error in run.report.get("errors", []):
            console.print(f"[red]case failed:[/red] {escape(error)}")
        console.file.flush()

    with _usage_error(SweepError, ChaosError, PlacementError):
        if sweep:
            run = run_sweep(
                settings,
                plan,
                *parse_sweep(sweep),
                show_progress=progress,
                cpu_affinity=cpu_affinity,
            )
        elif metrics_address:
            run = _bench_serving_metrics(
                settings,
                plan,
                progress,
                cpu_affinity,
                metrics_address,
                linger,
                profile,
                Profiler() if profiling_endpoint else None,
                faults,
                explain_every,
                show,
            )
        else:
            run = run_bench(
                settings,
                plan,
                show_progress=progress,
                cpu_affinity=cpu_affinity,
                profile_dir=profile,
                chaos=faults,
                explain_every_s=explain_every,
            )
    if not metrics_address or sweep:
        show(run)
    raise typer.Exit(0 if run.ok else 1)


def write_report(path: Path, doc: dict[str, Any]) -> None:
    """A result file, with the command and the commit that made it."""
    path.write_text(json.dumps({**doc, **provenance(["optimist", *sys.argv[1:]])}, indent=2) + "\n")


def _bench_apiserver(
    cases: Path | None,
    case: str | None,
    workload: str | None,
    config: Path | None,
    shards: int | None,
    nodes: int | None,
    pods: int | None,
    seed: int | None,
    timeout: float,
    report: Path | None,
    html: Path | None,
    scheduler: str,
    compare: str | None,
    rounds: int,
    kubeconfig: Path | None,
    progress: bool,
    *,
    living: bool,
) -> None:
    """`optimist bench --cluster apiserver` (or `kwok`: a living cluster): the workloads
    through a real API server, with one scheduler or (--compare) two side by side."""
    schedulers = (scheduler, compare) if compare else (scheduler,)
    for name in schedulers:
        if name not in SCHEDULERS:
            typer.echo(f"error: {name!r}: the schedulers are {', '.join(SCHEDULERS)}", err=True)
            raise typer.Exit(2)
    if len(set(schedulers)) < len(schedulers):
        typer.echo(f"error: --compare {compare}: the same as --scheduler", err=True)
        raise typer.Exit(2)
    if config:
        _load_or_exit(config)
    try:
        binaries()  # kube-scheduler, and the control plane unless one is given
    except ControlPlaneMissing as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    plan = _plan_or_exit(cases, case, workload, nodes, pods, timeout)
    bench = ApiBench(
        schedulers, rounds, shards or 2, config, kubeconfig, plan.timeout_s, seed or 0, living
    )
    with progress_bar(progress) as bar:

        def callback(label: str) -> Callable[[int, int], None]:
            task = bar.add_task(label, total=None) if bar else None

            def update(done: int, total: int) -> None:
                if bar is not None and task is not None:
                    bar.update(task, completed=done, total=total)

            return update

        result = run_apiserver_bench(bench, plan, callback)
    for table in apiserver_tables(result):
        console.print(table)
    if report:
        write_report(report, result)
    if html:
        write_html(result, html)
    for r in result["runs"]:
        for warning in r["warnings"]:
            where = escape(f"{r['name']} [{r['scheduler']}]")
            console.print(f"[yellow]warning:[/yellow] {where}: {warning}")
    for violation in result["invariant_violations"]:
        console.print(f"[red]invariant violated:[/red] {escape(violation)}")
    for error in result["errors"]:
        console.print(f"[red]case failed:[/red] {escape(error)}")
    ok = not result["errors"] and not result["invariant_violations"]
    raise typer.Exit(0 if ok else 1)


def _plan_or_exit(
    cases: Path | None,
    case: str | None,
    workload: str | None,
    nodes: int | None,
    pods: int | None,
    timeout: float,
) -> Plan:
    """The workloads a bench runs, --nodes and --pods set in each; exit 2 naming what
    is wrong with the case file."""
    overrides = {
        name: value
        for name, value in (("initNodes", nodes), ("measurePods", pods))
        if value is not None
    }
    with _usage_error(PerfConfigError):
        return load_plan(
            cases, case=case, workload=workload, overrides=overrides, timeout_s=timeout
        )


def apiserver_tables(result: dict[str, Any]) -> list[Table]:
    """One table per workload, a column per scheduler (`report.comparison_rows`)."""
    ceiling = result["ceiling_pods_per_s"]["median"]
    tables = []
    for entry in result["cases"]:
        table = Table(title=escape(entry["name"]), title_justify="left")
        table.add_column("through a real kube-apiserver")
        for name in entry["schedulers"]:
            table.add_column(name, justify="right")
        for label, cells in comparison_rows(entry, ceiling):
            table.add_row(label, *cells)
        tables.append(table)
    return tables


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
    with _usage_error(ValueError):
        settings = Settings.from_configuration(configuration).public()
    settings.pop("profiles")
    typer.echo("optimist: " + ", ".join(f"{k}={v}" for k, v in settings.items()))


@contextmanager
def _usage_error(*errors: type[Exception]) -> Iterator[None]:
    """These errors are the user's (a bad file, flags that do not go together): their
    message, and exit 2, as a usage error does."""
    try:
        yield
    except errors as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from e


def _resources_or_exit(given: list[str]) -> dict[str, float]:
    """`--shard-resource NAME[=AMOUNT]`, each once or more; exits 2 naming a bad one."""
    out: dict[str, float] = {}
    for item in given:
        name, _, amount = item.partition("=")
        try:
            out[name] = float(amount or 1)
        except ValueError:
            out[name] = float("nan")
        if not name or not out[name] > 0:
            typer.echo(
                f"error: --shard-resource {item!r}: want NAME or NAME=AMOUNT, AMOUNT > 0",
                err=True,
            )
            raise typer.Exit(2)
    return out


def _load_or_exit(path: Path) -> Configuration:
    """The loaded file, or exit 2 with the problem, as a usage error does."""
    try:
        return load_file(path)
    except (ConfigError, OSError, UnicodeDecodeError) as e:
        typer.echo(f"error: {path}: {e}", err=True)
        raise typer.Exit(2) from e


def sweep_table(r: dict[str, Any]) -> Table:
    """One row per value of the swept setting: the figures to compare."""
    name = r["sweep"]["variable"]
    table = Table(title=f"optimist bench --sweep {name}")
    for column in (name, "pods/s avg", "p50 / p90 / p99", "attempts/pod", "conflicts/unit"):
        table.add_column(column, justify="right")
    for run in r["sweep"]["runs"]:
        t, x = run["report"]["throughput_pods_per_s"], run["report"]
        table.add_row(
            str(run["value"]),
            f"{t['average']:.0f}",
            f"{t['p50']:.0f} / {t['p90']:.0f} / {t['p99']:.0f}",
            f"{x['attempts_per_pod']:.3f}",
            f"{x.get('conflicts_per_committed_unit', 0.0):.3f}",
        )
    return table


def _bench_serving_metrics(
    settings: Settings,
    plan: Plan,
    progress: bool,
    cpu_affinity: bool,
    address: str,
    linger: float,
    profile_dir: Path | None,
    profiler: Profiler | None,
    chaos: ChaosPlan | None,
    explain_every_s: float,
    show: Callable[[BenchRun], None],
) -> BenchRun:
    """`run_bench` with the platform's metrics served on `address` (ready while it runs),
    and for `linger` seconds after, so that a scraper collects the final values; the run
    is shown before that."""
    metrics = SchedulerMetrics()
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
            show_progress=progress,
            cpu_affinity=cpu_affinity,
            metrics=LoopMetrics(metrics, partitions=settings.partitions),
            profile_dir=profile_dir,
            profiler=profiler,
            chaos=chaos,
            explainer=explainer,
            explain_every_s=explain_every_s,
        )
        running.clear()
        show(run)
        time.sleep(linger)
    return run


def _explained(case: str, probe: dict[str, Any]) -> str:
    """One line on what explaining pods mid-run took (`--explain-every`)."""
    waited, judged = probe["waited_s"], probe["judged_s"]
    if not waited["count"]:
        return f"{case}: explain: no call answered ({'; '.join(probe['errors']) or 'no pod yet'})"
    return (
        f"{case}: explain: {waited['count']} calls at {probe['nodes']} nodes; waited p50 "
        f"{waited['p50'] * 1000:.0f} ms, max {waited['max'] * 1000:.0f} ms; the shard judged "
        f"in p50 {judged['p50'] * 1000:.0f} ms, max {judged['max'] * 1000:.0f} ms"
    )


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


def _pair(figures: dict[str, Any], a: str, b: str) -> str:
    return f"{figures.get(a, 0)} / {figures.get(b, 0)}"


def _per_pod_redis(r: dict[str, Any]) -> str:
    trips, commands = r.get("redis_round_trips_per_pod", 0.0), r.get("redis_commands_per_pod", 0.0)
    return f"{trips:.3f} / {commands:.1f}"


def _waiting(r: dict[str, Any]) -> str:
    queue = r.get("queue") or {}
    if not queue.get("waiting_pods"):
        return "-"
    return f"{queue['attempts_per_waiting_pod']:.2f} ({queue['waiting_pods']} pods)"


def _preemptions(r: dict[str, Any]) -> str:
    figures = (r.get("queue") or {}).get("preemption") or {}
    return _pair(figures, "preemptions", "victims") if figures.get("attempts") else "-"


def _named(case: dict[str, Any]) -> str:
    """A workload's name as the tables show it; a failed one's says so, and names the
    op that stopped it where one did (its figures are what it measured until then)."""
    name = escape(case["name"])
    if not case["error"]:
        return name
    failed = case.get("failed")
    at = f" at op {failed['op']}, {failed['opcode']}" if failed else ""
    return f"{name} [red](failed{at})[/red]"


def summary_table(r: dict[str, Any]) -> Table:
    """One row per workload when several ran; else the figures of the one that did."""
    cases = r.get("cases", [])
    if len(cases) > 1:
        return _cases_table(cases, len(r["shards"]))
    name = f"{_named(cases[0])}: " if cases else ""
    t = r["throughput_pods_per_s"]
    table = Table(title=f"optimist bench: {name}{r['nodes']} nodes, {len(r['shards'])} shard(s)")
    table.add_column("figure")
    table.add_column("value", justify="right")
    rows = [
        ("pods created", r["pods_created"]),
        ("pods scheduled", r["pods_scheduled"]),
        ("pods unschedulable", r["pods_unschedulable"]),
        ("pods pending", r.get("pods_pending", 0)),
        ("conflicts", r["conflicts"]),
        ("attempts (pods sent to shards)", r["attempts"]),
        ("attempts per pod left unschedulable (all run)", _waiting(r)),
        ("preemptions / victims (all run)", _preemptions(r)),
        ("rollbacks (in shards / at commit)", _pair(r.get("rollbacks", {}), "shard", "commit")),
        ("Redis round trips / commands per pod", _per_pod_redis(r)),
        (
            "CPU per pod: driver / shards / redis / other",
            " / ".join(f"{us:.0f}" for us in r.get("cpu_us_per_pod", {}).values()) + " us",
        ),
        (
            "shards idle",
            " / ".join(
                f"{s['idle_fraction']:.0%}"
                for s in r["shards"]
                if s.get("idle_fraction") is not None
            ),
        ),
        ("duration", f"{r['duration_s']:.2f} s"),
        ("pods/s average", f"{t['average']:.0f}"),
        ("first decision, from the start of the command", _seconds(r.get("first_decision_s"))),
        ("pods/s p50 / p90 / p99", f"{t['p50']:.0f} / {t['p90']:.0f} / {t['p99']:.0f}"),
    ]
    latency = r.get("latency_s", {}).get("created_to_bound", {})
    if latency.get("count"):
        rows.append(
            (
                "created -> bound p50 / p90 / p99",
                f"{latency['p50']:.3f} / {latency['p90']:.3f} / {latency['p99']:.3f} s",
            )
        )
    for role, peak in r.get("memory_peak_bytes", {}).items():
        rows.append((f"peak RSS {role}", f"{peak / 2**20:.0f} MiB"))
    chaos = r.get("chaos") or {}
    for kind, rec in chaos.get("recovery_s", {}).items():
        rows.append(
            (
                f"chaos {kind}: injected / recovered; recovery median / max",
                f"{rec['count']} / {rec['recovered']}; "
                f"{_seconds(rec['median_s'])} / {_seconds(rec['max_s'])}",
            )
        )
    if chaos:
        rows.append(("chaos: pods tried again for the faults", chaos["retries"]))
        rows.append(("chaos: faults stopped by", chaos["stopped"]))
    if r.get("upstream_threshold"):
        rows.append((r["upstream_threshold"]["note"], r["upstream_threshold"]["pods_per_s"]))
    for label, value in rows:
        table.add_row(label, str(value))
    for reason, count in list(r["unschedulable_reasons"].items())[:5]:
        table.add_row(f"  {reason}", str(count))
    return table


def _cases_table(cases: list[dict[str, Any]], shards: int) -> Table:
    table = Table(title=f"optimist bench: {len(cases)} workloads, {shards} shard(s)")
    for column in ("workload", "nodes", "pods", "bound", "unsched.", "pending"):
        table.add_column(column, justify="left" if column == "workload" else "right")
    for column in ("pods/s avg", "p50 / p90 / p99", "upstream threshold*"):
        table.add_column(column, justify="right")
    for c in cases:
        t = c["throughput_pods_per_s"]
        threshold = c["upstream_threshold"]
        table.add_row(
            _named(c),
            str(c["nodes"]),
            str(c["pods_created"]),
            str(c["pods_scheduled"]),
            str(c["pods_unschedulable"]),
            str(c["pods_pending"]),
            f"{t['average']:.0f}",
            f"{t['p50']:.0f} / {t['p90']:.0f} / {t['p99']:.0f}",
            f"{threshold['pods_per_s']:.0f}" if threshold else "",
        )
    table.caption = f"* {UPSTREAM_NOTE}"
    return table


@app.command()
def run(
    config: Annotated[
        Path,
        typer.Option(
            dir_okay=False,
            help="KubeSchedulerConfiguration file, with an optional OptimistConfiguration "
            "document: the profiles to take over, leaderElection, clientConnection",
        ),
    ],
    kubeconfig: Annotated[
        Path | None,
        typer.Option(
            dir_okay=False,
            help="kubeconfig file [default: clientConnection.kubeconfig, else in-cluster]",
        ),
    ] = None,
    redis_url: Annotated[
        str | None,
        typer.Option(help="the node store: redis://, rediss:// or unix:// (shared by replicas)"),
    ] = None,
    ray_address: Annotated[str | None, typer.Option(help="join this Ray cluster")] = None,
    shards: Annotated[int | None, typer.Option(min=1, help="scheduler shards")] = None,
    shard_resource: ShardResources = None,
    metrics_address: Annotated[
        str | None,
        typer.Option(
            help="serve /metrics, /healthz and /readyz on HOST:PORT [default: the "
            "configuration's metricsAddress, else 127.0.0.1:10259]"
        ),
    ] = None,
    identity: Annotated[
        str | None, typer.Option(help="this replica's name in the lease [default: host_pid]")
    ] = None,
    profiling_endpoint: Annotated[
        bool, typer.Option(help="serve /debug/profile too, to loopback clients only")
    ] = False,
) -> None:
    """Schedule the pods of the configured profiles on a live cluster, until SIGTERM.

    With leaderElection.leaderElect (the default), replicas share a Lease: one schedules,
    the others wait to take over."""
    configuration = _load_or_exit(config)
    election = configuration.leader_election
    if election.leader_elect and election.resource_name == "kube-scheduler":
        typer.echo(
            "error: leaderElection.resourceName: 'kube-scheduler' is kube-scheduler's own "
            "lease; give optimist a lease of its own (resourceName: optimist)",
            err=True,
        )
        raise typer.Exit(2)
    with _usage_error(ValueError):
        settings = Settings.from_configuration(
            configuration, shards=shards, redis_url=redis_url, ray_address=ray_address
        )
    if shard_resource:
        settings = replace(settings, shard_resources=_resources_or_exit(shard_resource))
    connection = configuration.client_connection
    client = KubeClient.for_kubeconfig(
        str(kubeconfig or "") or connection.kubeconfig or None,
        qps=connection.qps,
        burst=connection.burst,
    )
    lease = (
        LeaseConfig(
            namespace=election.resource_namespace,
            name=election.resource_name,
            lease_duration_s=election.lease_duration.seconds,
            renew_deadline_s=election.renew_deadline.seconds,
            retry_period_s=election.retry_period.seconds,
        )
        if election.leader_elect
        else None
    )
    address = metrics_address or configuration.optimist.metrics_address or "127.0.0.1:10259"
    metrics = SchedulerMetrics()
    profiler = Profiler() if profiling_endpoint else None
    explainer = Explainer(settings.scheduler_names)
    service = Service(
        settings,
        client,
        identity or f"{socket.gethostname()}_{os.getpid()}",
        lease=lease,
        metrics=metrics,
        profiler=profiler,
        explainer=explainer,
    )
    # the port is taken before Ray starts: Ray's processes take ports of their own, and
    # a port in use fails here, at once, not after Ray is up
    server = MetricsServer(
        metrics, address, ready=service.ready.is_set, profiler=profiler, explainer=explainer
    )
    own_ray = init_ray(settings.ray_address)
    stop = threading.Event()
    with server, interrupts(lambda _: stop.set()):
        log.info("serving metrics on http://%s/metrics", server.address)
        try:
            service.run(stop)
        finally:
            if own_ray:
                ray.shutdown()


class Output(StrEnum):
    table = "table"
    json = "json"
    html = "html"


@app.command()
def explain(
    pod: Annotated[
        str | None, typer.Argument(help="NAMESPACE/NAME of a pod optimist holds or has bound")
    ] = None,
    manifest: Annotated[
        Path | None,
        typer.Option(
            exists=True,
            dir_okay=False,
            help="a pod manifest (YAML or JSON) to judge as if it were created now",
        ),
    ] = None,
    endpoint: Annotated[
        str,
        typer.Option(help="the metrics address of the optimist to ask (run, or bench)"),
    ] = "127.0.0.1:10259",
    snapshot: Annotated[
        Path | None,
        typer.Option(
            exists=True,
            dir_okay=False,
            help="judge against this snapshot (`kubectl get nodes,pods -A -o yaml`, or a "
            "bench's --save-state) instead of a running optimist",
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(dir_okay=False, help="with --snapshot: the KubeSchedulerConfiguration file"),
    ] = None,
    output: Annotated[Output, typer.Option("--output", "-o")] = Output.table,
    top: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="nodes to show per pod, best first [default: 10 in the "
            "table, every node in json and html]",
        ),
    ] = None,
) -> None:
    """Why a pod went where it went, or why it is still pending, plugin by plugin.

    Each Filter plugin's verdict over every node, each Score plugin's raw, normalized and
    weighted score on every feasible node, and the node the shard's own search chooses
    now, with its margin; for a pod not bound, where the queue holds it and what it
    waits for. Exits 1 if the pod cannot be explained (not found, or no optimist answers).
    """
    if (pod is None) == (manifest is None):
        typer.echo("error: name a pod (NAMESPACE/NAME) or give --manifest, one of them", err=True)
        raise typer.Exit(2)
    if config and not snapshot:
        typer.echo("error: --config goes with --snapshot (optimist runs with its own)", err=True)
        raise typer.Exit(2)
    shown = top if top is not None else (10 if output is Output.table else 0)
    body = None
    if manifest is not None:
        with _usage_error(yaml.YAMLError, OSError):
            body = yaml.safe_load(manifest.read_text())
    try:
        if snapshot:
            configuration = _load_or_exit(config) if config else default_configuration()
            with _usage_error(SnapshotError, ValueError):
                settings = Settings.from_configuration(configuration)
                found = explain_snapshot(snapshot, settings, pod or "", body, shown)
        else:
            found = ask_endpoint(endpoint, pod or "", body, shown)
    except ExplainError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1) from None
    if output is Output.json:
        typer.echo(json.dumps(found.to_json(), indent=2))
    elif output is Output.html:
        typer.echo(page(found))
    else:
        console.print(terminal(found, shown))


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
    with _usage_error(ValueError):
        settings = Settings.from_configuration(
            configuration, shards=shards, redis_url=redis_url, ray_address=ray_address, seed=seed
        )
    for plugin in configuration.inactive if config else ():
        log.warning("inactive plugin: %s", plugin)
    with _usage_error(SnapshotError):
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


def _seeds(text: str) -> list[int]:
    try:
        return parse_seeds(text)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None


@app.command("replay-gpu-trace")
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
    with _usage_error(TraceError):
        mix = parse_mix(resample) if resample else None
    own = init_ray(None)
    runs = []
    try:
        with _usage_error(TraceError):
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
    console.print(table)
    if report:
        doc = runs[0] if len(runs) == 1 else {"runs": runs}
        write_report(report, doc)
    if plot:
        write_trace_plot(runs, plot)
    violations = [v for r in runs for v in r["invariant_violations"]]
    for violation in violations:
        console.print(f"[red]invariant violated:[/red] {violation}")
    raise typer.Exit(1 if violations else 0)


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
