"""A day's report, typed: each scheduler's figures over the day and its time series, as
the result file holds them, and the terminal's table of them side by side."""

from __future__ import annotations

from collections.abc import Callable

from rich.table import Table

from benchmarks.day.day_checks import EndState
from benchmarks.day.day_runner import QUEUES, DayOutcome
from benchmarks.report.bench_report import Figures, Latency, Machine, Number, Throughput
from benchmarks.report.instruments import latency, stage_latencies, throughput

# processes of the living plane whose CPU is said per 1,000 pods, beside the scheduler's
PLANE = ("kube-apiserver", "etcd", "kube-controller-manager", "kwok")
SLOWEST = 5


class DaySeries(Figures):
    """Once a second through the day and its settling."""

    t_s: list[float]
    bound: list[int]
    pending: dict[str, list[int]]  # by queue
    oldest_pending_s: list[float]
    conflicts: list[float]
    scheduler_cpu_s: list[float]


class DayFigures(Figures):
    """One scheduler's day."""

    scheduler: str
    pods_created: int  # of ours, made by the controllers and the day
    pods_bound: int
    throughput_pods_per_s: Throughput  # over the day's seconds
    stages: dict[str, Latency]  # created -> scheduled -> running -> ready
    oldest_pending_s: Latency  # the per-second samples of the oldest pod's wait
    slowest: list[tuple[str, float]]  # the pods longest from created to scheduled, seconds
    # what the scheduler last said of each of them while it waited (PodScheduled's message)
    slowest_told: dict[str, str] = {}
    pending_max: dict[str, int]  # by queue
    conflicts: Number
    scheduler_cpu_ms_per_pod: float
    cpu_s_per_1000_pods: dict[str, float]  # the scheduler and each process of the plane
    pod_events_per_pod: float  # pod watch events the server sent, per pod of ours
    checks: int  # invariant checks while the day ran
    violations_during: list[str]
    placed_on_closed_nodes: list[str]
    nodes_closed: dict[str, int]  # seen NotReady, and cordoned, at some time of the day
    violations_at_end: list[str]
    end: EndState
    happened: list[tuple[float, str]]
    notes: list[str]
    series: DaySeries


class DayReport(Figures):
    ABSENT_WHEN_NONE = frozenset({"kubernetes"})

    day: str  # the day file
    # the control plane's release (None: a file from before there were two, v1.30.4)
    kubernetes: str | None = None
    nodes: int
    duration_s: float
    seed: int
    shards: int
    happenings: dict[str, int]
    schedulers: list[DayFigures]
    machine: Machine


def day_figures(outcome: DayOutcome, duration_s: float) -> DayFigures:
    """What the outcome comes to, for the report."""
    watch, samples = outcome.watch, outcome.samples
    pods = list(outcome.created_at)
    bound = [k for k in pods if k in watch.bound_at]
    in_day = [s.bound for s in samples if s.t_s <= duration_s]
    per_1000 = 1000 / max(len(pods), 1)
    scheduler_cpu = outcome.cpu_s.get("scheduler", 0.0)
    plane_cpu = {
        name: sum(cpu for process, cpu in outcome.cpu_s.items() if process.startswith(name))
        for name in PLANE
    }
    series = DaySeries(
        t_s=[round(s.t_s, 2) for s in samples],
        bound=[s.bound for s in samples],
        pending={q: [s.pending.get(q, 0) for s in samples] for q in QUEUES},
        oldest_pending_s=[round(s.oldest_pending_s, 2) for s in samples],
        conflicts=[s.conflicts for s in samples],
        scheduler_cpu_s=[round(s.scheduler_cpu_s, 3) for s in samples],
    )
    stages = {"scheduled": watch.bound_at, "running": watch.running_at, "ready": watch.ready_at}
    slowest = sorted(
        ((k, round(watch.bound_at[k] - outcome.created_at[k], 2)) for k in bound),
        key=lambda pair: -pair[1],
    )[:SLOWEST]
    return DayFigures(
        scheduler=outcome.scheduler,
        pods_created=len(pods),
        pods_bound=len(bound),
        throughput_pods_per_s=Throughput.model_validate(
            throughput(sum(in_day), duration_s, [float(b) for b in in_day])
        ),
        stages={
            k: Latency.model_validate(v)
            for k, v in stage_latencies(outcome.created_at, stages, bound).items()
        },
        oldest_pending_s=Latency.model_validate(latency([s.oldest_pending_s for s in samples])),
        slowest=slowest,
        slowest_told={k: watch.last_said[k] for k, _ in slowest if k in watch.last_said},
        pending_max={q: max(series.pending[q], default=0) for q in QUEUES},
        conflicts=max((s.conflicts for s in samples), default=0),
        scheduler_cpu_ms_per_pod=1000 * scheduler_cpu / max(len(bound), 1),
        cpu_s_per_1000_pods={
            "scheduler": scheduler_cpu * per_1000,
            **{k: v * per_1000 for k, v in plane_cpu.items()},
        },
        pod_events_per_pod=watch.events / max(len(pods), 1),
        checks=len(outcome.checks),
        violations_during=sorted({v for _, found in outcome.checks for v in found}),
        placed_on_closed_nodes=outcome.closed,
        nodes_closed=outcome.closed_nodes,
        violations_at_end=outcome.violations,
        end=outcome.end,
        happened=[(round(t, 1), what) for t, what in outcome.happened],
        notes=outcome.notes,
        series=series,
    )


