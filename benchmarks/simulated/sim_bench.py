"""`optimist bench`: run scheduler_perf-style cases through the real platform and measure them.

Each workload of a case runs on a platform of its own (fresh shards, a
cleared store), with the ops of `benchmarks/simulated/sim_runner.py`. Its measured phase
is what its `collectMetrics` ops (or start/stopCollectingMetrics) span; the
invariant checker runs on every workload before it is reported. Without a
case file, the run is the shipped SchedulingBasic case.
"""

from __future__ import annotations

import cProfile
import os
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Generic, TypeVar

import psutil
import ray
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from benchmarks.cases import CASE_FILE_NAME, case_file, cases_file, template
from benchmarks.cases.case_fields import PerfConfigError
from benchmarks.cases.case_file import CaseWorkload
from benchmarks.cases.case_ops import (
    Barrier,
    CreateNodes,
    CreatePods,
    StartCollectingMetrics,
    StopCollectingMetrics,
)
from benchmarks.cases.op_walker import CaseError
from benchmarks.chaos import ChaosPlan
from benchmarks.report import instruments
from benchmarks.report.bench_report import (
    AllPods,
    BenchReport,
    CaseReport,
    ChaosFigures,
    ExplainFigures,
    Latency,
    Machine,
    Preemption,
    QueueFigures,
    RayNode,
    Rollbacks,
    ShardFigures,
    SweepReport,
    Threshold,
    Throughput,
)
from benchmarks.simulated import platform_faults
from benchmarks.simulated.explain_probe import ExplainProbe
from benchmarks.simulated.pooled_figures import decision_rate, idle_fraction, pooled
from benchmarks.simulated.sim_runner import CaseOutcome, CaseRunner
from dispatcher.dispatcher import Dispatcher
from optimist.configuration import load_file
from optimist.explain import Explainer
from optimist.metrics.recorder import LoopMetrics
from optimist.offline import provenance
from optimist.offline.invariants import check_invariants
from optimist.offline.quality import cluster_quality
from optimist.offline.simulator import SimulatedCluster, load_template
from optimist.profiling import Profiler
from optimist.runtime import Platform, init_ray
from optimist.settings import Settings
from shards.shard_actor import ShardInfo

UPSTREAM_NOTE = "published upstream threshold, other hardware"
GATED = "SchedulingGated"  # how the dispatcher reports a pod its gates hold back
DEFAULT_RUN = "SchedulingBasic/5000Nodes_150000Pods"
DEFAULT_TIMEOUT_S = 1800.0


@dataclass(frozen=True, slots=True)
class Workload:
    """A SchedulingBasic-like run: `nodes` nodes, then `pods` pods measured, one template each."""

    nodes: int
    pods: int
    node_template: Path
    pod_template: Path

    def case(self) -> CaseWorkload:
        """Measured from the first pod made until nothing is left to try: pods no node can
        take are an outcome of such a run, not its failure (a createPods op that waits
        for every pod, as upstream's do, would fail on them)."""
        ops = (
            CreateNodes(self.nodes, load_template(self.node_template)),
            StartCollectingMetrics(),
            CreatePods(self.pods, load_template(self.pod_template), "default", skip_wait=True),
            Barrier(),
            StopCollectingMetrics(),
        )
        return CaseWorkload("SchedulingBasic", f"{self.nodes}Nodes_{self.pods}Pods", ops)


@dataclass(frozen=True, slots=True)
class Plan:
    """The workloads one `optimist bench` runs, in order, and how long each may take."""

    runs: tuple[CaseWorkload, ...]
    timeout_s: float = DEFAULT_TIMEOUT_S


