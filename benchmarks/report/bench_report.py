"""The simulated bench's report, typed: what `optimist bench` measures, as its result file holds it.

A model's field names are the result file's keys and its `model_dump(mode="json")` is
the file's text, so files written before these models read the same. Every model
forbids keys it does not know: a figure added to the bench without its field here
fails the tests that validate a run's report. Maps whose keys are data (reasons,
roles, stages, fault kinds) stay dicts; so do the figures another module defines and
other commands report too (`optimist.offline.quality`, the settings).

The HTML page (`benchmarks.report.pages`) reads any report as a Mapping, old files and
other commands' included: it gets a model's dump.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

# Seconds, CPU seconds and pods decided: sums that are the int 0 where nothing was
# measured (a workload an op stopped before its phase); a float would change the file.
Number = int | float


class Figures(BaseModel):
    """A part of a report: strict about its keys, and without the keys a run did not
    have (`ABSENT_WHEN_NONE`), where the file leaves them out rather than writing null."""

    model_config = ConfigDict(extra="forbid")
    ABSENT_WHEN_NONE: ClassVar[frozenset[str]] = frozenset()

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {k: v for k, v in data.items() if v is not None or k not in self.ABSENT_WHEN_NONE}


class Throughput(Figures):
    """Pods bound per second: over the whole phase, and percentiles of its seconds."""

    average: float
    p50: float
    p90: float
    p99: float


class Histogram(Figures):
    """Upper bounds in seconds, the last "+Inf", and the count under each."""

    le_s: list[float | str]
    counts: list[int]


class Latency(Figures):
    """Durations in seconds (`instruments.latency`): only the count where there were none."""

    ABSENT_WHEN_NONE = frozenset({"mean", "p50", "p90", "p99", "max", "histogram"})
    count: int
    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    max: float | None = None
    histogram: Histogram | None = None


class FailedOp(Figures):
    """The op that stopped a workload, and why (`CaseError.record`)."""

    op: int
    opcode: str
    reason: str


class AllPods(Figures):
    """Pods over the whole run, not only the measured phase."""

    created: int
    bound: int
    unschedulable: int
    gated: int
    deleted: int


class Rollbacks(Figures):
    total: int
    shard: int
    commit: int


class Preemption(Figures):
    attempts: int  # units that looked for victims
    preemptions: int  # units that found them, room reserved
    victims: int  # pods evicted for those


class QueueFigures(Figures):
    """How the unschedulable queue worked over the whole run (`sim_bench.queue_figures`)."""

    events: dict[str, int]
    moved_by_events: int
    moved_by_timeout: int
    waiting_pods: int
    attempts_per_waiting_pod: float
    preemption: Preemption


class RayNode(Figures):
    id: str
    ip: str


class ShardFigures(Figures):
    """One shard's share of the phase, how busy it was and where it ran."""

    id: int
    ray_node_id: str
    ray_node_ip: str
    ray_nodes: list[RayNode]
    units: int
    pods: int
    busy_s: Number
    idle_fraction: float | None
    decided_pods: Number
    decisions_per_busy_s: float | None
    core: int | None


class Threshold(Figures):
    """Upstream's published threshold for the workload, for its own machines."""

    pods_per_s: float
    note: str


class Recovery(Figures):
    # through an API server: the longest pause in bindings after each fault
    ABSENT_WHEN_NONE = frozenset({"stall_median_s", "stall_max_s"})
    count: int
    recovered: int
    median_s: float | None
    max_s: float | None
    stall_median_s: float | None = None
    stall_max_s: float | None = None


class ChaosLimits(Figures):
    faults: int
    duration_s: float


class Fault(Figures):
    ABSENT_WHEN_NONE = frozenset({"stalled_s"})
    kind: str
    target: str
    at_s: float
    recovered_s: float | None
    stalled_s: float | None = None  # `Chaos._stalled`, where measured


class ChaosFigures(Figures):
    """The faults injected into a workload and the recoveries (`Chaos.report`)."""

    faults_injected: dict[str, int]
    never_injected: list[str]
    limits: ChaosLimits
    stopped: str
    retries: int | None  # None through an API server: optimist counts them in its process
    recovery_s: dict[str, Recovery]
    faults: list[Fault]


class ExplainFigures(Figures):
    """What explaining pods mid-run took (`--explain-every`, `ExplainProbe.summary`)."""

    every_s: float
    calls: int
    nodes: int
    waited_s: Latency
    judged_s: Latency
    errors: list[str]