# --- the terminal ---------------------------------------------------------------------


def day_table(report: DayReport) -> Table:
    """The day's figures, a column per scheduler."""
    table = Table(title=f"a day of {report.duration_s:g} s on {report.nodes} KWOK nodes")
    table.add_column("figure")
    for figures in report.schedulers:
        table.add_column(figures.scheduler, justify="right")
    for label, cell in ROWS:
        table.add_row(label, *(cell(f) for f in report.schedulers))
    return table


def _p(latency: Latency, q: str) -> str:
    value = getattr(latency, q, None)
    return "-" if value is None else f"{value:.2f}"


def _stage_cell(f: DayFigures, stage: str) -> str:
    found = f.stages.get(stage)
    if found is None:
        return "-"
    return " / ".join(_p(found, q) for q in ("p50", "p90", "p99"))


def _throughput(f: DayFigures) -> str:
    return f"{f.throughput_pods_per_s.p50:.0f} / {f.throughput_pods_per_s.p99:.0f}"


def _plane_cpu(f: DayFigures) -> str:
    cpu = f.cpu_s_per_1000_pods
    return f"{cpu['kube-controller-manager']:.2f} / {cpu['kwok']:.2f}"


def _jobs(f: DayFigures) -> str:
    return f"{f.end.jobs_complete} / {f.end.jobs_running} / {f.end.jobs_failed}"


def _pending_left(f: DayFigures) -> str:
    disagree = sum(1 for p in f.end.pending if p.explain_agrees is False)
    return f"{len(f.end.pending)} / {len(f.end.unexplained)} / {disagree}"


ROWS: list[tuple[str, Callable[[DayFigures], str]]] = [
    ("pods made / bound", lambda f: f"{f.pods_created} / {f.pods_bound}"),
    ("pods/s p50 / p99 (per second)", _throughput),
    ("created -> scheduled p50/p90/p99 s", lambda f: _stage_cell(f, "created_to_scheduled")),
    ("created -> Running p50/p90/p99 s", lambda f: _stage_cell(f, "created_to_running")),
    ("created -> Ready p50/p90/p99 s", lambda f: _stage_cell(f, "created_to_ready")),
    ("oldest pending, max s", lambda f: _p(f.oldest_pending_s, "max")),
    (
        "queue peaks: active / backoff / unschedulable / gated",
        lambda f: " / ".join(str(f.pending_max[q]) for q in QUEUES),
    ),
    ("conflicts", lambda f: f"{f.conflicts:g}"),
    ("scheduler CPU per pod, ms", lambda f: f"{f.scheduler_cpu_ms_per_pod:.2f}"),
    ("pod watch events per pod", lambda f: f"{f.pod_events_per_pod:.1f}"),
    ("CPU s per 1,000 pods: controller manager / KWOK", _plane_cpu),
    ("invariant checks", lambda f: str(f.checks)),
    (
        "nodes seen NotReady / cordoned",
        lambda f: f"{f.nodes_closed['not_ready']} / {f.nodes_closed['cordoned']}",
    ),
    (
        "violations: during / at the end / placed on closed nodes",
        lambda f: (
            f"{len(f.violations_during)} / {len(f.violations_at_end)} / "
            f"{len(f.placed_on_closed_nodes)}"
        ),
    ),
    ("Deployments rolled out", lambda f: f"{f.end.deployments_ready} / {f.end.deployments}"),
    ("Jobs complete / running / failed", _jobs),
    ("pending at the end / unexplained / explain disagrees", _pending_left),
]
