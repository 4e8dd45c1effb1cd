"""`optimist bench --cluster apiserver`: the same case files through a real kube-apiserver,
scheduled by `optimist run` (its real service path: informers, loop, bindings,
events, in a process of its own) or by upstream's kube-scheduler v1.30.

Each workload runs once per scheduler per round, each time on a fresh control
plane (scheduler_perf starts an API server per workload too), and the rounds
alternate which scheduler goes first, so that a slower minute of a shared
machine falls on both. The API server's own ceiling for the writes optimist
makes per pod (a binding and a Scheduled event) is measured once per round on
a fresh control plane of its own. CPU is each process tree's over the
measured phase: `optimist run` with its Ray daemons, shards and Redis;
kube-scheduler; the API server; etcd; this process, which makes the objects.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from benchmarks.apiserver import null_scheduler
from benchmarks.apiserver.api_runner import (
    ApiCaseRunner,
    ApiOutcome,
    SchedulerExited,
    remove_namespaces,
)
from benchmarks.apiserver.link import Link
from benchmarks.apiserver.plane_faults import PLANE_ONLY, PlaneTargets
from benchmarks.apiserver.replicas import (
    KubeSchedulerLauncher,
    Launcher,
    OptimistLauncher,
    Replicas,
)
from benchmarks.apiserver.scheduler_processes import (
    ApiBenchError,
    null_scheduler_process,
    optimist_process,
    scheduler_documents,
    scheduler_names,
)
from benchmarks.apiserver.server_state import cluster_of, volumes_of
from benchmarks.apiserver.shared_pool import SHARED_POOL, split_profiles
from benchmarks.cases.case_file import CaseWorkload
from benchmarks.cases.case_ops import RestartScheduler
from benchmarks.chaos import CONNECTION_FAULTS, KILL_LEADER, LIVING_FAULTS, ChaosPlan
from benchmarks.controlplane.control_plane import (
    ControlPlane,
    ControlPlaneError,
    binaries,
    kube_scheduler,
    scheduler_perf_plane,
)
from benchmarks.controlplane.living_plane import KWOK_POOL, LivingPlane
from benchmarks.controlplane.releases import NEWEST
from benchmarks.report import instruments
from benchmarks.report.api_report import (
    NULL_SCHEDULER,
    ApiAllPods,
    ApiBenchReport,
    ApiCaseComparison,
    ApiRun,
    ApiRunNotRun,
    ApiRunReport,
    Ceiling,
    OverCommitted,
    Restarted,
    SchedulerFigures,
)
from benchmarks.report.bench_report import ChaosFigures, Latency, Machine, Throughput
from benchmarks.simulated.sim_bench import Plan, case_warnings, ending
from cluster.manifests import scheduler_name
from optimist.kube.client import ApiError, KubeClient
from optimist.offline import provenance
from optimist.offline.invariants import check_invariants, kubelet_rejections
from optimist.offline.simulator import SimulatedCluster

SCHEDULERS = ("optimist", "kube-scheduler")
# and what the API bench can run besides them: the null scheduler, the limit of the path;
# two schedulers sharing the nodes (`shared_pool`)
BENCHED = (*SCHEDULERS, NULL_SCHEDULER, *SHARED_POOL)
CEILING_PODS = 2000  # pods the ceiling is measured on
CEILING_THREADS = 16


@dataclass(frozen=True, slots=True)
class ApiBench:
    schedulers: tuple[str, ...]
    rounds: int = 1
    shards: int = 2
    configuration: Path | None = None  # --config: the profiles, for both schedulers
    kubeconfig: Path | None = None  # a server already running, else one started per run
    timeout_s: float = 1800.0
    seed: int = 0
    living: bool = False  # --cluster kwok: controllers and KWOK's nodes beside the server
    kube_version: str = NEWEST  # the release of the server started and of kube-scheduler
    ceiling_pods: int = CEILING_PODS  # pods the server's ceiling is measured on
    chaos: ChaosPlan | None = None  # faults injected into each run (a server started here)
    ray_address: str | None = None  # a Ray cluster optimist joins, else one of its own


# --- the schedulers under test -------------------------------------------------------


@contextmanager
def scheduler(
    name: str,
    server: Server,
    documents: list[dict[str, Any]],
    names: frozenset[str],
    shards: int,
    port: int | None = None,
    ray_address: str | None = None,
) -> Iterator[int]:
    """The scheduler `name` in a process of its own for the profiles `names` of
    `documents`, serving on `port` (its metrics: `metrics_url`), optimist joining the Ray
    cluster at `ray_address` if one is given; yields its PID once it is ready."""
    if name == "optimist":
        with optimist_process(
            server.kubeconfig, documents, shards, server.folder, port, ray_address
        ) as pid:
            yield pid
    elif name == "kube-scheduler":  # its connection and election are set by kube_scheduler
        with kube_scheduler(
            server.kubeconfig, server.folder, documents[0], server.bin_dir, port=port
        ) as pid:
            yield pid
    elif name == NULL_SCHEDULER:
        with null_scheduler_process(server.kubeconfig, names, server.folder) as pid:
            yield pid
    else:
        raise ApiBenchError(f"--scheduler {name!r}: not one of {', '.join(BENCHED)}")


@contextmanager
def neighbours(
    name: str, server: Server, documents: list[dict[str, Any]], shards: int
) -> Iterator[list[int]]:
    """The two schedulers of the setup `name` (`shared_pool`) on the server's one pool,
    each in a process of its own for its profiles; yields their PIDs once both are
    ready."""
    with ExitStack() as stack:
        pids = []
        for i, (part, docs) in enumerate(split_profiles(name, documents)):
            if part == "optimist":
                process = optimist_process(server.kubeconfig, docs, shards, server.folder)
            else:
                process = kube_scheduler(
                    server.kubeconfig, server.folder, docs[0], server.bin_dir,
                    name=f"kube-scheduler-{i + 1}",
                )  # fmt: skip
            pids.append(stack.enter_context(process))
        yield pids


# --- one workload, one scheduler -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class Server:
    """The API server a run goes through: one started for it, or one given."""

    client: KubeClient  # the admin's, unthrottled: the server is what is measured
    kubeconfig: Path  # the schedulers': the server's own, or a link's to it
    folder: Path  # the schedulers' configurations and logs
    plane: ControlPlane | None  # None: a server given by --kubeconfig
    bin_dir: Path  # the binaries of the release: its kube-scheduler

    def meters(self) -> dict[str, instruments.ProcessTree]:
        """The server's processes (and a living plane's controllers and KWOK), where
        they are ours to read."""
        if self.plane is None:
            return {}
        plane = self.plane
        return {
            name: instruments.ProcessTree(functools.partial(_one, plane, name))
            for name in plane.running
        }


def _one(plane: ControlPlane, name: str) -> tuple[int, ...]:
    """The PID of a process of the plane, whichever runs under that name now; none while
    a fault keeps it stopped (KWOK)."""
    return (plane.pid(name),) if name in plane.running else ()


@contextmanager
def api_server(
    kubeconfig: Path | None, living: bool = False, version: str = NEWEST
) -> Iterator[Server]:
    """A fresh etcd and kube-apiserver of the release `version` as scheduler_perf starts
    its own (`living`: with kube-controller-manager and KWOK), or the server
    `kubeconfig` names (what a run makes there, it removes after)."""
    if kubeconfig is None:
        kind = LivingPlane if living else ControlPlane
        with scheduler_perf_plane(kind, version) as plane:
            admin = plane.admin_kubeconfig
            yield Server(_unlimited(admin), admin, plane.dir, plane, plane.bin_dir)
        return
    with tempfile.TemporaryDirectory(prefix="optimist-apibench-") as folder:
        yield Server(_unlimited(kubeconfig), kubeconfig, Path(folder), None, binaries(version))


def _unlimited(kubeconfig: Path) -> KubeClient:
    return KubeClient.for_kubeconfig(str(kubeconfig), qps=1e6, burst=10**6)


# what a run leaves for the files asked of it: its cluster as the server held it at the
# end, named by its workload, scheduler and round (from 1)
Keep = Callable[[tuple[str, str, str], SimulatedCluster], None]


def run_stretch(
    bench: ApiBench,
    name: str,
    runs: list[CaseWorkload],
    round_: int,
    progress: Callable[[str], Callable[[int, int], None]],
    keep: Keep | None = None,
) -> Iterator[ApiRunReport]:
    """Workloads of one scheduler configuration, in order, with one scheduler process
    through one server; on a server given by --kubeconfig, each removes what it made
    before the next."""
    path = runs[0].scheduler_config or bench.configuration
    names = scheduler_names(path)
    with (
        api_server(bench.kubeconfig, bench.living, bench.kube_version) as plain,
        _linked(bench, plain) as (server, link),
        _under_test(bench, name, server, scheduler_documents(path), names, runs) as under_test,
    ):
        meters = {
            "scheduler": instruments.ProcessTree(under_test.pids),
            **server.meters(),
            "client": instruments.ProcessTree(os.getpid(), descendants=False),
        }
        chaos = _chaos(bench, name, server, under_test, link)
        for run in runs:
            label = progress(f"{run.name} [{name}, round {round_ + 1}]")
            runner = ApiCaseRunner(
                run, server.client, names, meters, seed=bench.seed, timeout_s=bench.timeout_s,
                progress=label, kwok_pool=KWOK_POOL if bench.living else None, chaos=chaos,
                replicas=under_test.replicas,
            )  # fmt: skip
            with runner:
                try:
                    outcome = runner.execute()
                    cluster = cluster_of(server.client, names, outcome.watch)
                    volumes = volumes_of(server.client)
                finally:
                    if server.plane is None:
                        runner.remove_made()
            # the null scheduler decides nothing: where it puts pods is not a placement
            shared = name in SHARED_POOL
            violations = (
                check_invariants(cluster, outcome.watch.unschedulable, None, volumes, shared)
                if name != NULL_SCHEDULER
                else []
            )
            if keep is not None:
                keep((run.name, name, str(round_ + 1)), cluster)
            yield workload_report(outcome, name, round_, cluster, violations)


class UnderTest(NamedTuple):
    """The scheduler a stretch runs: the PIDs of its processes, the one whose tree
    schedules now (during a takeover, once it is done), and its replicas where
    something is to kill or restart them."""

    pids: Callable[[], list[int]]
    leader_pid: Callable[[], int]
    replicas: Replicas | None = None


@contextmanager
def _under_test(
    bench: ApiBench,
    name: str,
    server: Server,
    documents: list[dict[str, Any]],
    names: frozenset[str],
    runs: list[CaseWorkload],
) -> Iterator[UnderTest]:
    """The scheduler `name`, once it is ready; as replicas (`Replicas`) where
    `--chaos kill-leader` is to kill optimist's leader or a case restarts it: two
    sharing a Lease where a leader is to be killed, else one alone."""
    if name in SHARED_POOL:
        with neighbours(name, server, documents, bench.shards) as pids:
            yield UnderTest(lambda: pids, lambda: pids[-1])
        return
    kills = name == SCHEDULERS[0] and bench.chaos is not None and KILL_LEADER in bench.chaos.faults
    restarts = {op.failover for run in runs for op in run.ops if isinstance(op, RestartScheduler)}
    if name in SCHEDULERS and (kills or restarts):
        count = 2 if kills or True in restarts else 1
        with Replicas(_launcher(name, bench, server, documents), count, server.folder) as r:
            yield UnderTest(r.pids, r.await_leader, r)
        return
    with scheduler(name, server, documents, names, bench.shards, None, bench.ray_address) as pid:
        yield UnderTest(lambda: [pid], lambda: pid)


def _launcher(
    name: str, bench: ApiBench, server: Server, documents: list[dict[str, Any]]
) -> Launcher:
    if name == "optimist":
        return OptimistLauncher(server.kubeconfig, documents, bench.shards, server.folder)
    return KubeSchedulerLauncher(server.kubeconfig, server.folder, documents[0], server.bin_dir)


@contextmanager
def _linked(bench: ApiBench, server: Server) -> Iterator[tuple[Server, Link | None]]:
    """The server as the scheduler reaches it: through a `Link` of the bench's where
    `--chaos` is to stall or cut its connections, else directly."""
    plane = server.plane
    if bench.chaos is None or plane is None or not set(CONNECTION_FAULTS) & {*bench.chaos.faults}:
        yield server, None
        return
    where = urlsplit(plane.url)
    with Link((where.hostname or "127.0.0.1", where.port or 443)) as link:
        yield dataclasses.replace(server, kubeconfig=link.kubeconfig(server.kubeconfig)), link


def _chaos(
    bench: ApiBench, name: str, server: Server, under_test: UnderTest, link: Link | None
) -> tuple[ChaosPlan, PlaneTargets] | None:
    """The faults of a scheduler's runs, and what they go into: optimist's own parts
    are killed in its runs alone."""
    if bench.chaos is None or server.plane is None:
        return None
    plan = bench.chaos.only(LIVING_FAULTS if name == SCHEDULERS[0] else PLANE_ONLY)
    targets = PlaneTargets(server.plane, under_test.leader_pid, under_test.replicas, link)
    return (plan, targets) if plan else None


def stretches(
    bench: ApiBench, plan: Plan, order: tuple[str, ...]
) -> list[tuple[str, list[CaseWorkload]]]:
    """What runs with one scheduler process: on fresh servers, one workload (each
    scheduler in turn on it); on a server given, consecutive workloads of the same
    scheduler configuration (one scheduler's all, then the other's)."""
    if bench.kubeconfig is None:
        return [(name, [run]) for run in plan.runs for name in order]
    return [
        (name, list(group))
        for name in order
        for _, group in itertools.groupby(plan.runs, key=lambda r: r.scheduler_config)
    ]


def over_committed(cluster: SimulatedCluster) -> OverCommitted:
    """The nodes of the cluster over-committed at the end, and the pods their kubelets
    would turn away, by profile."""
    rejected = kubelet_rejections(cluster)
    profiles = Counter(
        scheduler_name(cluster.pod_manifests[pod]) for pods in rejected.values() for pod in pods
    )
    return OverCommitted(nodes=len(rejected), rejected=dict(sorted(profiles.items())))


def workload_report(
    outcome: ApiOutcome,
    name: str,
    round_: int,
    cluster: SimulatedCluster,
    violations: list[str],
) -> ApiRunReport:
    """scheduler_perf's figures for the measured phase, read from the server: pods/s in
    one-second samples and on average; created -> scheduled; and each process's CPU
    and peak memory; with the nodes over-committed in `cluster`, the server's state at
    the end."""
    run, watch = outcome.run, outcome.watch
    measured = list(dict.fromkeys(k for w in outcome.windows for k in w.pods))
    samples, rates, scheduled = instruments.phase_samples(outcome.windows, watch.bound_at)
    cpu: dict[str, float] = {}
    for w in outcome.windows:
        for process, seconds in w.cpu_s.items():
            cpu[process] = cpu.get(process, 0.0) + seconds
    duration = sum(w.end - w.start for w in outcome.windows)
    throughput = Throughput(**instruments.throughput(scheduled, duration, rates))
    unschedulable = [k for k in measured if k in watch.unschedulable and k not in watch.bound_at]
    latency = instruments.stage_latencies(
        outcome.created_at,
        {"scheduled": watch.bound_at, "running": watch.running_at, "ready": watch.ready_at},
        measured,
    )
    return ApiRunReport(
        name=run.name,
        case=run.case,
        workload=run.workload,
        scheduler=name,
        round=round_,
        params=run.params,
        overrides=run.overrides,
        **ending(run, outcome.error, outcome.failure, throughput.average),
        nodes=len(cluster.nodes),
        pods_created=len(measured),
        pods_scheduled=scheduled,
        pods_unschedulable=len(unschedulable),
        pods_pending=len(measured) - scheduled - len(unschedulable),
        unschedulable_reasons=provenance.reason_counts(
            {k: watch.unschedulable[k] for k in unschedulable}
        ),
        nodes_used=len({watch.nodes[k] for k in measured if k in watch.nodes}),
        # over the whole workload, list included: what every pod watcher decodes
        pod_events_per_pod=watch.events / outcome.made if outcome.made else 0.0,
        all_pods=ApiAllPods(
            created=outcome.made,
            bound=len(watch.bound_at) - outcome.bound_at_creation,
            unschedulable=len(watch.unschedulable),
            deleted=outcome.deleted,
            bound_at_creation=outcome.bound_at_creation or None,
        ),
        duration_s=duration,
        throughput_pods_per_s=throughput,
        throughput_samples=samples,
        latency_s={stage: Latency.model_validate(f) for stage, f in latency.items()},
        cpu_s=cpu,
        cpu_s_per_1000_pods={p: s * 1000 / scheduled for p, s in cpu.items()} if scheduled else {},
        memory_peak_bytes=outcome.peak_rss,
        invariant_violations=violations[:100],
        warnings=case_warnings(duration, None, outcome.chaos, failed=outcome.failure is not None),
        chaos=ChaosFigures.model_validate(outcome.chaos) if outcome.chaos else None,
        over_committed=over_committed(cluster),
        restarts=outcome.restarts or None,
        scheduler_memory=outcome.scheduler_memory,
    )


# --- the server's ceiling ------------------------------------------------------------


def ceiling(client: KubeClient, pods: int = CEILING_PODS) -> float:
    """The server's ceiling for what optimist writes per pod: its binding and its
    Scheduled event, from 16 threads, nothing else (no watch, no decision). Pods per
    second. It works in a namespace and on a node of its own, removed after."""
    namespace, node = "optimist-ceiling", "optimist-ceiling"
    client.request("POST", "/api/v1/namespaces", body={"metadata": {"name": namespace}})
    allocatable = {"cpu": "1k", "pods": "1M"}
    client.request(
        "POST",
        "/api/v1/nodes",
        body={"metadata": {"name": node}, "status": {"allocatable": allocatable}},
    )
    pods_path = f"/api/v1/namespaces/{namespace}/pods"

    def make(i: int) -> None:
        pod = {"metadata": {"name": f"p{i}"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
        client.request("POST", pods_path, body=pod)

    def bind(i: int) -> None:
        null_scheduler.place(client, namespace, f"p{i}", node, "ceiling")

    try:
        with ThreadPoolExecutor(CEILING_THREADS) as pool:
            list(pool.map(make, range(pods)))
            started = time.monotonic()
            list(pool.map(bind, range(pods)))
            took = time.monotonic() - started
    finally:
        remove_namespaces(client, [namespace])
        client.request("DELETE", f"/api/v1/nodes/{node}")
    return pods / took


# --- the whole run -------------------------------------------------------------------


def run_apiserver_bench(
    bench: ApiBench,
    plan: Plan,
    progress: Callable[[str], Callable[[int, int], None]],
    keep: Keep | None = None,
) -> ApiBenchReport:
    """Every workload with every scheduler, `bench.rounds` times, alternating which
    goes first; `progress(label)` gives the callback for one run's progress, and `keep`
    is handed each run's cluster as the server held it at the end."""
    runs: list[ApiRun] = []
    ceilings: list[float] = []
    for round_ in range(bench.rounds):
        if bench.ceiling_pods:
            with api_server(bench.kubeconfig, version=bench.kube_version) as server:
                ceilings.append(ceiling(server.client, bench.ceiling_pods))
        order = bench.schedulers if round_ % 2 == 0 else bench.schedulers[::-1]
        for name, stretch in stretches(bench, plan, order):
            done = 0
            try:
                for record in run_stretch(bench, name, stretch, round_, progress, keep):
                    runs.append(record)
                    done += 1
            except (ApiBenchError, ControlPlaneError, ApiError, SchedulerExited) as e:
                runs += [_failed(run, name, round_, str(e)) for run in stretch[done:]]
    limit = (
        Ceiling(pods=bench.ceiling_pods, runs=ceilings, median=statistics.median(ceilings))
        if ceilings
        else None
    )
    cases = compare(runs, limit.median if limit else None)
    return ApiBenchReport(
        cluster="apiserver",
        kubernetes=bench.kube_version,
        schedulers=list(bench.schedulers),
        rounds=bench.rounds,
        shards=bench.shards,
        ceiling_pods_per_s=limit,
        cases=cases,
        runs=runs,
        errors=[r.error for r in runs if r.error],
        invariant_violations=[v for r in runs for v in r.invariant_violations],
        machine=Machine.model_validate(provenance.machine()),
    )


