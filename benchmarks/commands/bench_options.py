"""The options of `optimist bench`, one type each (the command's signature names them),
and the two groups they fall into: the bench on the simulated cluster and the bench
through a real API server share the workload options and take their own besides."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from benchmarks.cases.case_fields import PerfConfigError
from benchmarks.chaos import (
    ALL,
    FAULTS,
    FAULTS_PER_KIND,
    PLANE_FAULTS,
    STOP_KWOK,
    ChaosError,
    ChaosPlan,
)
from benchmarks.controlplane.releases import RELEASES
from benchmarks.simulated.sim_bench import Plan, load_plan
from optimist.cli.shared_options import usage_error

Cases = Annotated[
    Path | None,
    typer.Argument(
        help="case file in scheduler_perf's performance-config.yaml format, or a folder: "
        "every such file under it (a newer release's scheduler_perf, split by area) "
        "[default: the shipped one, SchedulingBasic/5000Nodes_150000Pods]",
    ),
]

Case = Annotated[str | None, typer.Option(help="run only this test case")]

Workload = Annotated[str | None, typer.Option(help="run only this workload (NAME or CASE/NAME)")]

LabelFilter = Annotated[
    str,
    typer.Option(
        help="run only the workloads with these labels: comma-separated, LABEL or +LABEL "
        "must be there, -LABEL must not (upstream's -perf-scheduling-label-filter, e.g. "
        "performance)"
    ),
]

Config = Annotated[
    Path | None,
    typer.Option(
        dir_okay=False,
        help="KubeSchedulerConfiguration file, with an optional OptimistConfiguration "
        "document; the flags below override the latter",
    ),
]

Shards = Annotated[
    int | None, typer.Option(min=1, help="scheduler shards (Ray actors) [default: 2]")
]

Nodes = Annotated[
    int | None, typer.Option(min=1, help="sets the param initNodes of every workload")
]

Pods = Annotated[
    int | None, typer.Option(min=0, help="sets the param measurePods of every workload")
]

Seed = Annotated[int | None, typer.Option(help="seed for names, tie-breaks and order [default: 0]")]

RedisUrl = Annotated[
    str | None, typer.Option(help="redis://, rediss:// or unix:// (default: a private Redis)")
]

RayAddress = Annotated[str | None, typer.Option(help="join this Ray cluster")]

RedisPartitions = Annotated[
    int | None,
    typer.Option(
        min=1,
        help="split the node store over this many private Redis servers "
        "[default: redisPartitions, else 1]",
    ),
]

BatchPods = Annotated[
    int | None,
    typer.Option(min=1, help="pods per batch sent to a shard [default: 512/shards, 64..256]"),
]

ConflictMode = Annotated[
    str,
    typer.Option(
        help="fine: a pod that still fits is committed; coarse: any change to its node "
        "since the shard looked is a conflict"
    ),
]

Candidates = Annotated[
    int, typer.Option(min=1, help="nodes offered per pod; the binder takes the first that fits")
]

Timeout = Annotated[
    float, typer.Option(min=1, help="seconds a workload may take before it is stopped")
]

Placements = Annotated[
    Path | None,
    typer.Option(
        help="write namespace,pod,node CSV here, as each run's cluster held it at the end "
        "(led by case, scheduler and round where several ran)"
    ),
]

ExplainEvery = Annotated[
    float,
    typer.Option(
        min=0,
        help="explain a pod of the workload every SECONDS while it runs (every node "
        "described), and report what each took (explain in the JSON report)",
    ),
]

SaveState = Annotated[
    Path | None,
    typer.Option(
        help="write the cluster as the (last) workload left it, a snapshot for "
        "`optimist explain --snapshot` and `optimist replay`"
    ),
]

Report = Annotated[Path | None, typer.Option(help="write the JSON report here")]

Html = Annotated[Path | None, typer.Option(help="write an HTML page with charts here")]

Sweep = Annotated[
    str | None,
    typer.Option(
        help="run once per value of one setting, e.g. shards=1,2,4,8 (also batch, "
        "candidates, conflict-mode, node-partitions, binders, percentageOfNodesToScore)"
    ),
]

NodePartitions = Annotated[
    bool | None,
    typer.Option(help="each shard looks at its own slice of the nodes first"),
]

Binders = Annotated[
    int | None,
    typer.Option(min=1, help="binders that commit: the driver's and actors beside it"),
]

CpuAffinity = Annotated[
    bool,
    typer.Option(
        "--cpu-affinity", help="pin each shard to a core of its own, to read its decision rate"
    ),
]

Progress = Annotated[bool, typer.Option(help="show a progress bar")]

MetricsAddress = Annotated[
    str | None,
    typer.Option(
        help="serve /metrics, /healthz and /readyz on HOST:PORT during the run "
        "(127.0.0.1:10259 to stand where kube-scheduler would)"
    ),
]

Linger = Annotated[
    float,
    typer.Option(min=0, help="with --metrics-address: keep serving SECONDS after the run"),
]

Profile = Annotated[
    Path | None,
    typer.Option(
        help="write CPU profiles (pstats) of the control process and of each shard, "
        "per workload, to this folder"
    ),
]

ProfilingEndpoint = Annotated[
    bool,
    typer.Option(
        help="with --metrics-address: serve /debug/profile?target=control|shard-N"
        "&seconds=S, a CPU profile (pstats) taken on demand, to loopback clients only"
    ),
]

Chaos = Annotated[
    str | None,
    typer.Option(
        help="inject these faults at random while the run runs, comma-separated, or "
        f"{ALL}: on the simulated cluster {', '.join(FAULTS)}; through an API server "
        f"(one started for the run) {', '.join(PLANE_FAULTS)}, and on a living cluster "
        f"(--cluster kwok) {STOP_KWOK} too. The report counts them and times each recovery"
    ),
]

ChaosInterval = Annotated[
    float | None,
    typer.Option(
        help="with --chaos: seconds between faults, on average [default: spread over "
        "the run's progress, so that a short run meets every kind]"
    ),
]

ChaosFaults = Annotated[
    int | None,
    typer.Option(
        help=f"with --chaos: inject no more faults than this, per workload "
        f"[default: {FAULTS_PER_KIND} of each kind]"
    ),
]

ChaosDuration = Annotated[
    float,
    typer.Option(
        help="with --chaos: no fault after this many seconds of a workload; the run then settles"
    ),
]

Cluster = Annotated[
    str,
    typer.Option(
        help="sim: optimist's in-process simulated cluster; apiserver: a real "
        "kube-apiserver and etcd (built by `make kube`), started for each workload, "
        "the pods made by this process and scheduled by another; kwok: the same with "
        "kube-controller-manager and KWOK's nodes, where pods turn Running and Ready"
    ),
]

Scheduler = Annotated[
    str,
    typer.Option(
        help="with --cluster apiserver or kwok: the scheduler under test, optimist (`optimist "
        "run`) or kube-scheduler (upstream's, of --kube-version)"
    ),
]

Compare = Annotated[
    list[str] | None,
    typer.Option(
        help="with --cluster apiserver or kwok: kube-scheduler, or null-scheduler (the "
        "limit of the path: binds round-robin, deciding nothing), to run it too on every "
        "workload and print them side by side; or two schedulers sharing the nodes, "
        "kube-scheduler+optimist or kube-scheduler+kube-scheduler (the configuration's "
        "first profile kube-scheduler's, the rest the other's); repeatable"
    ),
]

Rounds = Annotated[
    int,
    typer.Option(
        min=1,
        help="with --cluster apiserver or kwok: run every workload this many times with each "
        "scheduler, alternating which goes first; figures are the medians",
    ),
]

KubeVersion = Annotated[
    str,
    typer.Option(
        help="with --cluster apiserver or kwok: the Kubernetes release of the control plane "
        f"started and of kube-scheduler, one of {', '.join(RELEASES)}",
    ),
]

CeilingPods = Annotated[
    int,
    typer.Option(
        min=0,
        help="with --cluster apiserver or kwok: pods the server's ceiling (a binding and an "
        "event per pod from 16 threads, each round, on a server of its own) is measured "
        "on; 0: not measured",
    ),
]

Kubeconfig = Annotated[
    Path | None,
    typer.Option(
        dir_okay=False,
        exists=True,
        help="with --cluster apiserver: the API server this kubeconfig names, instead "
        "of one started for each workload; what a run makes there it removes after "
        "(no other scheduler may serve the profiles meanwhile)",
    ),
]


T = TypeVar("T", bound="WorkloadFlags")


@dataclass(frozen=True)
class WorkloadFlags:
    """What every bench takes: the workloads, what it sets in each, where the figures go."""

    cases: Path | None
    case: str | None
    workload: str | None
    label_filter: str
    config: Path | None
    shards: int | None
    nodes: int | None
    pods: int | None
    seed: int | None
    timeout: float
    report: Path | None
    html: Path | None
    placements: Path | None
    save_state: Path | None
    progress: bool
    chaos: str | None
    chaos_interval: float | None
    chaos_faults: int | None
    chaos_duration: float
    ray_address: str | None

    @classmethod
    def picked(cls: type[T], flags: dict[str, Any]) -> T:
        """This group's options out of the command's, by name."""
        return cls(**{f.name: flags[f.name] for f in dataclasses.fields(cls)})

    def chaos_plan(self, kinds: tuple[str, ...]) -> ChaosPlan | None:
        """--chaos and its options, of the cluster kind's `kinds`; exit 2 naming what is
        wrong."""
        if not self.chaos:
            return None
        with usage_error(ChaosError):
            return ChaosPlan.parse(
                self.chaos, self.chaos_interval, self.chaos_faults, self.chaos_duration, kinds
            )

    def plan(self) -> Plan:
        """The workloads a bench runs, --nodes and --pods set in each; exit 2 naming what
        is wrong with the case file."""
        overrides = {
            name: value
            for name, value in (("initNodes", self.nodes), ("measurePods", self.pods))
            if value is not None
        }
        with usage_error(PerfConfigError):
            return load_plan(
                self.cases,
                case=self.case,
                workload=self.workload,
                label_filter=self.label_filter,
                overrides=overrides,
                timeout_s=self.timeout,
            )


@dataclass(frozen=True)
class SimulatedFlags(WorkloadFlags):
    """`--cluster sim`: the platform's own settings, and what to do while it runs."""

    redis_url: str | None
    shard_resource: list[str] | None
    redis_partitions: int | None
    batch_pods: int | None
    conflict_mode: str
    candidates: int
    explain_every: float
    sweep: str | None
    node_partitions: bool | None
    binders: int | None
    cpu_affinity: bool
    metrics_address: str | None
    linger: float
    profile: Path | None
    profiling_endpoint: bool


@dataclass(frozen=True)
class ApiServerFlags(WorkloadFlags):
    """`--cluster apiserver` or `kwok`: the schedulers under test, and how often each."""

    scheduler: str
    compare: list[str] | None
    rounds: int
    kube_version: str
    ceiling_pods: int
    kubeconfig: Path | None
