"""`optimist bench`: scheduler_perf's case files run and measured, on the simulated
cluster (`sim_bench_command`) or through a real API server (`api_bench_command`): two
benches behind one name, each taking the workload options and its own
(`bench_options`); this module routes, refusing what the other bench takes."""

from __future__ import annotations

from typing import Any

import typer

from benchmarks.apiserver.api_bench import CEILING_PODS
from benchmarks.chaos import DURATION_S
from benchmarks.commands import api_bench_command, sim_bench_command
from benchmarks.commands import bench_options as opt
from benchmarks.controlplane.releases import NEWEST
from benchmarks.simulated.sim_bench import DEFAULT_TIMEOUT_S
from optimist.cli.shared_options import ShardResources, refuse

CLUSTERS = ("sim", "apiserver", "kwok")
# what only the simulated bench does, refused through an API server
SIMULATED_ONLY = (
    "sweep", "metrics_address", "redis_url", "profile",
)  # fmt: skip


def register(app: typer.Typer) -> None:
    """Joins `optimist` through the `optimist.commands` entry-point group."""
    app.command()(bench)


def bench(
    cases: opt.Cases = None,
    case: opt.Case = None,
    workload: opt.Workload = None,
    label_filter: opt.LabelFilter = "",
    config: opt.Config = None,
    shards: opt.Shards = None,
    nodes: opt.Nodes = None,
    pods: opt.Pods = None,
    seed: opt.Seed = None,
    redis_url: opt.RedisUrl = None,
    ray_address: opt.RayAddress = None,
    shard_resource: ShardResources = None,
    redis_partitions: opt.RedisPartitions = None,
    batch_pods: opt.BatchPods = None,
    conflict_mode: opt.ConflictMode = "fine",
    candidates: opt.Candidates = 3,
    timeout: opt.Timeout = DEFAULT_TIMEOUT_S,
    placements: opt.Placements = None,
    explain_every: opt.ExplainEvery = 0.0,
    save_state: opt.SaveState = None,
    report: opt.Report = None,
    html: opt.Html = None,
    sweep: opt.Sweep = None,
    node_partitions: opt.NodePartitions = None,
    binders: opt.Binders = None,
    cpu_affinity: opt.CpuAffinity = False,
    progress: opt.Progress = True,
    metrics_address: opt.MetricsAddress = None,
    linger: opt.Linger = 0.0,
    profile: opt.Profile = None,
    profiling_endpoint: opt.ProfilingEndpoint = False,
    chaos: opt.Chaos = None,
    chaos_interval: opt.ChaosInterval = None,
    chaos_faults: opt.ChaosFaults = None,
    chaos_duration: opt.ChaosDuration = DURATION_S,
    cluster: opt.Cluster = "sim",
    scheduler: opt.Scheduler = "optimist",
    compare: opt.Compare = None,
    rounds: opt.Rounds = 1,
    kube_version: opt.KubeVersion = NEWEST,
    ceiling_pods: opt.CeilingPods = CEILING_PODS,
    kubeconfig: opt.Kubeconfig = None,
) -> None:
    """Run scheduler_perf cases on a simulated cluster (or through a real API server) and
    report pods/s; exits 1 if any pod was lost or a case failed, 2 if the case file or the
    configuration is bad."""
    flags: dict[str, Any] = dict(locals())
    if cluster not in CLUSTERS:
        refuse(f"--cluster {cluster!r}: sim, apiserver or kwok")
    if cluster == "sim":
        defaults = ("optimist", 1, NEWEST, CEILING_PODS)
        if compare or (scheduler, rounds, kube_version, ceiling_pods) != defaults:
            refuse(
                "--scheduler, --compare, --rounds, --kube-version and --ceiling-pods go "
                "with --cluster apiserver or kwok"
            )
        sim_bench_command.bench_simulated(opt.SimulatedFlags.picked(flags))
    if cluster == "kwok" and kubeconfig:
        refuse("--kubeconfig: not with --cluster kwok (it starts its own)")
    given = ["--" + name.replace("_", "-") for name in SIMULATED_ONLY if flags[name]]
    if given:
        refuse(f"{', '.join(given)}: not with --cluster {cluster}")
    api_bench_command.bench_apiserver(opt.ApiServerFlags.picked(flags), living=cluster == "kwok")
