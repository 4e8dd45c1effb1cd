"""The API bench's report, typed: what `optimist bench --cluster apiserver|kwok` measures,
as its result file holds it.

As in `bench_report`, a model's field names are the file's keys and its
`model_dump(mode="json")` is the file's text, so files written before these models read
the same; every model forbids keys it does not know. Maps whose keys are data (process
trees, stages, reasons, schedulers) stay dicts.

The HTML page (`benchmarks.report.pages`) reads any report as a Mapping, old files
included: it gets a model's dump.
"""

from __future__ import annotations

from typing import Any

from benchmarks.report.bench_report import (
    ChaosFigures,
    FailedOp,
    Figures,
    Latency,
    Machine,
    Number,
    Throughput,
)


class ApiAllPods(Figures):
    """Pods over the whole workload, not only the measured phase."""

    ABSENT_WHEN_NONE = frozenset({"bound_at_creation"})

    created: int
    bound: int  # by a scheduler (the pods bound at creation left out)
    unschedulable: int
    deleted: int
    # createPods' boundAtCreation: a large cluster's running pods (absent: none made)
    bound_at_creation: int | None = None


class OverCommitted(Figures):
    """The room promised twice at a run's end, as kubelets would find it
    (`invariants.kubelet_rejections`): what two schedulers sharing nodes cost."""

    nodes: int  # nodes over-committed
    rejected: dict[str, int]  # pods a kubelet would turn away, by profile (schedulerName)


class MemoryParts(Figures):
    """The scheduler's resident memory by part (`instruments.part_of`: "main", and
    optimist's "shards", "redis" and "ray"): each part's peak over the run, and what it
    held at the end, every pod settled (steady)."""

    peak_bytes: dict[str, int]
    end_bytes: dict[str, int]


class Restarted(Figures):
    """The scheduler under test restarted by its case (`restartScheduler`): cold, every
    replica killed and started afresh, or a failover, the leader killed with a standby
    waiting on the Lease; and the seconds from the kill to the first binding the
    bench's watch saw after it (None: none in the run)."""

    failover: bool
    first_binding_s: float | None


class ApiRunReport(Figures):
    """One workload run by one scheduler in one round: scheduler_perf's figures for its
    measured phase, read from the server, and each process tree's CPU and memory."""

    ABSENT_WHEN_NONE = frozenset({"chaos", "over_committed", "restarts", "scheduler_memory"})
    name: str
    case: str
    workload: str
    scheduler: str
    round: int  # from 0
    params: dict[str, Any]
    overrides: dict[str, Any]
    error: str | None  # the runner's, else a threshold missed
    failed: FailedOp | None
    nodes: int
    pods_created: int
    pods_scheduled: int
    pods_unschedulable: int
    pods_pending: int
    unschedulable_reasons: dict[str, int]
    nodes_used: int
    pod_events_per_pod: float
    all_pods: ApiAllPods
    duration_s: Number  # the int 0 where no phase was measured
    throughput_pods_per_s: Throughput
    throughput_samples: list[int]
    latency_s: dict[str, Latency]  # by stage: created_to_scheduled, ...
    cpu_s: dict[str, float]  # by process tree
    cpu_s_per_1000_pods: dict[str, float]  # by process tree; empty where none was scheduled
    memory_peak_bytes: dict[str, int]  # by process tree
    invariant_violations: list[str]
    warnings: list[str]
    chaos: ChaosFigures | None = None  # the faults injected (--chaos), and the recoveries
    # the whole cluster's at the end (None: a file from before it was counted)
    over_committed: OverCommitted | None = None
    restarts: list[Restarted] | None = None  # by the case (absent: it restarted nothing)
    scheduler_memory: MemoryParts | None = None  # absent: a file from before it was kept


class ApiRunNotRun(Figures):
    """A workload that never ran: its server or scheduler failed first, so there are no
    figures, only why."""

    name: str
    scheduler: str
    round: int
    error: str
    invariant_violations: list[str]
    warnings: list[str]


# a run in the file: measured, or never started (told apart by their keys)
ApiRun = ApiRunReport | ApiRunNotRun


class SchedulerFigures(Figures):
    """One scheduler on one workload: the medians over the rounds it measured (peak
    memory: the largest)."""

    ABSENT_WHEN_NONE = frozenset(
        {"ready_p50_s", "ready_p99_s", "over_committed_nodes", "kubelet_rejections", "restarts"}
    )
    pods_per_s: float
    pods_per_s_runs: list[float]
    cpu_s_per_1000_pods: dict[str, float]  # by process tree
    memory_peak_bytes: dict[str, int]  # by process tree
    latency_p50_s: float  # created -> scheduled; 0.0 where a round scheduled nothing
    latency_p99_s: float
    ready_p50_s: float | None = None  # created -> Ready: only where every round's pods were
    ready_p99_s: float | None = None
    # nodes over-committed at the end, the median over the rounds (None: not counted)
    over_committed_nodes: float | None = None
    kubelet_rejections: float | None = None  # the pods kubelets would turn away, likewise
    errors: list[str]
    # each restart of the case, in order; to the first binding the median over the rounds
    restarts: list[Restarted] | None = None


# the bench's limit of the path (`benchmarks.apiserver.null_scheduler`), run as a scheduler
NULL_SCHEDULER = "null-scheduler"


class ApiCaseComparison(Figures):
    """One workload, each scheduler's figures side by side: optimist's pods/s over
    kube-scheduler's, and as a share of the server's ceiling, where both are known."""

    ABSENT_WHEN_NONE = frozenset({"ratio", "share_of_ceiling"})
    name: str
    schedulers: dict[str, SchedulerFigures]  # by scheduler, in the order first run
    ratio: float | None = None
    share_of_ceiling: float | None = None


class Ceiling(Figures):
    """The server's own pods/s for what optimist writes per pod, once per round."""

    ABSENT_WHEN_NONE = frozenset({"pods"})
    pods: int | None = None  # measured on (None: a file from before --ceiling-pods, 2,000)
    runs: list[float]
    median: float


class ApiBenchReport(Figures):
    """A run of the API bench: every workload with every scheduler, every round."""

    ABSENT_WHEN_NONE = frozenset({"kubernetes", "ceiling_pods_per_s"})

    cluster: str
    # the release of the server and of kube-scheduler (None: a file from before there
    # were two, all of v1.30.4)
    kubernetes: str | None = None
    schedulers: list[str]
    rounds: int
    shards: int
    ceiling_pods_per_s: Ceiling | None = None  # None: not measured (--ceiling-pods 0)
    cases: list[ApiCaseComparison]
    runs: list[ApiRun]
    errors: list[str]
    invariant_violations: list[str]
    machine: Machine
