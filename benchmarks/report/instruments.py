"""Benchmark figures: throughput as scheduler_perf samples it, and what a run must record.

Throughput is pods bound per second, sampled over one-second windows of the
measured phase; the average is every bound pod over the whole phase. Pods
that ended unschedulable or pending stay in the counts and are never dropped.
Latencies are summarised as percentiles with a histogram; memory is the peak
of resident set sizes sampled once a second.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from functools import partial
from typing import Any, Protocol, cast

import numpy as np
import psutil

from benchmarks.report.api_report import NULL_SCHEDULER, ApiCaseComparison, SchedulerFigures
from cluster.redis_server import connect


def window_samples(
    bound_at: list[float], start: float, end: float
) -> tuple[list[int], list[float]]:
    """Pods bound in each one-second window of [start, end], and the rates to take percentiles of.

    The last window is usually partial. Its count stays as it is; for the
    rates it is folded into the window before it (one rate over the real
    length of both), so that a few pods in a sliver of a second cannot make a
    rate far above anything sustained. Alone, it is its count over its length.
    """
    duration = max(end - start, 1e-9)
    windows = max(int(np.ceil(duration)), 1)
    times = np.asarray(bound_at, dtype=float) - start
    times = times[(times >= 0) & (times <= duration)]
    counts = np.bincount(np.minimum(times.astype(np.int64), windows - 1), minlength=windows)
    rates = [float(c) for c in counts]
    last = duration - (windows - 1)
    if windows > 1 and last < 1:
        rates[-2:] = [float(counts[-2] + counts[-1]) / (1 + last)]
    elif last > 0:
        rates[-1] = float(counts[-1]) / last
    return counts.tolist(), rates


class Phase(Protocol):
    start: float
    end: float
    pods: list[str]


def phase_samples(
    windows: Iterable[Phase], bound_at: Mapping[str, float]
) -> tuple[list[int], list[float], int]:
    """Over measured phases: the pods bound in each second, the rates to take
    percentiles of, and the pods bound within their phase."""
    samples: list[int] = []
    rates: list[float] = []
    scheduled = 0
    for w in windows:
        times = [bound_at[k] for k in w.pods if bound_at.get(k, w.end + 1) <= w.end]
        counts, window_rates = window_samples(times, w.start, w.end)
        samples += counts
        rates += window_rates
        scheduled += len(times)
    return samples, rates, scheduled


def throughput(bound: int, duration: float, rates: list[float]) -> dict[str, float]:
    """Average over the phase (every pod bound / its length), and p50/p90/p99 of the samples."""
    if not bound or not rates:
        return {"average": 0.0, "p50": 0.0, "p90": 0.0, "p99": 0.0}
    p50, p90, p99 = np.percentile(rates, [50, 90, 99])
    return {
        "average": bound / max(duration, 1e-9),
        "p50": float(p50),
        "p90": float(p90),
        "p99": float(p99),
    }


# Upper bounds (s) of the latency histogram: 1 ms doubling to about 33 s, as the
# scheduler's own duration metrics bucket them, and everything beyond.
LATENCY_BUCKETS_S = [0.001 * 2**i for i in range(16)]


def latency(values: list[float]) -> dict[str, Any]:
    """Count, mean, p50/p90/p99 and max of durations in seconds, with their histogram."""
    if not values:
        return {"count": 0}
    a = np.asarray(values, dtype=float)
    p50, p90, p99 = np.percentile(a, [50, 90, 99])
    counts = np.bincount(
        np.searchsorted(LATENCY_BUCKETS_S, a), minlength=len(LATENCY_BUCKETS_S) + 1
    )
    return {
        "count": len(values),
        "mean": float(a.mean()),
        "p50": float(p50),
        "p90": float(p90),
        "p99": float(p99),
        "max": float(a.max()),
        "histogram": {"le_s": [*LATENCY_BUCKETS_S, "+Inf"], "counts": counts.tolist()},
    }


def stage_latencies(
    created_at: Mapping[str, float], stages: Mapping[str, Mapping[str, float]], pods: list[str]
) -> dict[str, dict[str, Any]]:
    """`latency` of each stage a pod went through, from its creation and from the stage
    before: `stages` in order (first seen bound, Running, Ready), each pod -> when it
    was seen there. A stage no pod reached (Running, without kubelets) is left out."""
    out: dict[str, dict[str, Any]] = {}
    before = "created"
    for stage, seen in stages.items():
        reached = [k for k in pods if k in seen]
        if not reached:
            break
        out[f"created_to_{stage}"] = latency([seen[k] - created_at[k] for k in reached])
        if before != "created":
            earlier = stages[before]
            gaps = [seen[k] - earlier[k] for k in reached if k in earlier]
            out[f"{before}_to_{stage}"] = latency(gaps)
        before = stage
    if not out:
        out["created_to_scheduled"] = latency([])
    return out


class RedisServers:
    """The node store's Redis servers read as one, for the bench's readings: INFO's
    numbers summed over them (one server: its own)."""

    def __init__(self, urls: list[str]) -> None:
        self.clients = [connect(url) for url in urls]
        self._commands = [0] * len(self.clients)  # each server's last reading
        self._before = [0] * len(self.clients)  # what it had run before a restart

    def commands(self) -> int:
        """Commands the servers have run, as INFO commandstats counts them: every
        client's (the shards' syncs, the binder's commits, the driver's), a command a
        Lua script runs as well as the script's call, each of a pipeline's; what Redis
        worked through, where `SchedulingLoop.round_trips` counts the calls made. INFO
        is left out: only the bench calls it. A server restarted (chaos) counts from 0
        again: what it ran before is added, so a phase's difference is never negative."""
        for i, client in enumerate(self.clients):
            stats = client.info("commandstats")
            now = sum(int(v["calls"]) for k, v in stats.items() if k != "cmdstat_info")
            if now < self._commands[i]:
                self._before[i] += self._commands[i]
            self._commands[i] = now
        return sum(self._before) + sum(self._commands)

    def info(self, section: str) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        for client in self.clients:
            for key, value in client.info(section).items():
                if isinstance(value, dict):  # commandstats: per command, its counts
                    into = merged.setdefault(key, {})
                    for k, v in value.items():
                        into[k] = into.get(k, 0) + v
                elif isinstance(value, int | float) and not isinstance(value, bool):
                    merged[key] = merged.get(key, 0) + value
                else:
                    merged.setdefault(key, value)
        return merged