def _failed(run: CaseWorkload, name: str, round_: int, error: str) -> ApiRunNotRun:
    return ApiRunNotRun(
        name=run.name,
        scheduler=name,
        round=round_,
        error=f"case {run.name}: {error}",
        invariant_violations=[],
        warnings=[],
    )


def compare(runs: list[ApiRun], ceiling_median: float | None) -> list[ApiCaseComparison]:
    """Per workload and scheduler, the medians over the rounds; kube-scheduler's
    pods/s beside optimist's as a ratio, and optimist's as a share of the ceiling."""
    out = []
    for name in dict.fromkeys(r.name for r in runs):
        per: dict[str, SchedulerFigures] = {}
        for sched in dict.fromkeys(r.scheduler for r in runs if r.name == name):
            mine = [r for r in runs if r.name == name and r.scheduler == sched]
            good = [r for r in mine if isinstance(r, ApiRunReport)]
            if good:
                per[sched] = scheduler_figures(good, [r.error for r in mine if r.error])
        ours, theirs = per.get("optimist"), per.get("kube-scheduler")
        ratio = share = None
        if ours is not None and theirs is not None and theirs.pods_per_s:
            ratio = ours.pods_per_s / theirs.pods_per_s
        if ours is not None and ceiling_median:
            share = ours.pods_per_s / ceiling_median
        out.append(
            ApiCaseComparison(name=name, schedulers=per, ratio=ratio, share_of_ceiling=share)
        )
    return out


