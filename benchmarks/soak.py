"""A soak: steady arrivals at half the measured peak rate, with churn, for a long while.

    .venv/bin/python -m benchmarks.soak [--duration 600] [--nodes 1000] [--report soak.json]

First a burst of pods measures the peak rate on this machine (or `--rate`
gives the arrival rate). Then pods arrive at half of it, evenly, and each is
deleted `--lifetime` seconds after it was created, so the cluster holds a
steady number of them while optimist keeps binding. Every `--window`
seconds: resident memory of each role (the driver with the simulated
cluster in it, the shards, Redis) and the created -> bound latency of the
pods bound in that window. The simulated cluster keeps nothing of deleted
pods (`keep_history=False`), so that what grows is optimist's. The report
gives each role's memory slope (MiB per minute, least squares over the
windows after the first) and the P99
latency of the first and the last windows and its slope. The invariant
checker runs at the end. The tests run 30 seconds of it, as a smoke.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections import deque
from pathlib import Path
from typing import Any

from benchmarks.cases import template
from benchmarks.report.instruments import PeakMemory
from optimist.loop import SchedulingLoop
from optimist.offline.invariants import check_invariants
from optimist.offline.simulator import SimulatedCluster, load_template
from optimist.runtime import Platform
from optimist.settings import Settings

MIB = 1024 * 1024
STEP_S = 0.005


class Soak:
    def __init__(self, loop: SchedulingLoop, cluster: SimulatedCluster, memory: PeakMemory):
        self.loop, self.cluster, self.memory = loop, cluster, memory
        self.pod = load_template(template("pod-default.yaml"))
        self.created: dict[str, float] = {}
        self.latencies: list[float] = []  # of the pods bound in the current window
        self.gc_pauses: list[float] = []  # the driver's full collections in the window
        self._gc_started = 0.0
        loop.on_bound = self._bound
        gc.callbacks.append(self._gc)

    def _gc(self, phase: str, info: dict[str, int]) -> None:
        if info["generation"] == 2:
            if phase == "start":
                self._gc_started = time.perf_counter()
            else:
                self.gc_pauses.append(time.perf_counter() - self._gc_started)

    def _bound(self, keys: list[str]) -> None:
        now = time.perf_counter()
        self.latencies.extend(now - self.created[k] for k in keys if k in self.created)

    def _make(self, count: int) -> list[str]:
        now = time.perf_counter()
        keys = self.cluster.create_pods(self.pod, count)
        for key in keys:
            self.created[key] = now
        return keys

    def peak(self, burst: int) -> float:
        """Pods per second for a burst made at once, from creation to the last binding;
        the burst is deleted again before the soak starts."""
        started = time.perf_counter()
        self._make(burst)
        self.loop.run_until_settled()
        rate = burst / (time.perf_counter() - started)
        self.cluster.delete_pods(list(self.created))
        self.created.clear()
        self.loop.run_until_settled()
        return rate

    def run(
        self, rate: float, duration_s: float, lifetime_s: float, window_s: float
    ) -> list[dict[str, Any]]:
        """Arrivals at `rate` for `duration_s`; one row per window."""
        rows: list[dict[str, Any]] = []
        living: deque[tuple[float, str]] = deque()
        started = time.perf_counter()
        made = 0
        window_end = started + window_s
        self.latencies.clear()
        while (now := time.perf_counter()) < started + duration_s:
            due = int((now - started) * rate) - made
            if due > 0:
                living.extend((now, k) for k in self._make(due))
                made += due
            gone = []
            while living and living[0][0] <= now - lifetime_s:
                gone.append(living.popleft()[1])
            if gone:
                self.cluster.delete_pods(gone)
                for key in gone:
                    self.created.pop(key, None)
            self.loop.step(STEP_S)
            if now >= window_end:
                rows.append(self._row(now - started))
                window_end += window_s
        self.loop.run_until_settled()
        return rows

    def _row(self, at_s: float) -> dict[str, Any]:
        latencies, self.latencies = sorted(self.latencies), []
        pauses, self.gc_pauses = self.gc_pauses, []
        rss = self.memory.current()
        return {
            "at_s": round(at_s, 1),
            "bound": len(latencies),
            "p50_s": _quantile(latencies, 0.50),
            "p99_s": _quantile(latencies, 0.99),
            "rss_mib": {role: round(b / MIB, 1) for role, b in rss.items()},
            "gc_full_pause_max_s": max(pauses, default=0.0),
            "pods_living": len(self.cluster.bindings),
        }


def _quantile(values: list[float], q: float) -> float | None:
    return values[min(int(q * len(values)), len(values) - 1)] if values else None


def slope(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of ys over xs, per unit of xs (None for fewer than 2 points)."""
    if len(xs) < 2 or len(set(xs)) < 2:
        return None
    return statistics.linear_regression(xs, ys).slope


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Slopes over the windows after the first (the first warms up)."""
    steady = rows[1:] or rows
    minutes = [r["at_s"] / 60 for r in steady]
    roles = steady[0]["rss_mib"] if steady else {}
    timed = [r for r in steady if r["p99_s"] is not None]
    return {
        "memory_slope_mib_per_min": {
            role: slope(minutes, [r["rss_mib"][role] for r in steady]) for role in roles
        },
        "p99_first_s": timed[0]["p99_s"] if timed else None,
        "p99_last_s": timed[-1]["p99_s"] if timed else None,
        "p99_slope_s_per_min": slope([r["at_s"] / 60 for r in timed], [r["p99_s"] for r in timed]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of arrivals")
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--rate", type=float, help="pods/s to arrive (default: half the peak)")
    parser.add_argument("--burst", type=int, default=5000, help="pods that measure the peak")
    parser.add_argument("--lifetime", type=float, default=5.0, help="seconds a pod lives")
    parser.add_argument("--window", type=float, default=10.0, help="seconds per sample")
    parser.add_argument("--report", type=Path, help="write the JSON report here")
    args = parser.parse_args()
    settings = Settings(shards=args.shards)
    cluster = SimulatedCluster(settings.scheduler_names, keep_history=False)
    cluster.create_nodes(load_template(template("node-default.yaml")), args.nodes)
    with Platform(settings) as platform:
        local = [int(i["pid"]) for i in platform.shard_info]
        loop = SchedulingLoop(platform, cluster)
        soak = Soak(loop, cluster, PeakMemory(local, platform.store.client))
        peak = soak.peak(args.burst) if args.rate is None else None
        rate = args.rate if args.rate is not None else peak / 2  # type: ignore[operator]
        print(f"peak {peak or 0:.0f} pods/s; arrivals at {rate:.0f} pods/s for {args.duration:g} s")
        rows = soak.run(rate, args.duration, args.lifetime, args.window)
        violations = check_invariants(cluster, loop.dispatcher.unschedulable(), platform.store)
    report = {
        "peak_pods_per_s": peak,
        "rate_pods_per_s": rate,
        "duration_s": args.duration,
        "nodes": args.nodes,
        "shards": args.shards,
        "lifetime_s": args.lifetime,
        "windows": rows,
        **summary(rows),
        "invariant_violations": violations[:100],
    }
    for row in rows:
        rss = " ".join(f"{role} {mib:.0f}" for role, mib in row["rss_mib"].items())
        p99 = "-" if row["p99_s"] is None else f"{row['p99_s']:.3f}"
        pause = row["gc_full_pause_max_s"]
        print(
            f"{row['at_s']:>7.1f} s  bound {row['bound']:>6}  p99 {p99} s  "
            f"full GC pause max {pause:.3f} s  RSS MiB: {rss}"
        )
    slopes = report["memory_slope_mib_per_min"]
    print(
        "memory slope, MiB/min: "
        + ", ".join(f"{r} {s:+.2f}" for r, s in slopes.items() if s is not None)
    )
    print(f"p99 first / last: {report['p99_first_s']} / {report['p99_last_s']} s")
    print(f"invariant violations: {len(violations)}")
    if args.report:
        args.report.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