def load_plan(
    path: Path | None,
    *,
    case: str | None = None,
    workload: str | None = None,
    label_filter: str = "",
    overrides: dict[str, Any] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> Plan:
    """The runs a case file (the shipped one if None), or every case file under a folder
    (a newer release's scheduler_perf, split by area), and `--case`/`--workload`/
    `--label-filter` pick.

    With no file and no selection, the run is `DEFAULT_RUN`; PerfConfigError for a bad
    file or a selection that matches nothing.
    """
    if path is None and case is None and workload is None and not label_filter:
        workload = DEFAULT_RUN
    path = path or cases_file()
    files = sorted(path.rglob(CASE_FILE_NAME)) if path.is_dir() else [path]
    if not files:
        raise PerfConfigError(f"{path}: no {CASE_FILE_NAME} under this folder")
    node = template("node-default.yaml")
    runs = [run for file in files for run in case_file.load(file, node, overrides)]
    return Plan(tuple(case_file.select(runs, case, workload, label_filter)), timeout_s)


# scheduler_perf's guidance: a throughput taken over less is noise
MEASURED_AT_LEAST_S = 10.0


# a run's report: one run's, or a sweep's of several
Report = TypeVar("Report", BenchReport, SweepReport)


@dataclass(slots=True)
class BenchRun(Generic[Report]):
    report: Report
    clusters: dict[str, SimulatedCluster]

    @property
    def ok(self) -> bool:
        return not self.report.invariant_violations and not self.report.errors

    @property
    def cluster(self) -> SimulatedCluster:
        """The cluster of the last workload run (the only one, for a single workload)."""
        return list(self.clusters.values())[-1]


def run_bench(
    settings: Settings,
    workload: Workload | Plan,
    *,
    show_progress: bool = False,
    cpu_affinity: bool = False,
    metrics: LoopMetrics | None = None,
    profile_dir: Path | None = None,
    profiler: Profiler | None = None,
    chaos: ChaosPlan | None = None,
    explainer: Explainer | None = None,
    explain_every_s: float = 0.0,
    began: float | None = None,
) -> BenchRun[BenchReport]:
    """Run every workload of the plan; with `profile_dir`, write a CPU profile of the
    control process and of each shard per workload there (pstats files); with a
    `profiler`, take profiles whenever it is asked to, while workloads run; with
    `chaos`, inject its faults while they run; with `explain_every_s`, explain a pod of
    the workload that often while it runs (`ExplainProbe`). A workload's first decision
    is timed from when it began (`began`, a perf_counter reading, for the first; None:
    the command's start, Ray's included)."""
    if chaos:
        platform_faults.check(chaos, settings.binders, own_redis=settings.private_redis)
    if explain_every_s and explainer is None:
        explainer = Explainer(settings.scheduler_names)
    plan = Plan((workload.case(),)) if isinstance(workload, Workload) else workload
    cases: list[CaseReport] = []
    clusters: dict[str, SimulatedCluster] = {}
    versions: dict[str, str] = {}
    own_ray = init_ray(settings.ray_address)  # once for every workload, not once each
    platforms = Platforms(fresh_each=chaos is not None, cpu_affinity=cpu_affinity)
    with progress_bar(show_progress) as bar, _closing_ray(own_ray), platforms:
        for i, run in enumerate(plan.runs):
            started = began if i == 0 else time.perf_counter()
            task = bar.add_task(run.name, total=None) if bar else None

            def progress(done: int, total: int, task: Any = task) -> None:
                if bar is not None:
                    bar.update(task, completed=done, total=total)

            platform = platforms.for_workload(case_settings(settings, run))
            runner = CaseRunner(
                run,
                platform,
                seed=settings.seed,
                timeout_s=plan.timeout_s,
                progress=progress,
                metrics=metrics,
                profiler=profiler,
                chaos=chaos,
                explainer=explainer,
            )
            probe = (
                ExplainProbe(explainer, runner.pod_keys, explain_every_s, settings.seed)
                if explainer and explain_every_s
                else None
            )
            try:
                with _profiled(platform, profile_dir, run.name), probe or nullcontext():
                    outcome = runner.execute()
            finally:
                if profiler:
                    profiler.detach()
                if explainer:
                    explainer.detach()
            platform.locate_shards()  # a shard whose Ray node was lost runs elsewhere
            explained = probe.summary() if probe else None
            cases.append(case_report(outcome, platform, started, explained))
            versions = versions or provenance.versions(platform.store.client.info("server"))
            clusters[run.name] = outcome.cluster
    injected = Counter[str]()
    for c in cases:
        injected.update(c.chaos.faults_injected if c.chaos else {})
    report = BenchReport(
        pooled=pooled(cases) if len(cases) != 1 else None,
        faults_injected=dict(injected) if chaos else None,
        cases=cases,
        errors=[c.error for c in cases if c.error],
        seed=settings.seed,
        config=settings.public(),
        machine=Machine(**provenance.machine()),
        versions=versions,
    )
    return BenchRun(report, clusters)


class Platforms:
    """The platform each workload runs on. Workloads in a row that ask for the same
    settings share one: the store is emptied and the shards start over, knowing
    nothing, on the processes already running (a second or so saved per workload, of
    what a plan of thirty small ones spent mostly starting processes). Under chaos
    each gets new processes, as the faults may have left the last ones in any state."""

    def __init__(self, fresh_each: bool, cpu_affinity: bool) -> None:
        self.fresh_each, self.cpu_affinity = fresh_each, cpu_affinity
        self.current: Platform | None = None

    def for_workload(self, settings: Settings) -> Platform:
        if self.current is not None and not self.fresh_each and self.current.settings == settings:
            self.current.start_over()
            return self.current
        self.close()
        platform = self.current = Platform(settings).__enter__()
        if self.cpu_affinity:
            pin_shards(platform.shard_info)
        platform.store.clear()
        return platform

    def close(self) -> None:
        if self.current is not None:
            self.current.__exit__()
            self.current = None

    def __enter__(self) -> Platforms:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def case_settings(settings: Settings, run: CaseWorkload) -> Settings:
    """The run's settings, with the case's own profiles where it names a scheduler
    configuration (`schedulerConfigPath`): they replace the run's for that case."""
    if run.scheduler_config is None:
        return settings
    profiles = Settings.from_configuration(load_file(run.scheduler_config)).profiles
    return replace(settings, profiles=profiles)


@contextmanager
def _profiled(platform: Platform, directory: Path | None, name: str) -> Iterator[None]:
    """cProfile on the control process and on every shard while the block runs; the
    profiles go to `directory` as <workload>.driver.prof and <workload>.shard-<i>.prof."""
    if directory is None:
        yield
        return
    directory.mkdir(parents=True, exist_ok=True)
    stem = name.replace("/", "_")
    ray.get([shard.start_profile.remote() for shard in platform.shards])
    driver = cProfile.Profile()
    driver.enable()
    try:
        yield
    finally:
        driver.disable()
        driver.dump_stats(directory / f"{stem}.driver.prof")
        stopped: list[ray.ObjectRef[bytes]] = [s.stop_profile.remote() for s in platform.shards]
        for i, stats in enumerate(ray.get(stopped)):
            (directory / f"{stem}.shard-{i}.prof").write_bytes(stats)


def pin_shards(shard_info: list[ShardInfo]) -> None:
    """Each shard on this machine to a core of its own, round robin (`--cpu-affinity`):
    a shard's decision rate without its neighbours' share of the core. Notes the core
    in the shard's info for the report."""
    here = ray.get_runtime_context().get_node_id()
    cores = sorted(psutil.Process().cpu_affinity() or range(os.cpu_count() or 1))
    local = [info for info in shard_info if info["ray_node_id"] == here]
    for i, info in enumerate(local):
        core = cores[i % len(cores)]
        psutil.Process(int(info["pid"])).cpu_affinity([core])
        info["core"] = core


def case_report(
    outcome: CaseOutcome,
    platform: Platform,
    began: float | None = None,
    explained: dict[str, Any] | None = None,
) -> CaseReport:
    """The figures of one workload: its measured phase, and the whole run where so named;
    its first decision timed from when it `began` (None: the command's start); with
    `explained`, what explaining its pods took (`ExplainProbe.summary`)."""
    run, loop = outcome.run, outcome.loop
    stats = loop.dispatcher.stats
    measured, unschedulable, gated = _pods_of_phase(outcome)
    samples, rates, scheduled = instruments.phase_samples(outcome.windows, outcome.bound_at)
    duration = sum(w.end - w.start for w in outcome.windows)
    created = len(measured)
    c = perf_counters(outcome)
    cpu = cpu_s(outcome)
    first_decision = _first_decision(outcome, began)
    throughput = Throughput(**instruments.throughput(scheduled, duration, rates))
    return CaseReport(
        name=run.name,
        case=run.case,
        workload=run.workload,
        params=run.params,
        overrides=run.overrides,
        labels=list(run.labels),
        feature_gates=run.feature_gates,
        **ending(run, outcome.error, outcome.failure, throughput.average),
        nodes=len(outcome.cluster.nodes),
        pods_created=created,
        pods_scheduled=scheduled,
        pods_unschedulable=len(unschedulable),
        pods_pending=created - scheduled - len(unschedulable),
        unschedulable_reasons=provenance.reason_counts(unschedulable),
        all_pods=AllPods(
            created=outcome.made,
            bound=len(outcome.cluster.bindings),
            unschedulable=len(outcome.unschedulable) - len(gated),
            gated=len(gated),
            deleted=outcome.deleted,
        ),
        conflicts=c["conflicts"],
        committed_units=c["committed_units"],
        committed_pods=c["committed_pods"],
        store_commits=c["store_commits"],
        redis_commands=c["redis_commands"],
        redis_round_trips=c["redis_round_trips"],
        attempts=c["attempts"],
        attempts_per_pod=c["attempts"] / created if created else 0.0,
        conflicts_per_committed_unit=c["conflicts"] / c["committed_units"]
        if c["committed_units"]
        else 0.0,
        binder_batch_pods=c["committed_pods"] / c["store_commits"] if c["store_commits"] else 0.0,
        # CPU seconds of each role over the phase, and per pod created in it; "other" is
        # the rest of the machine (Ray's daemons, the bench's own sampling, anything else)
        cpu_s=cpu,
        cpu_us_per_pod={role: s * 1e6 / created for role, s in cpu.items()} if created else {},
        # calls to Redis from every role; the commands Redis ran for them, scripts' included
        redis_round_trips_per_pod=c["redis_round_trips"] / created if created else 0.0,
        redis_commands_per_pod=c["redis_commands"] / created if created else 0.0,
        rollbacks=Rollbacks(
            total=c["shard_rollbacks"] + c["commit_rollbacks"],
            shard=c["shard_rollbacks"],
            commit=c["commit_rollbacks"],
        ),
        conflict_backoffs=stats.conflict_backoffs,
        bind_failures=stats.bind_failures,
        shard_failures=loop.faults.shard_failures,
        shard_restarts=loop.faults.shard_restarts,
        binder_failures=loop.faults.binder_failures,
        # Redis away or lost, and the rebuilds of the store from the cluster (seconds each)
        store_outages=loop.faults.store_outages,
        store_rebuilds_s=loop.faults.store_rebuilds,
        # batches each binder committed over the whole run: 0 the driver's, then the actors
        binder_batches=loop.commits.by_binder,
        extender_errors=stats.extender_errors,
        cross_pod_refusals=loop.binder.guard.refused,
        queue=queue_figures(loop.dispatcher),
        duration_s=duration,
        first_decision_s=first_decision,
        throughput_pods_per_s=throughput,
        throughput_samples=samples,
        latency_s=stage_latencies(outcome, measured),
        memory_peak_bytes=outcome.memory,
        quality=cluster_quality(outcome.cluster),
        upstream_threshold=Threshold(pods_per_s=run.threshold, note=UPSTREAM_NOTE)
        if run.threshold is not None
        else None,
        shards=shard_figures(outcome, platform, duration),
        notes=outcome.notes,
        invariant_violations=check_invariants(
            outcome.cluster, outcome.unschedulable, platform.store
        )[:100],
        chaos=ChaosFigures.model_validate(outcome.chaos) if outcome.chaos else None,
        warnings=case_warnings(
            duration, first_decision, outcome.chaos, failed=outcome.failure is not None
        ),
        explain=ExplainFigures.model_validate(explained) if explained else None,
    )


def _pods_of_phase(outcome: CaseOutcome) -> tuple[list[str], dict[str, str], set[str]]:
    """The pods the measured phase made, those of them left unschedulable (with why), and
    the gated pods of the whole run, which are neither."""
    measured = list(dict.fromkeys(k for w in outcome.windows for k in w.pods))
    gated = {k for k, reason in outcome.unschedulable.items() if reason.startswith(GATED)}
    unschedulable = {
        k: outcome.unschedulable[k]
        for k in measured
        if k in outcome.unschedulable and k not in outcome.bound_at and k not in gated
    }
    return measured, unschedulable, gated


def _first_decision(outcome: CaseOutcome, began: float | None) -> float | None:
    """Seconds from the start of the workload's run (`began`; None: the command's, Ray's
    start included) to its first decision: Redis, the nodes, the shards' first sync
    included. A later workload's is not charged with the ones before it."""
    decided_at = outcome.stages["decided"].values()
    if not decided_at:
        return None
    first = min(decided_at)
    return first - began if began is not None else instruments.since_process_start(first)


def shard_figures(outcome: CaseOutcome, platform: Platform, duration: float) -> list[ShardFigures]:
    """Each shard's share of the workload, how busy it was and where it ran."""
    stats = outcome.loop.dispatcher.stats
    busy, decided = per_shard(outcome, "busy_s"), per_shard(outcome, "decided")
    figures = []
    for info in platform.shard_info:
        shard = int(info["id"])
        busy_s, decided_pods = busy.get(shard, 0.0), decided.get(shard, 0)
        figures.append(
            ShardFigures(
                id=info["id"],
                # where it ran at the end, and each Ray node it was seen on, first to last
                ray_node_id=info["ray_node_id"],
                ray_node_ip=info["ray_node_ip"],
                ray_nodes=[RayNode(**node) for node in info["ray_nodes"]],
                units=stats.units_by_shard.get(shard, 0),
                pods=stats.pods_by_shard.get(shard, 0),
                busy_s=busy_s,
                idle_fraction=idle_fraction(busy_s, duration),
                decided_pods=decided_pods,
                decisions_per_busy_s=decision_rate(decided_pods, busy_s),
                core=info.get("core"),
            )
        )
    return figures


def ending(
    run: CaseWorkload, error: str | None, failure: CaseError | None, average: float
) -> dict[str, Any]:
    """How a workload ended, as both benches report it: `error`, the runner's (else a
    threshold missed), and `failed`, the op that stopped the case (None if none did)."""
    return {
        "error": error or below_threshold(run, average),
        "failed": failure.record() if failure else None,
    }


def below_threshold(run: CaseWorkload, average: float) -> str | None:
    """A workload slower than its `threshold` fails, as upstream's harness fails it
    (the figure is upstream's, for its machines: say so beside it)."""
    if run.threshold is None or average >= run.threshold:
        return None
    return (
        f"case {run.name}: {average:.0f} pods/s on average, below the workload's threshold "
        f"of {run.threshold:g} (upstream's, for its own machines)"
    )


def case_warnings(
    duration_s: float,
    first_decision_s: float | None,
    chaos: dict[str, Any] | None,
    *,
    failed: bool = False,
) -> list[str]:
    """What makes a run's figures say less than they seem to, in words for its reader.

    Not the measured phase's length for a case an op stopped (`failed`): that phase
    ended at the failure, and asking for more pods would not make it longer.
    """
    warnings = []
    if not failed and duration_s < MEASURED_AT_LEAST_S:
        warnings.append(
            f"the measured phase took {duration_s:.2f} s, under the {MEASURED_AT_LEAST_S:.0f} s "
            "upstream asks of a throughput figure: ask for more pods (--pods)"
        )
    if not failed and first_decision_s is not None and first_decision_s > duration_s:
        warnings.append(
            f"start-up, not scheduling, dominates this run: the first decision came "
            f"{first_decision_s:.1f} s after the run began, and scheduling took "
            f"{duration_s:.2f} s; ask for more pods (--pods) for figures that mean more"
        )
    for kind in (chaos or {}).get("never_injected", []):
        warnings.append(
            f"chaos: {kind} was asked for and never injected (the run settled first): "
            "ask for more pods, or more faults (--chaos-faults)"
        )
    return warnings


# The stages of a bound pod, in order, and the successful attempt (last sent to committed).
STAGES = (
    ("created_to_bound", "created", "bound"),
    ("created_to_queued", "created", "queued"),
    ("queued_to_decided", "queued", "decided"),
    ("decided_to_committed", "decided", "committed"),
    ("committed_to_bound", "committed", "bound"),
    ("attempt_sent_to_committed", "sent", "committed"),
)


def stage_latencies(outcome: CaseOutcome, measured: list[str]) -> dict[str, Latency]:
    """Seconds between the stages of every measured pod that was bound, and the age
    of every measured pod still waiting when the phase ended."""
    times = {**outcome.stages, "created": outcome.created_at, "bound": outcome.bound_at}
    bound = [k for k in measured if k in outcome.bound_at]
    out = {
        name: Latency.model_validate(
            instruments.latency(
                [times[b][k] - times[a][k] for k in bound if k in times[a] and k in times[b]]
            )
        )
        for name, a, b in STAGES
    }
    # the other half of the picture: how long the pods still waiting had waited at the end
    end = max((w.end for w in outcome.windows), default=0.0)
    out["pending_age"] = Latency.model_validate(
        instruments.latency(
            [end - outcome.created_at[k] for k in measured if k not in outcome.bound_at]
        )
    )
    return out


def queue_figures(dispatcher: Dispatcher) -> QueueFigures:
    """How the unschedulable queue worked over the whole run: the cluster events seen, the
    units they (and the 5-minute timeout) sent back, and what the pods still waiting at
    the end cost: their failed attempts per pod, every attempt since each was created."""
    stats = dispatcher.stats
    pods, attempts = dispatcher.waiting_attempts()
    return QueueFigures(
        events=dict(stats.events),
        moved_by_events=stats.moved_by_events,
        moved_by_timeout=stats.moved_by_timeout,
        waiting_pods=pods,
        attempts_per_waiting_pod=attempts / pods if pods else 0.0,
        preemption=Preemption(
            attempts=stats.preemption_attempts,
            preemptions=stats.preemptions,
            victims=stats.victims,
        ),
    )


def perf_counters(outcome: CaseOutcome) -> dict[str, int]:
    """The loop's counters over the measured phase (every window together)."""
    fields = (
        "pod_attempts",
        "conflicts",
        "committed_units",
        "committed_pods",
        "store_commits",
        "shard_rollbacks",
        "commit_rollbacks",
        "redis_commands",
        "redis_round_trips",
    )
    total = {f: sum(getattr(w.counters, f) for w in outcome.windows) for f in fields}
    total["attempts"] = total.pop("pod_attempts")
    return total


def per_shard(outcome: CaseOutcome, counter: str) -> dict[int, float]:
    """A per-shard counter over the measured phase (`busy_s`: seconds spent syncing and
    deciding; `decided`: pods decided on), by the results that arrived within it."""
    total: Counter[int] = Counter()
    for w in outcome.windows:
        total.update(getattr(w.counters, counter))
    return dict(total)


def cpu_s(outcome: CaseOutcome) -> dict[str, float]:
    """CPU seconds each role used over the measured phase (every window together)."""
    used: Counter[str] = Counter()
    for w in outcome.windows:
        used.update(w.counters.cpu_s)
    roles = {role: used[role] for role in ("driver", "shards", "redis")}
    return {**roles, "other": max(used["machine"] - sum(roles.values()), 0.0)}


@contextmanager
def progress_bar(show: bool) -> Iterator[Progress | ProgressLines | None]:
    if not show:
        yield None
        return
    if not sys.stdout.isatty():  # a file or a pipe: lines it can read as they come
        yield ProgressLines()
        return
    with Progress(
        # a run's name may hold brackets (`CaseWorkload.name`): text, never markup
        TextColumn("{task.description}", style="bold", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=False,
    ) as bar:
        yield bar


class ProgressLines:
    """Progress for a stdout that is no terminal: a line (flushed) whenever a workload's
    count changes, where a live bar would show only once the process exits."""

    def __init__(self) -> None:
        self._tasks: list[tuple[str, float]] = []  # (name, when it began)
        self._said: dict[TaskID, tuple[int, int | None]] = {}

    def add_task(self, description: str, total: int | None = None) -> TaskID:
        self._tasks.append((description, time.perf_counter()))
        return TaskID(len(self._tasks) - 1)  # rich's task ids, as a Progress's would be

    def update(self, task: TaskID, completed: int, total: int | None) -> None:
        if self._said.get(task) == (completed, total):
            return
        self._said[task] = (completed, total)
        name, began = self._tasks[task]
        elapsed = time.perf_counter() - began
        print(f"{name}: {completed}/{total} pods settled, {elapsed:.1f} s", flush=True)


@contextmanager
def _closing_ray(own: bool) -> Iterator[None]:
    try:
        yield
    finally:
        if own:
            ray.shutdown()