class CaseReport(Figures):
    """One workload's figures: its measured phase, and the whole run where so named."""

    ABSENT_WHEN_NONE = frozenset({"explain"})
    name: str
    case: str
    workload: str
    params: dict[str, Any]
    overrides: dict[str, Any]
    labels: list[str]
    feature_gates: dict[str, bool] | None
    error: str | None  # the runner's, else a threshold missed
    failed: FailedOp | None
    nodes: int
    pods_created: int
    pods_scheduled: int
    pods_unschedulable: int
    pods_pending: int
    unschedulable_reasons: dict[str, int]
    all_pods: AllPods
    conflicts: int
    committed_units: int
    committed_pods: int
    store_commits: int
    redis_commands: int
    redis_round_trips: int
    attempts: int
    attempts_per_pod: float
    conflicts_per_committed_unit: float
    binder_batch_pods: float
    cpu_s: dict[str, Number]
    cpu_us_per_pod: dict[str, float]
    redis_round_trips_per_pod: float
    redis_commands_per_pod: float
    rollbacks: Rollbacks
    conflict_backoffs: int
    bind_failures: int
    shard_failures: int
    shard_restarts: int
    binder_failures: int
    store_outages: int
    store_rebuilds_s: list[float]
    binder_batches: list[int]
    extender_errors: int
    cross_pod_refusals: int
    queue: QueueFigures
    duration_s: Number
    first_decision_s: float | None
    throughput_pods_per_s: Throughput
    throughput_samples: list[int]
    latency_s: dict[str, Latency]
    memory_peak_bytes: dict[str, int]
    quality: dict[str, Any]  # `optimist.offline.quality`'s, which replay reports too
    upstream_threshold: Threshold | None
    shards: list[ShardFigures]
    notes: list[str]
    invariant_violations: list[str]
    chaos: ChaosFigures | None
    warnings: list[str]
    explain: ExplainFigures | None = None


class PooledFigures(Figures):
    """The run's figures over several workloads: counts summed, rates over the sums."""

    pods_created: int
    pods_scheduled: int
    pods_unschedulable: int
    pods_pending: int
    conflicts: int
    attempts: int
    committed_units: int
    committed_pods: int
    store_commits: int
    redis_commands: int
    redis_round_trips: int
    conflict_backoffs: int
    bind_failures: int
    shard_failures: int
    shard_restarts: int
    binder_failures: int
    extender_errors: int
    cross_pod_refusals: int
    duration_s: Number
    unschedulable_reasons: dict[str, int]
    attempts_per_pod: float
    redis_commands_per_pod: float
    redis_round_trips_per_pod: float
    rollbacks: Rollbacks
    binder_batches: list[int]
    first_decision_s: float | None
    cpu_s: dict[str, Number]
    cpu_us_per_pod: dict[str, float]
    throughput_pods_per_s: Throughput
    nodes: int
    shards: list[ShardFigures]
    memory_peak_bytes: dict[str, int]
    invariant_violations: list[str]
    warnings: list[str]


# the keys of a bench's result file that are the run's, not its figures
RUN_KEYS = ("faults_injected", "cases", "errors", "seed", "config", "machine", "versions")
# a workload's keys its run's top level leaves out, when it ran alone
CASE_ONLY = ("name", "error")


class Machine(Figures):
    cores: int | None
    memory_bytes: int
    platform: str


class BenchReport(Figures):
    """A run of `optimist bench`: its workloads, and its figures at the top level, the
    one workload's own when it ran alone (so its file reads as the workload's), pooled
    over them when several ran."""

    pooled: PooledFigures | None = None  # None: one workload, whose figures are the run's
    faults_injected: dict[str, int] | None = None  # only a run under --chaos has them
    cases: list[CaseReport]
    errors: list[str]
    seed: int
    config: dict[str, Any]  # `Settings.public()`: the settings' own shape
    machine: Machine
    versions: dict[str, str]  # by package

    @property
    def figures(self) -> CaseReport | PooledFigures:
        """The run's figures, as its top level holds them."""
        return self.pooled or self.cases[0]

    @property
    def invariant_violations(self) -> list[str]:
        return self.figures.invariant_violations

    @property
    def warnings(self) -> list[str]:
        return self.figures.warnings

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The figures at the top, then the run's keys, as the file has always had them."""
        data: dict[str, Any] = handler(self)
        figures = data.pop("pooled")
        if figures is None:
            figures = {k: v for k, v in data["cases"][0].items() if k not in CASE_ONLY}
        if data["faults_injected"] is None:
            del data["faults_injected"]
        return {**figures, **data}

    @model_validator(mode="before")
    @classmethod
    def _from_file(cls, data: Any) -> Any:
        """A result file's flat keys back into the model: the figures apart from the
        run's, and for one workload, the same as that workload's (nothing else)."""
        if not isinstance(data, Mapping) or "cases" not in data or "pooled" in data:
            return data
        run = {k: data[k] for k in RUN_KEYS if k in data}
        figures = {k: v for k, v in data.items() if k not in RUN_KEYS}
        cases = data["cases"]
        if len(cases) != 1:
            return {**run, "pooled": figures}
        own = {k: v for k, v in cases[0].items() if k not in CASE_ONLY}
        if figures != own:
            differ = sorted(k for k in figures.keys() | own.keys() if figures.get(k) != own.get(k))
            raise ValueError(f"the top level differs from its one workload's at {differ}")
        return run


class SweepRun(Figures):
    value: int | str | bool
    report: BenchReport


class Sweep(Figures):
    """`--sweep`: the setting swept and a whole run's report per value."""

    variable: str
    runs: list[SweepRun]


class SweepReport(Figures):
    """A run of `optimist bench --sweep`: one run per value, their failures named by it."""

    sweep: Sweep
    seed: int
    config: dict[str, Any]
    machine: Machine
    versions: dict[str, str]
    errors: list[str]
    invariant_violations: list[str]