class PeakMemory:
    """Peak resident memory of each role, sampled: the driver (dispatcher and binder), the
    shard processes together, and Redis (as it reports its own RSS)."""

    def __init__(self, shard_pids: list[int], redis: Any) -> None:
        self.driver = psutil.Process()
        self.shards = [p for p in map(_process, shard_pids) if p is not None]
        self.redis = redis
        self.peak = {"driver": 0, "shards": 0, "redis": 0}

    def current(self) -> dict[str, int]:
        """Each role's resident memory now (a shard that died counts nothing)."""
        shards = 0
        for process in self.shards:
            try:
                shards += process.memory_info().rss
            except psutil.Error:
                continue
        return {
            "driver": self.driver.memory_info().rss,
            "shards": shards,
            "redis": int(self.redis.info("memory").get("used_memory_rss", 0)),
        }

    def sample(self) -> None:
        for role, rss in self.current().items():
            self.peak[role] = max(self.peak[role], rss)

    def peaks(self) -> dict[str, int]:
        return dict(self.peak)


class CpuClock:
    """CPU seconds used so far by each role: the driver (dispatcher, binder, the simulated
    cluster), the shard processes on this machine together, Redis (as it reports its
    own), and the whole machine, whose rest is Ray's daemons and anything else running.
    A phase's figures are the differences of two readings, so each role's clock only
    goes forward: a shard process killed (chaos) keeps what it had used, and a Redis
    restarted, whose own count starts again at 0, adds to what it had. A shard's new
    process after a restart is not one of the processes read: its CPU is "other"."""

    def __init__(self, shard_pids: list[int], redis: Any) -> None:
        self.shards = [p for p in map(_process, shard_pids) if p is not None]
        self._shard_s = [0.0] * len(self.shards)  # each process's last reading
        self.redis = redis
        self._redis_s = 0.0  # the last reading of Redis's own count
        self._redis_before = 0.0  # what the Redis servers restarted since had used

    def read(self) -> dict[str, float]:
        for i, process in enumerate(self.shards):
            try:
                self._shard_s[i] = _busy(process.cpu_times())
            except psutil.Error:
                continue  # gone: what it used stays counted
        cpu = self.redis.info("cpu")
        redis_s = float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])
        if redis_s < self._redis_s:
            self._redis_before += self._redis_s
        self._redis_s = redis_s
        machine = psutil.cpu_times()
        return {
            # this process's own clock, in nanoseconds: /proc counts in 10 ms ticks,
            # too coarse for a short phase (a tiny workload's could read 0)
            "driver": time.process_time(),
            "shards": sum(self._shard_s),
            "redis": self._redis_before + redis_s,
            "machine": sum(machine) - machine.idle - getattr(machine, "iowait", 0.0),
        }