def scheduler_figures(good: list[ApiRunReport], errors: list[str]) -> SchedulerFigures:
    """One scheduler's figures on one workload over the rounds it measured: medians, and
    the largest peak memory."""
    averages = [r.throughput_pods_per_s.average for r in good]
    latency = _stage_medians(good, "scheduled") or (0.0, 0.0)
    ready = _stage_medians(good, "ready") or (None, None)
    return SchedulerFigures(
        pods_per_s=_median(averages),
        pods_per_s_runs=averages,
        cpu_s_per_1000_pods={
            p: _median(r.cpu_s_per_1000_pods.get(p, 0.0) for r in good)
            for p in good[0].cpu_s_per_1000_pods
        },
        memory_peak_bytes={
            p: max(r.memory_peak_bytes.get(p, 0) for r in good) for p in good[0].memory_peak_bytes
        },
        latency_p50_s=latency[0],
        latency_p99_s=latency[1],
        ready_p50_s=ready[0],
        ready_p99_s=ready[1],
        **_over_committed(good),
        errors=errors,
        restarts=_restart_medians(good),
    )


def _restart_medians(runs: list[ApiRunReport]) -> list[Restarted] | None:
    """Each restart of the case in order, from the kill to the first binding the median
    over `runs` (None where a run bound nothing after it)."""
    if not runs[0].restarts:
        return None
    medians = []
    for i, first in enumerate(runs[0].restarts):
        times = [r.restarts[i].first_binding_s if r.restarts else None for r in runs]
        known = [t for t in times if t is not None]
        median = _median(known) if len(known) == len(runs) else None
        medians.append(Restarted(failover=first.failover, first_binding_s=median))
    return medians


def _over_committed(runs: list[ApiRunReport]) -> dict[str, float]:
    """The medians over `runs` of the nodes over-committed and the pods kubelets would
    reject, where every run counted them."""
    counted = [r.over_committed for r in runs if r.over_committed is not None]
    if len(counted) < len(runs):
        return {}
    return {
        "over_committed_nodes": _median(c.nodes for c in counted),
        "kubelet_rejections": _median(sum(c.rejected.values()) for c in counted),
    }


def _stage_medians(runs: list[ApiRunReport], stage: str) -> tuple[float, float] | None:
    """The medians over `runs` of created -> `stage`'s p50 and p99, where every run
    reached it (Ready: on a living cluster only)."""
    figures = [r.latency_s.get(f"created_to_{stage}") for r in runs]
    p50 = [f.p50 for f in figures if f is not None and f.p50 is not None]
    p99 = [f.p99 for f in figures if f is not None and f.p99 is not None]
    if len(p50) < len(runs) or len(p99) < len(runs):
        return None  # a run without the stage, or none of its pods reached it
    return _median(p50), _median(p99)


def _median(values: Iterable[float]) -> float:
    numbers = list(values)
    return float(statistics.median(numbers)) if numbers else 0.0