class ProcessTree:
    """A process read with its descendants as one, as a peer scheduler is measured
    whole: `optimist run` with its Ray daemons, shards and Redis; kube-scheduler
    alone. CPU seconds so far (a descendant that has exited keeps what it was last
    seen using) and resident memory now (the sum of their RSS: pages two of them
    share count twice). Given a function for its roots' PIDs, the roots are whichever
    processes have them now: a server the chaos bench restarts is read on, its new
    process adding to what the one before used, and the replicas of a scheduler
    (one leading, one waiting) are read together."""

    def __init__(
        self, pid: int | Callable[[], Collection[int]], *, descendants: bool = True
    ) -> None:
        self._pids = pid if callable(pid) else lambda: (pid,)
        self.descendants = descendants
        # by PID; the first roots read here, so that one not there fails now
        self._roots = {p: psutil.Process(p) for p in self._pids()}
        self._cpu: dict[tuple[int, float], float] = {}  # (pid, start time) -> busy s

    def _root(self, pid: int) -> psutil.Process:
        if (root := self._roots.get(pid)) is None:
            root = self._roots[pid] = psutil.Process(pid)
        return root

    def _members(self) -> list[psutil.Process]:
        members = []
        for pid in self._pids():
            try:
                root = self._root(pid)
                below = root.children(recursive=True) if self.descendants else []
            except psutil.Error:
                continue
            members += [root, *below]
        return members

    def cpu_s(self) -> float:
        for process in self._members():
            try:
                self._cpu[(process.pid, process.create_time())] = _busy(process.cpu_times())
            except psutil.Error:
                continue  # gone: what it used stays counted
        return sum(self._cpu.values())

    def alive(self) -> bool:
        """Whether a root still runs (an exited child not yet reaped is a zombie: it runs
        no more)."""
        for pid in self._pids():
            try:
                if self._root(pid).status() != psutil.STATUS_ZOMBIE:
                    return True
            except psutil.Error:
                continue
        return False

    def rss_by_part(self) -> dict[str, int]:
        """Resident memory now, by part (`part_of`)."""
        parts: dict[str, int] = {}
        roots = set(self._pids())
        for process in self._members():
            try:
                part = part_of(process, roots)
                parts[part] = parts.get(part, 0) + process.memory_info().rss
            except psutil.Error:
                continue
        return parts


def part_of(process: psutil.Process, roots: Collection[int]) -> str:
    """What a process of a scheduler's tree is: "main" (a root: optimist's control
    process, or kube-scheduler), optimist's "shards" and its "redis", or "ray": Ray's
    own daemons and agents, and with them optimist's watcher that stops them should the
    control process die (`optimist.lifetime`, about 16 MB)."""
    if process.pid in roots:
        return "main"
    command = " ".join(process.cmdline())
    if "ShardActor" in command:
        return "shards"
    return "redis" if "redis-server" in command else "ray"


SAMPLE_S = 1.0  # memory is sampled once a second


class MemorySampler:
    """Each process tree's resident memory once a second, in a thread: the peak of the
    whole tree and of each of its parts (`part_of`), and the parts once more at the end,
    when what the run made is all held and nothing is under way (the steady state)."""

    def __init__(self, meters: Mapping[str, ProcessTree]) -> None:
        self.meters = meters
        self.peak = {name: 0 for name in meters}
        self.peak_parts: dict[str, dict[str, int]] = {name: {} for name in meters}
        self.end_parts: dict[str, dict[str, int]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memory", daemon=True)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self.end_parts = self._sample()

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self._sample()

    def _sample(self) -> dict[str, dict[str, int]]:
        """Each tree by part now, taken into the peaks."""
        sampled = {}
        for name, meter in self.meters.items():
            parts = sampled[name] = meter.rss_by_part()
            self.peak[name] = max(self.peak[name], sum(parts.values()))
            peaks = self.peak_parts[name]
            for part, rss in parts.items():
                peaks[part] = max(peaks.get(part, 0), rss)
        return sampled


def since_process_start(perf_counter: float) -> float:
    """Seconds from this process's start to a `time.perf_counter()` reading."""
    wall = time.time() - (time.perf_counter() - perf_counter)
    return wall - cast(float, psutil.Process().create_time())  # psutil is untyped


def _process(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.NoSuchProcess:
        return None


def _busy(times: Any) -> float:
    return float(times.user + times.system)


PROCESSES = ("scheduler", "kube-apiserver", "etcd", "client")  # the API bench's trees
LIVING_PROCESSES = ("kube-controller-manager", "kwok")  # and a living cluster's


def _cpu_cell(process: str, figures: SchedulerFigures) -> str:
    """A process this bench did not start (a cluster given by --kubeconfig) is not
    measured: "n/a", never a 0 that reads as free."""
    seconds = figures.cpu_s_per_1000_pods.get(process)
    return "n/a" if seconds is None else f"{seconds:.2f}"


def comparison_rows(entry: ApiCaseComparison, ceiling: float | None) -> list[tuple[str, list[str]]]:
    """One workload of the API bench as rows of (label, a cell per scheduler; the ratio
    and the share of the ceiling in the first): the terminal and the HTML page show
    these same rows."""
    per = list(entry.schedulers.values())
    blank = [""] * (len(per) - 1)

    def each(cell: Callable[[SchedulerFigures], str]) -> list[str]:
        return [cell(figures) for figures in per]

    rows = [("pods/s (median)", each(lambda f: f"{f.pods_per_s:,.0f}"))]
    if entry.ratio is not None:
        rows.append(("optimist / kube-scheduler", [f"{entry.ratio:.2f}x", *blank]))
    if entry.share_of_ceiling is not None and ceiling is not None:
        label = f"of the server's ceiling ({ceiling:,.0f} pods/s)"
        rows.append((label, [f"{entry.share_of_ceiling:.0%}", *blank]))
    null = entry.schedulers.get(NULL_SCHEDULER)
    if null is not None and null.pods_per_s:
        limit = null.pods_per_s
        rows.append(
            ("of the null scheduler's pods/s", each(lambda f: f"{f.pods_per_s / limit:.0%}"))
        )
    living = [p for p in LIVING_PROCESSES if any(p in f.cpu_s_per_1000_pods for f in per)]
    for process in (*PROCESSES, *living):
        rows.append((f"CPU s per 1,000 pods: {process}", each(partial(_cpu_cell, process))))
    rows.append(
        (
            "peak RSS of the scheduler, MiB",
            each(lambda f: f"{f.memory_peak_bytes.get('scheduler', 0) / 2**20:,.0f}"),
        )
    )
    # created -> scheduled always; -> Ready where the pods turned Ready (a living cluster)
    stages: list[tuple[str, Callable[[SchedulerFigures], float | None]]] = [
        ("scheduled p50", lambda f: f.latency_p50_s),
        ("scheduled p99", lambda f: f.latency_p99_s),
    ]
    if all(f.ready_p50_s is not None for f in per):
        stages += [("Ready p50", lambda f: f.ready_p50_s), ("Ready p99", lambda f: f.ready_p99_s)]
    for stage, seconds in stages:
        rows.append((f"created -> {stage}, ms", each(partial(_ms, seconds))))
    if all(f.over_committed_nodes is not None for f in per):
        rows.append(("nodes over-committed", each(lambda f: f"{f.over_committed_nodes:g}")))
        rows.append(("pods a kubelet would reject", each(lambda f: f"{f.kubelet_rejections:g}")))
    restarts = next((f.restarts for f in per if f.restarts), [])
    for i, restart in enumerate(restarts):
        how = "leader killed" if restart.failover else "cold restart"
        rows.append((f"{how} -> first binding, s", each(partial(_restart_cell, i))))
    return rows


def _restart_cell(i: int, figures: SchedulerFigures) -> str:
    restarts = figures.restarts or []
    seconds = restarts[i].first_binding_s if i < len(restarts) else None
    return "" if seconds is None else f"{seconds:.2f}"


def _ms(seconds: Callable[[SchedulerFigures], float | None], figures: SchedulerFigures) -> str:
    return f"{(seconds(figures) or 0.0) * 1e3:,.0f}"


def report_cases(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Every workload run a simulated bench's result file holds, in the order run: a
    sweep's runs, a report's cases, or the one run a single-case report is."""
    if "sweep" in report:
        return [c for run in report["sweep"]["runs"] for c in report_cases(run["report"])]
    if report.get("cases"):
        return list(report["cases"])
    return [report]
